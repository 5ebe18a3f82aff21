import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// CONNECT tunnels: bytes pass through untouched and one CapturedTunnel counts them.
final class TunnelCaptureTests: XCTestCase {
    func testConnectTunnelIsCapturedWithByteCounts() throws {
        let origin = try origin()
        // Blind whatever it carries: plain HTTP would otherwise be decoded (below).
        let proxy = try RunningEngine(blindTunnels: true)
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT \(origin.authority) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let established = "HTTP/1.1 200 Connection established\r\n\r\n"
        let answer = client.read { $0.count >= established.utf8.count }
        XCTAssertEqual(String(decoding: answer.bytes, as: UTF8.self), established)

        // A request inside the tunnel, which the origin answers and then closes.
        let inner = "GET /json HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: close\r\n\r\n"
        client.send(inner)
        let relayed = client.read()
        XCTAssertTrue(relayed.eof, "the origin's close reaches the client")
        let relayedText = String(decoding: relayed.bytes, as: UTF8.self)
        XCTAssertTrue(relayedText.hasPrefix("HTTP/1.1 200 OK\r\n"), relayedText)
        XCTAssertTrue(relayedText.hasSuffix(#""password":"hunter2"}"#), relayedText)
        client.shutdownWrite()

        guard let t = proxy.sink.tunnels(1).first else { return }
        XCTAssertEqual(t.kind, .connect)
        XCTAssertEqual(t.target, origin.authority)
        XCTAssertEqual(t.status, 200)
        XCTAssertEqual(t.bytesFromClient, UInt64(inner.utf8.count))
        XCTAssertEqual(t.bytesFromUpstream, UInt64(relayed.bytes.count))
        XCTAssertEqual(t.closedBy, .upstream)
        XCTAssertNil(t.error)
        XCTAssertNil(t.upgrade)
        XCTAssertLessThanOrEqual(t.start, t.end)
        XCTAssertTrue(t.client.hasPrefix("127.0.0.1:"), t.client)
        XCTAssertTrue(eventually { proxy.engine.metrics.activeTunnels.value == 0 }, "the tunnel gauge goes back to 0")
        XCTAssertTrue(proxy.sink.events.allSatisfy { if case .tunnel = $0 { return true } else { return false } },
                      "a tunnel is not also reported as an HTTP exchange")
    }

    func testConnectToAClosedPortIsCapturedAsAFailedTunnel() throws {
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        let target = "127.0.0.1:\(closedLoopbackPort())"
        client.send("CONNECT \(target) HTTP/1.1\r\nHost: \(target)\r\n\r\n")
        let answer = client.readResponses(1)
        XCTAssertTrue(answer.first?.head.hasPrefix("HTTP/1.1 502 ") ?? false, answer.first?.head ?? "no answer")

        guard let t = proxy.sink.tunnels(1).first else { return }
        XCTAssertEqual(t.target, target)
        XCTAssertEqual(t.status, 502)
        XCTAssertEqual(t.closedBy, .error)
        XCTAssertEqual(t.error?.code, .upstreamConnectFailed)
        XCTAssertEqual(t.bytesFromClient, 0)
        XCTAssertEqual(t.bytesFromUpstream, 0)
    }
}

/// After a CONNECT the client's first bytes decide (`ConnectPayloadStateMachine`): plain
/// HTTP/1 is decoded as exchanges, anything else relayed blind.
final class ConnectPayloadTests: XCTestCase {
    /// A client whose CONNECT to `origin` was answered.
    func connected(_ proxy: RunningEngine, _ origin: OriginServer) throws -> RawClient {
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT \(origin.authority) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        _ = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\n") }
        return client
    }

    func testPlainHTTPThroughAConnectIsRecordedAsExchanges() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try connected(proxy, origin)
        client.send("GET /json?first=1 HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let first = client.readResponses(1)
        XCTAssertTrue(first.first?.head.hasPrefix("HTTP/1.1 200") ?? false, first.first?.head ?? "no answer")
        client.send("GET /json?second=1 HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).count, 1)
        let exchanges = proxy.sink.exchanges(2)
        XCTAssertEqual(exchanges.map(\.url), [origin.url("/json?first=1"), origin.url("/json?second=1")])
        XCTAssertEqual(exchanges.first?.response?.status, 200)
        XCTAssertTrue(eventually { proxy.engine.metrics.activeClients.value == 0 })
        XCTAssertTrue(proxy.sink.events.allSatisfy { if case .http = $0 { return true } else { return false } },
                      "no tunnel record besides the exchanges")
    }

    func testOtherBytesThroughAConnectAreRelayedBlind() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try connected(proxy, origin)
        client.send("SSH-2.0-test\r\n")
        client.shutdownWrite()
        _ = client.read()
        guard let t = proxy.sink.tunnels(1).first else { return }
        XCTAssertEqual(t.kind, .connect)
        XCTAssertEqual(t.status, 200)
        XCTAssertEqual(t.bytesFromClient, 14)
    }

    /// SSH, SMTP: the origin speaks first, so the client's first bytes never come before
    /// the origin's: the tunnel is blind, and the banner reaches the client.
    func testAnOriginThatSpeaksFirstMakesItBlind() throws {
        let (listener, port) = loopbackListener()
        defer { Foundation.close(listener) }
        let banner = Array("SSH-2.0-origin\r\n".utf8)
        Thread {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            _ = banner.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
            var scratch = [UInt8](repeating: 0, count: 256)
            while Foundation.read(fd, &scratch, scratch.count) > 0 {}
            Foundation.close(fd)
        }.start()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        let got = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("SSH-2.0-origin\r\n") }
        XCTAssertTrue(String(decoding: got.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        client.send("SSH-2.0-client\r\n")
        client.shutdownWrite()
        guard let t = proxy.sink.tunnels(1).first else { return }
        XCTAssertEqual(t.kind, .connect)
        XCTAssertEqual(t.bytesFromUpstream, UInt64(banner.count))
        XCTAssertEqual(t.bytesFromClient, 16)
    }

    func testAConnectStillWaitingForItsFirstBytesIsATunnelAtShutdown() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.drainTimeout = 0.2 }
        let client = try connected(proxy, origin)
        // The client's connection stays open until the engine has stopped.
        withExtendedLifetime(client) { proxy.stop() }
        let tunnels = proxy.sink.events.compactMap { if case .tunnel(let t) = $0 { return t } else { return nil } }
        XCTAssertEqual(tunnels.map(\.closedBy), [.shutdown])
        XCTAssertEqual(proxy.engine.metrics.activeClients.value, 0)
    }
}

/// Tunnels have no "in flight" end: shutdown closes them after the drain and still reports them.
final class TunnelShutdownTests: XCTestCase {
    func testShutdownEndsAnOpenTunnelAndReportsIt() throws {
        let origin = try origin()
        let proxy = try RunningEngine(blindTunnels: true) { $0.drainTimeout = 0.2 }
        let client = try RawClient(port: proxy.port)
        client.send("CONNECT \(origin.authority) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        _ = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\n") }
        XCTAssertTrue(eventually { proxy.engine.metrics.activeTunnels.value == 1 })

