import XCTest
@testable import ProxyEngine

/// The first bytes of a connection on a reverse listener with `h2c`: HTTP/2's preface, a
/// prefix of it still undecided, or HTTP/1.1.
final class HTTP2PriorKnowledgeTests: XCTestCase {
    private func classify(_ text: String) -> HTTP2PriorKnowledge {
        Array(text.utf8).withUnsafeBytes { HTTP2PriorKnowledge.classify($0) }
    }

    func testThePrefaceIsHTTP2AndItsPrefixesWait() {
        let preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        XCTAssertEqual(classify(preface), .http2)
        // A SETTINGS frame may follow in the same read.
        XCTAssertEqual(classify(preface + "\0\0\0\u{4}\0\0\0\0\0"), .http2)
        let bytes = Array(preface.utf8)
        for n in 1..<bytes.count {
            XCTAssertEqual(bytes[..<n].withUnsafeBytes { HTTP2PriorKnowledge.classify($0) }, .needMore, "prefix \(n)")
        }
        XCTAssertEqual(classify(""), .needMore)
    }

    func testAnythingElseIsHTTP11() {
        XCTAssertEqual(classify("GET / HTTP/1.1\r\n"), .http1)
        XCTAssertEqual(classify("P"), .needMore)
        XCTAssertEqual(classify("POST /x HTTP/1.1\r\n"), .http1, "decided at the first byte that differs")
        XCTAssertEqual(classify("PRI * HTTP/1.1\r\n"), .http1)
        XCTAssertEqual(classify("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n"), .http1, "a preface wrong in its last part")
        XCTAssertEqual(classify("\u{16}\u{3}\u{1}"), .http1, "TLS is not HTTP/2 prior knowledge")
    }
}
