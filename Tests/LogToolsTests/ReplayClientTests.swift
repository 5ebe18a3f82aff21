import XCTest
@testable import LogTools

/// What `tapwire replay` sends, without sockets.
final class ReplayClientTests: XCTestCase {
    let request = RecordedRequest(id: "0000018c2b1f4a1e-000002", method: "POST", url: "http://user@api.local:8080/v1/a?b=1",
                                  headers: [(name: "Content-Type", value: "application/json"), (name: "X-Trace", value: "1")],
                                  body: Array(#"{"a":1}"#.utf8))

    func testThroughTheProxyTheTargetIsAbsoluteAndTheRecordIsNamed() throws {
        let bytes = try ReplayClient(route: .proxy(host: "127.0.0.1", port: 8080)).wireForm(request)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "POST http://user@api.local:8080/v1/a?b=1 HTTP/1.1\r\nHost: api.local:8080\r\nContent-Type: application/json\r\n"
                       + "X-Trace: 1\r\nX-Tapwire-Replay-Of: 0000018c2b1f4a1e-000002\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}")
    }

    func testDirectlyTheTargetIsOriginFormWithoutTheReplayField() throws {
        let bytes = try ReplayClient(route: .direct).wireForm(request)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "POST /v1/a?b=1 HTTP/1.1\r\nHost: api.local:8080\r\nContent-Type: application/json\r\n"
                       + "X-Trace: 1\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}")
    }

    func testOnlyHTTPAndHTTPSAreSent() {
        var ftp = request
        ftp.url = "ftp://api.local/v1"
        XCTAssertThrowsError(try ReplayClient(route: .direct).wireForm(ftp)) { error in
            XCTAssertTrue("\(error)".contains("only http:// and https://"), "\(error)")
        }
    }

    /// Inside the CONNECT tunnel the proxy stands in for the origin: origin form, replay field kept.
    func testHTTPSThroughTheProxyIsOriginFormAndNamesTheRecord() throws {
        var https = request
        https.url = "https://api.local/v1/a?b=1"
        let bytes = try ReplayClient(route: .proxy(host: "127.0.0.1", port: 8080)).wireForm(https)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "POST /v1/a?b=1 HTTP/1.1\r\nHost: api.local\r\nContent-Type: application/json\r\n"
                       + "X-Trace: 1\r\nX-Tapwire-Replay-Of: 0000018c2b1f4a1e-000002\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}")
        let direct = try ReplayClient(route: .direct).wireForm(https)
        XCTAssertFalse(String(decoding: direct, as: UTF8.self).contains("X-Tapwire-Replay-Of"))
    }

    private func https(decrypting pattern: String) -> ReplayClient.HTTPS {
        ReplayClient.HTTPS(proxyCAFile: "/nonexistent/ca.pem", upstreamCAFile: nil, insecureUpstream: false,
                           proxyDecrypts: { $0 == pattern })
    }

    /// A host the proxy tunnels blind would carry the replay field to the origin, unrecorded.
    func testHTTPSThroughAProxyThatDoesNotDecryptTheHostIsRefused() throws {
        var secure = request
        secure.url = "https://api.local:8443/v1"
        let proxy = ReplayClient.Route.proxy(host: "127.0.0.1", port: 8080)
        let blind = ReplayClient(route: proxy, https: https(decrypting: "other.local"))
        let reason = try XCTUnwrap(blind.refusal(secure))
        XCTAssertTrue(reason.contains("does not decrypt api.local") && reason.contains("--direct"), reason)
        XCTAssertThrowsError(try blind.send(secure)) { XCTAssertEqual("\($0)", reason) }
        XCTAssertNil(ReplayClient(route: proxy, https: https(decrypting: "api.local")).refusal(secure))
        XCTAssertNil(ReplayClient(route: .direct, https: https(decrypting: "other.local")).refusal(secure),
                     "direct replays reach the origin whatever the proxy decrypts")
        XCTAssertNotNil(ReplayClient(route: proxy).refusal(secure), "no tls settings, no https")
        XCTAssertNil(blind.refusal(request), "plain http is never refused for this")
    }

    func testListenAddressesBecomeRoutes() {
        XCTAssertEqual(ReplayClient.proxyRoute("127.0.0.1:3128"), .proxy(host: "127.0.0.1", port: 3128))
        XCTAssertEqual(ReplayClient.proxyRoute("0.0.0.0:3128"), .proxy(host: "127.0.0.1", port: 3128))
        XCTAssertEqual(ReplayClient.proxyRoute("[::]:3128"), .proxy(host: "::1", port: 3128))
        XCTAssertEqual(ReplayClient.proxyRoute("[::1]:80"), .proxy(host: "::1", port: 80))
        XCTAssertNil(ReplayClient.proxyRoute("localhost"))
        XCTAssertNil(ReplayClient.proxyRoute("h:99999"))
    }
}