        proxy.stop()
        let tunnels = proxy.sink.events.compactMap { if case .tunnel(let t) = $0 { return t } else { return nil } }
        XCTAssertEqual(tunnels.count, 1, "reported before waitUntilStopped returned")
        XCTAssertEqual(tunnels.first?.closedBy, .shutdown)
        XCTAssertEqual(tunnels.first?.bytesFromClient, 0)
        XCTAssertTrue(client.read(timeout: 5).eof, "the client's side is closed")
        XCTAssertEqual(proxy.engine.metrics.activeTunnels.value, 0)
        XCTAssertEqual(proxy.engine.metrics.activeClients.value, 0)
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
        XCTAssertEqual(t.closedBy, .client)
        XCTAssertEqual(t.upgrade?.response?.status, 101)
        XCTAssertEqual(t.upgrade?.url, origin.url("/ws"))
        XCTAssertEqual(proxy.engine.metrics.exchanges.value, 1, "the upgrade counts as one exchange")

        // A copy of each direction's bytes went to the log, numbered in order, then the end.
        let pieces = proxy.sink.webSocketPieces
        XCTAssertEqual(pieces.map(\.sequence), Array(0..<UInt64(pieces.count)))
        XCTAssertTrue(pieces.allSatisfy { $0.capture === pieces.first?.capture })
        var fromClient: [UInt8] = [], fromServer: [UInt8] = []
        for piece in pieces {
            if case .bytes(let direction, let bytes, _) = piece.content {
                if direction == .client { fromClient += bytes } else { fromServer += bytes }
            }
        }
        XCTAssertEqual(String(decoding: fromClient, as: UTF8.self), "ping-through-the-tunnel")
        XCTAssertEqual(String(decoding: fromServer, as: UTF8.self), "ping-through-the-tunnel")
        guard case .end? = pieces.last?.content else { return XCTFail("the last piece is not the end") }
    }

