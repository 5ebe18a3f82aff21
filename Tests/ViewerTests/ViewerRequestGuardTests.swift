import XCTest
@testable import Viewer

/// Who the viewer answers, from the head alone: the Host (DNS rebinding), the Origin, the token.
final class ViewerRequestGuardTests: XCTestCase {
    private let guardrail = ViewerRequestGuard(listenHost: "127.0.0.1", port: 8080, token: "secret-token")

    private func get(_ host: String?, origin: String? = nil, site: String? = nil) -> ViewerRequestGuard.Verdict {
        guardrail.check(method: "GET", host: host, origin: origin, secFetchSite: site, token: nil)
    }

    private func post(_ host: String? = "127.0.0.1:8080", origin: String?, token: String?) -> ViewerRequestGuard.Verdict {
        guardrail.check(method: "POST", host: host, origin: origin, secFetchSite: nil, token: token)
    }

    func testTheListenAddressLocalhostAndLoopbackLiteralsWithThePortAreAnswered() {
        for host in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "127.0.0.2:8080", "[::1]:8080"] {
            XCTAssertEqual(get(host), .allowed, host)
        }
    }

    func testAnyOtherHostIsMisdirected() {
        for host in ["evil.example:8080", "evil.example", "127.0.0.1:8081", "localhost", "127.0.0.1", "10.0.0.1:8080",
                     "[::2]:8080", "localhost.evil.example:8080", "127.0.0.1:8080:1", "[::1", ":8080", ""] {
            XCTAssertEqual(get(host), .misdirected, host)
        }
        XCTAssertEqual(get(nil), .misdirected, "no Host at all")
    }

    func testPort80MayBeLeftOut() {
        let onEighty = ViewerRequestGuard(listenHost: "127.0.0.1", port: 80, token: "t")
        XCTAssertEqual(onEighty.check(method: "GET", host: "localhost", origin: nil, secFetchSite: nil, token: nil), .allowed)
        XCTAssertEqual(onEighty.check(method: "GET", host: "localhost:80", origin: nil, secFetchSite: nil, token: nil), .allowed)
    }

    func testAForeignOriginOrSiteIsForbidden() {
        XCTAssertEqual(get("127.0.0.1:8080", origin: "http://127.0.0.1:8080"), .allowed)
        XCTAssertEqual(get("localhost:8080", origin: "http://localhost:8080"), .allowed)
        for origin in ["http://evil.example", "http://127.0.0.1:8081", "https://127.0.0.1:8080", "null", "http://localhost:8080"] {
            guard case .forbidden = get("127.0.0.1:8080", origin: origin) else { return XCTFail(origin) }
        }
        XCTAssertEqual(get("127.0.0.1:8080", site: "same-origin"), .allowed)
        XCTAssertEqual(get("127.0.0.1:8080", site: "none"), .allowed)
        guard case .forbidden = get("127.0.0.1:8080", site: "cross-site") else { return XCTFail("cross-site") }
        guard case .forbidden = get("127.0.0.1:8080", site: "same-site") else { return XCTFail("same-site") }
    }

    /// A link to a view followed from another site is a top-level navigation to the page: it
    /// is answered; the same site's fetches, frames, and navigations elsewhere are not.
    func testALinkFromAnotherSiteOpensThePageOnly() {
        func check(_ method: String, _ path: String, mode: String?, dest: String?) -> ViewerRequestGuard.Verdict {
            guardrail.check(method: method, host: "127.0.0.1:8080", origin: nil, secFetchSite: "cross-site", token: nil,
                            path: path, secFetchMode: mode, secFetchDest: dest)
        }
        XCTAssertEqual(check("GET", "/", mode: "navigate", dest: "document"), .allowed)
        XCTAssertEqual(check("GET", "/index.html", mode: "Navigate", dest: "Document"), .allowed)
        for (method, path, mode, dest) in [("GET", "/api/records", "navigate", "document"), ("GET", "/", "no-cors", "empty"),
                                           ("GET", "/", "navigate", "iframe"), ("POST", "/", "navigate", "document"),
                                           ("GET", "/", nil, nil), ("GET", "/viewer.js", "navigate", "document")] {
            guard case .forbidden = check(method, path, mode: mode, dest: dest) else { return XCTFail("\(method) \(path) \(String(describing: mode)) \(String(describing: dest))") }
        }
    }

    func testAPostNeedsTheTokenAndItsOwnOrigin() {
        XCTAssertEqual(post(origin: "http://127.0.0.1:8080", token: "secret-token"), .allowed)
        guard case .forbidden = post(origin: "http://127.0.0.1:8080", token: nil) else { return XCTFail("no token") }
        guard case .forbidden = post(origin: "http://127.0.0.1:8080", token: "secret-tokeN") else { return XCTFail("wrong token") }
        guard case .forbidden = post(origin: "http://127.0.0.1:8080", token: "secret-token-") else { return XCTFail("longer token") }
        guard case .forbidden = post(origin: nil, token: "secret-token") else { return XCTFail("no Origin") }
        guard case .forbidden = post(origin: "http://evil.example", token: "secret-token") else { return XCTFail("cross-origin") }
        XCTAssertEqual(post("evil.example:8080", origin: "http://evil.example:8080", token: "secret-token"), .misdirected)
    }

    func testFormAndPercentDecoding() {
        XCTAssertEqual(ViewerRequest.form("q=status%3E%3D500+host%3D*.a&limit=5&q=second"), ["q": "status>=500 host=*.a", "limit": "5"])
        XCTAssertEqual(ViewerRequest.percentDecoded("%E2%86%BB"), "↻")
        XCTAssertNil(ViewerRequest.percentDecoded("%zz"))
        XCTAssertNil(ViewerRequest.percentDecoded("%ff"), "not UTF-8")
    }

    /// A page request that may come from a link on another site holds its query: all but the
    /// browser's own word (none, same-origin), including no word at all.
    func testOnlyNoneAndSameOriginAreLinksFromHere() {
        for site in ["none", "same-origin", "None", "SAME-ORIGIN"] {
            XCTAssertFalse(ViewerRequestGuard.mayBeLinkedFromElsewhere(secFetchSite: site), site)
        }
        for site in ["cross-site", "same-site", "", "something-new"] {
            XCTAssertTrue(ViewerRequestGuard.mayBeLinkedFromElsewhere(secFetchSite: site), site)
        }
        XCTAssertTrue(ViewerRequestGuard.mayBeLinkedFromElsewhere(secFetchSite: nil))
    }
}
