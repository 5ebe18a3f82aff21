import XCTest
@testable import LogTools

/// URL splitting on bytes: the same parts Character-wise splitting gave.
final class URLPartsTests: XCTestCase {
    func testPartsOfAbsoluteAndOddURLs() {
        let cases: [(String, String, String, String, String?, String)] = [
            // url, scheme, authority, path, query, host
            ("http://api.local:8080/v1/items?x=1", "http", "api.local:8080", "/v1/items", "x=1", "api.local"),
            ("https://User@[::1]:8443/a/b#frag?no", "https", "User@[::1]:8443", "/a/b", nil, "::1"),
            ("http://Example.COM?q=a://b", "http", "Example.COM", "/", "q=a://b", "example.com"),
            ("http://h/é/ñ?ü=1#x", "http", "h", "/é/ñ", "ü=1", "h"),
            ("/relative/only?x", "", "", "/relative/only", "x", ""),
            ("mailto:a@b", "", "", "mailto:a@b", nil, ""),
            ("x:/y://z/p", "x:/y", "z", "/p", nil, "z"),
            ("http://h/e\u{301}/", "http", "h", "/e\u{301}/", nil, "h"),
            ("", "", "", "/", nil, ""),
            ("http://", "http", "", "/", nil, ""),
            ("http:", "", "", "http:", nil, ""),
        ]
        for (url, scheme, authority, path, query, host) in cases {
            let parts = URLParts(url)
            XCTAssertEqual(parts.scheme, scheme, url)
            XCTAssertEqual(parts.authority, authority, url)
            XCTAssertEqual(parts.path, path, url)
            XCTAssertEqual(parts.query, query, url)
            XCTAssertEqual(parts.host, host, url)
        }
    }
}
