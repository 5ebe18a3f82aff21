import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// Exchanges the origin fails: each is still captured, with the error code the
/// log record will carry, and the client gets the matching gateway answer.
final class UpstreamFailureTests: XCTestCase {
    private func failedExchange(path: String, authority: String, _ adjust: (inout EngineConfiguration) -> Void = { _ in },
                                file: StaticString = #filePath, line: UInt = #line) throws -> (status: String?, exchange: CapturedExchange?) {
        let proxy = try RunningEngine(adjust)
        let client = try RawClient(port: proxy.port)
        client.send("GET http://\(authority)\(path) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        let status = client.readResponses(1).first.map { String($0.head.prefix(12)) }
        return (status, proxy.sink.exchanges(1, file: file, line: line).first)
    }

    func testConnectionRefusedIsUpstreamConnectFailed() throws {
        let authority = "127.0.0.1:\(closedLoopbackPort())"
        let (status, x) = try failedExchange(path: "/x", authority: authority)
        XCTAssertEqual(status, "HTTP/1.1 502")
        XCTAssertEqual(x?.error?.code, .upstreamConnectFailed)
        XCTAssertNil(x?.response)
        XCTAssertEqual(x?.url, "http://\(authority)/x")
        XCTAssertNil(x?.clock.connected)
        XCTAssertNotNil(x?.clock.lastResponseByte, "the end of a failed exchange is still stamped")
    }

    func testSilentOriginIsUpstreamTimeout() throws {
        let origin = try origin()
        let (status, x) = try failedExchange(path: "/never?s=4", authority: origin.authority) { $0.upstreamReadTimeout = 1 }
        XCTAssertEqual(status, "HTTP/1.1 504")
        XCTAssertEqual(x?.error?.code, .upstreamTimeout)
        XCTAssertNil(x?.response)
        XCTAssertNotNil(x?.clock.requestSent, "the request went out before the origin fell silent")
        XCTAssertNil(x?.clock.firstResponseByte)
    }

    func testConflictingContentLengthsAreMalformedResponse() throws {
        let origin = try origin()
        let (status, x) = try failedExchange(path: "/malformed", authority: origin.authority)
        XCTAssertEqual(status, "HTTP/1.1 502")
        XCTAssertEqual(x?.error?.code, .malformedResponse)
        XCTAssertNil(x?.response, "a head that failed to parse is not reported as the response")
        XCTAssertNotNil(x?.clock.firstResponseByte)
    }

    func testResetMidBodyKeepsTheHeadAndThePartialBody() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/reset-mid-body")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let received = client.read()
        XCTAssertTrue(received.eof, "the client's transfer is cut")
        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.response?.status, 200)
        XCTAssertEqual(x.error?.code, .upstreamReset)
        XCTAssertLessThan(x.responseBody.totalBytes, 100_000)
        XCTAssertEqual(x.responseBody.bytes.count, Int(x.responseBody.totalBytes))
        // All that came was captured, yet it is not the whole body: the record must say so.
        XCTAssertTrue(x.responseBody.cutShort)
        XCTAssertTrue(x.responseBody.truncated)
        XCTAssertFalse(x.requestBody.cutShort, "a GET's empty body was complete")
    }
}