    func testALogBehindHoldsTheConnectionUntilItCatchesUpAndLosesNoCopy() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/ws")) HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        _ = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\n") }
        client.send("first")
        _ = client.read { $0.count >= 5 }
        proxy.sink.behind.store(true, ordering: .relaxed)
        // What was read when the log fell behind goes on, copied; then neither side is read
        // (the origin's echo waits too).
        client.send("second")
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 }, "the connection was not held")
        client.send("third")
        XCTAssertTrue(client.read(timeout: 0.3).bytes.isEmpty, "a held connection was read")
        proxy.sink.catchUp()
        XCTAssertEqual(String(decoding: client.read { $0.count >= 11 }.bytes, as: UTF8.self), "secondthird", "not released")
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 0 })
        client.shutdownWrite()
        XCTAssertEqual(proxy.sink.tunnels(1).first?.bytesFromClient, 16)
        let pieces = proxy.sink.webSocketPieces
        let copied = pieces.compactMap { piece -> String? in
            if case .bytes(.client, let bytes, _) = piece.content { return String(decoding: bytes, as: UTF8.self) } else { return nil }
        }
        // Where the pieces break depends on a race (the hold may come from the read that
        // relayed "first"'s echo, which the loop checks after the client may have seen it):
        // what counts is that every byte was copied once, in order.
        XCTAssertEqual(copied.joined(), "firstsecondthird")
        XCTAssertEqual(pieces.first?.capture.isParsing, true, "parsing was never given up")
        XCTAssertEqual(proxy.engine.metrics.holds.value, 1)
    }

    /// Held for the log past `tunnelIdleTimeout`: waiting for the log is not the peers'
    /// silence, so the connection stays open, relays once released, and the idle time
    /// counts from the release.
    func testAHeldConnectionOutlivesTheIdleTimeoutAndCountsItFromTheRelease() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.tunnelIdleTimeout = 0.4 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/ws")) HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        _ = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\n") }
        proxy.sink.behind.store(true, ordering: .relaxed)
        client.send("held")
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 }, "the connection was not held")
        // Three idle timeouts while held (the idle check runs every quarter of one).
        XCTAssertTrue(client.read(timeout: 1.2).bytes.isEmpty, "a held connection was read or closed")
        XCTAssertTrue(proxy.sink.tunnels(0).isEmpty, "a held connection was ended")
        proxy.sink.catchUp()
        XCTAssertEqual(String(decoding: client.read { $0.count >= 4 }.bytes, as: UTF8.self), "held", "not released")
        // Then silence: the idle timeout ends it, counted from the release.
        let ended = proxy.sink.tunnels(1).first
        XCTAssertEqual(ended?.closedBy, .timeout)
        XCTAssertEqual(proxy.engine.metrics.heldClients.value, 0)
    }

    func testWithoutMessageCaptureNothingIsCopied() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.captureWebSocketMessages = false }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/ws")) HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        _ = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\n") }
        client.send("bytes")
        _ = client.read { $0.count >= 5 }
        client.shutdownWrite()
        XCTAssertEqual(proxy.sink.tunnels(1).first?.bytesFromClient, 5)
        XCTAssertTrue(proxy.sink.webSocketPieces.isEmpty)
    }
}
