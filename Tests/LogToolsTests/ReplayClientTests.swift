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

    func testOnlyPlainHTTPIsSent() {
        var https = request
        https.url = "https://api.local/v1"
        XCTAssertThrowsError(try ReplayClient(route: .direct).wireForm(https)) { error in
            XCTAssertTrue("\(error)".contains("only http://"), "\(error)")
        }
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
