import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// Bodies larger than the high-water mark: reading pauses and resumes on both
/// sides, nothing is lost, and the capture still counts every byte.
final class FlowControlTests: XCTestCase {
    func testLargeResponseToALateReaderArrivesWholeAndIsCountedWhole() throws {
        let origin = try origin()
        let size = 2_000_000
        let proxy = try RunningEngine { $0.highWaterBytes = 16 * 1024; $0.captureMaxBodyBytes = 100_000 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/big?size=\(size)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        // Not reading for a moment lets the client's buffer pass the high-water mark.
        usleep(200_000)
        let responses = client.readResponses(1, timeout: 30)
        XCTAssertEqual(responses.first?.body.count, size)
        XCTAssertTrue(responses.first?.body.allSatisfy { $0 == UInt8(ascii: "x") } ?? false)

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.responseBody.totalBytes, UInt64(size))
        XCTAssertEqual(x.responseBody.bytes.count, 100_000)
        XCTAssertTrue(x.responseBody.truncated)
        XCTAssertNil(x.error)
    }

    func testLargeUploadStreamsThroughAndIsCountedWhole() throws {
        let origin = try origin()
        let size = 1_500_000
        let proxy = try RunningEngine { $0.highWaterBytes = 16 * 1024; $0.captureMaxBodyBytes = 1000 }
        let client = try RawClient(port: proxy.port)
        let body = [UInt8](repeating: UInt8(ascii: "u"), count: size)
        let sender = Thread {
            client.send("POST \(origin.url("/sink")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: \(size)\r\n\r\n")
            client.send(body)
        }
        sender.start()
        let responses = client.readResponses(1, timeout: 30)
        XCTAssertEqual(responses.first.map { String(decoding: $0.body, as: UTF8.self) }, String(size), "the origin counted every byte")

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.requestBody.totalBytes, UInt64(size))
        XCTAssertEqual(x.requestBody.bytes, Array(body.prefix(1000)))
        XCTAssertNil(x.error)
    }
}

/// WebSocket upgrades become tunnels that carry the upgrade exchange with them.
final class WebSocketCaptureTests: XCTestCase {
    func testUpgradeBecomesATunnelWithItsUpgradeExchange() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/ws")) HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        let head = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\n") }
        XCTAssertTrue(String(decoding: head.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 101 "))
        client.send("ping-through-the-tunnel")
        let echoed = client.read { $0.count >= 23 }
        XCTAssertEqual(String(decoding: echoed.bytes, as: UTF8.self), "ping-through-the-tunnel")
        client.shutdownWrite()
        XCTAssertTrue(client.read().eof, "the origin ends when the client does")

        guard let t = proxy.sink.tunnels(1).first else { return }
        XCTAssertEqual(t.kind, .websocket)
        XCTAssertEqual(t.status, 101)
        XCTAssertEqual(t.bytesFromClient, 23)
        XCTAssertEqual(t.bytesFromUpstream, 23)
        XCTAssertEqual(t.closedBy, "client")
        XCTAssertEqual(t.upgrade?.response?.status, 101)
        XCTAssertEqual(t.upgrade?.url, origin.url("/ws"))
        XCTAssertEqual(proxy.engine.metrics.exchanges.value, 1, "the upgrade counts as one exchange")
    }
}

/// An exchange still running when the drain time is up is cut, and still reported.
final class DrainTimeoutTests: XCTestCase {
    func testAnExchangeCutAtTheDrainDeadlineIsStillCaptured() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.drainTimeout = 0.3 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/never?s=3")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        XCTAssertTrue(eventually { proxy.engine.metrics.activeUpstreams.value == 1 })
        proxy.stop()

        let captured = proxy.sink.events
        XCTAssertEqual(captured.count, 1, "reported before waitUntilStopped returned")
        if case .http(let x)? = captured.first {
            XCTAssertNil(x.response)
            XCTAssertNotNil(x.error, "a cut exchange carries an error")
        } else {
            XCTFail("expected an HTTP capture, got \(captured)")
        }
        XCTAssertTrue(client.read(timeout: 5).eof)
        XCTAssertEqual(proxy.engine.metrics.activeUpstreams.value, 0)
    }
}
