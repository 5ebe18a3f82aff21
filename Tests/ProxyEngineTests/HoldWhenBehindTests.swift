import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// `log.whenBehind: wait`: while the sink says it is behind, a client's next request is
/// parsed but not started (nothing more is read from that client) until the sink calls
/// the engine's caught-up handler. Tapwire's own endpoints are never held.
final class HoldWhenBehindTests: XCTestCase {
    private func get(_ url: String, _ authority: String) -> String {
        "GET \(url) HTTP/1.1\r\nHost: \(authority)\r\n\r\n"
    }

    func testRequestsWaitWhileTheSinkIsBehindAndGoOnWhenItCatchesUp() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        // A keep-alive connection that already has one exchange behind it.
        client.send(get(origin.url("/json"), origin.authority))
        XCTAssertEqual(client.readResponses(1).count, 1)
        proxy.sink.waitForCount(1)

        proxy.sink.behind.store(true, ordering: .relaxed)
        // Two pipelined requests: the first is held, the second stays unread behind it.
        client.send(get(origin.url("/json?n=2"), origin.authority) + get(origin.url("/json?n=3"), origin.authority))
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 }, "the request was not held")
        XCTAssertTrue(client.read(timeout: 0.3).bytes.isEmpty, "a held request was answered")
        XCTAssertEqual(proxy.sink.events.count, 1, "a held request reached the origin")

        // Tapwire's own endpoints answer while traffic is held, asked directly or through
        // the proxy itself (absolute form, as curl does with HTTP_PROXY set).
        for request in ["GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                        "GET http://127.0.0.1:\(proxy.port)/healthz HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\n\r\n"] {
            let admin = try RawClient(port: proxy.port)
            admin.send(request)
            XCTAssertEqual(admin.readResponses(1, timeout: 5).first.map { $0.head.hasPrefix("HTTP/1.1 200") }, true, request)
        }

        proxy.sink.catchUp()
        let answers = client.readResponses(2)
        XCTAssertEqual(answers.count, 2)
        XCTAssertTrue(answers.allSatisfy { $0.head.hasPrefix("HTTP/1.1 200") })
        let urls = proxy.sink.exchanges(3).map(\.url)
        XCTAssertEqual(urls, [origin.url("/json"), origin.url("/json?n=2"), origin.url("/json?n=3")])
        XCTAssertEqual(proxy.engine.metrics.heldClients.value, 0)
        XCTAssertEqual(proxy.engine.metrics.holds.value, 1)
        XCTAssertTrue(proxy.engine.metrics.prometheusText().contains("tapwire_holds_total 1\n"))
    }

    func testNewConnectionsAndTunnelsAreHeldToo() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        proxy.sink.behind.store(true, ordering: .relaxed)
        let plain = try RawClient(port: proxy.port)
        plain.send(get(origin.url("/json"), origin.authority))
        let tunnel = try RawClient(port: proxy.port)
        tunnel.send("CONNECT \(origin.authority) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 2 }, "held: \(proxy.engine.metrics.heldClients.value)")
        XCTAssertTrue(plain.read(timeout: 0.2).bytes.isEmpty)
        XCTAssertTrue(tunnel.read(timeout: 0.2).bytes.isEmpty)

        proxy.sink.catchUp()
        XCTAssertEqual(plain.readResponses(1).first.map { $0.head.hasPrefix("HTTP/1.1 200") }, true)
        let established = tunnel.read { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\n") }
        XCTAssertTrue(String(decoding: established.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 Connection established"))
        XCTAssertEqual(proxy.engine.metrics.heldClients.value, 0)
    }

    /// A SOCKS5 CONNECT is held as an HTTP CONNECT is: the method reply comes, the CONNECT's
    /// reply only once the log caught up.
    func testASOCKS5ConnectIsHeldToo() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.listenerModes = [.socks5(nil)] }
        proxy.sink.behind.store(true, ordering: .relaxed)
        let client = try RawClient(port: proxy.port)
        client.send([5, 1, 0])
        XCTAssertEqual(client.read { $0.count >= 2 }.bytes, [5, 0])
        client.send([5, 1, 0, 1, 127, 0, 0, 1, UInt8(origin.port >> 8), UInt8(origin.port & 0xFF)])
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 }, "held: \(proxy.engine.metrics.heldClients.value)")
        XCTAssertTrue(client.read(timeout: 0.3).bytes.isEmpty, "the CONNECT was answered while held")
        proxy.sink.catchUp()
        XCTAssertEqual(client.read { $0.count >= 10 }.bytes, [5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        client.send("GET /json HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).first.map { $0.head.hasPrefix("HTTP/1.1 200") }, true)
        XCTAssertEqual(proxy.engine.metrics.heldClients.value, 0)
    }

    func testAHeldRequestIsAnswered503AtShutdown() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        proxy.sink.behind.store(true, ordering: .relaxed)
        let client = try RawClient(port: proxy.port)
        client.send(get(origin.url("/json"), origin.authority))
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 })
        proxy.stop()
        let answer = client.read(timeout: 5) { String(decoding: $0, as: UTF8.self).contains("shutting down") }
        let text = String(decoding: answer.bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 503 Service Unavailable"), text)
        XCTAssertTrue(text.contains("Connection: close"), text)
        XCTAssertEqual(proxy.engine.metrics.heldClients.value, 0)
        XCTAssertTrue(proxy.sink.events.isEmpty, "the held request went upstream")
    }

    func testAClientThatResetsWhileHeldIsForgottenAndItsRequestNeverSent() throws {
        let origin = try origin()
        let proxy = try RunningEngine(loops: 1)
        proxy.sink.behind.store(true, ordering: .relaxed)
        do {
            let client = try RawClient(port: proxy.port)
            client.send(get(origin.url("/json"), origin.authority))
            XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 })
            client.resetOnClose()
        }
        // Reading goes on while held, so the reset closes the session before any release.
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 0 && proxy.engine.metrics.activeClients.value == 0 },
                      "held \(proxy.engine.metrics.heldClients.value), clients \(proxy.engine.metrics.activeClients.value)")
        proxy.sink.catchUp()
        XCTAssertTrue(stays(for: 0.2) { proxy.sink.events.isEmpty && proxy.engine.metrics.activeUpstreams.value == 0 })
        XCTAssertTrue(proxy.sink.events.isEmpty, "the request of a client that was gone went upstream")
    }

    /// `nc -N`: the client sends its requests and half-closes while they are held; they
    /// are still answered, in order, then the connection closes.
    func testAHalfClosedClientsHeldRequestsAreStillAnswered() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        proxy.sink.behind.store(true, ordering: .relaxed)
        let client = try RawClient(port: proxy.port)
        client.send(get(origin.url("/json?n=1"), origin.authority) + get(origin.url("/json?n=2"), origin.authority))
        client.shutdownWrite()
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 })
        _ = stays(for: 0.1) { proxy.engine.metrics.activeClients.value == 1 }
        XCTAssertEqual(proxy.engine.metrics.activeClients.value, 1, "the half-close dropped the held request")
        proxy.sink.catchUp()
        let all = client.read { RawClient.splitResponses($0).count >= 2 }
        let answers = RawClient.splitResponses(all.bytes)
        XCTAssertEqual(answers.count, 2)
        XCTAssertTrue(answers.allSatisfy { $0.head.hasPrefix("HTTP/1.1 200") })
        XCTAssertTrue(answers.last.map { $0.head.contains("Connection: close") } ?? false, "the last answer says close")
        XCTAssertTrue(all.eof || client.read(timeout: 5).eof, "the connection stayed open")
        XCTAssertEqual(proxy.sink.exchanges(2).map(\.url), [origin.url("/json?n=1"), origin.url("/json?n=2")])
    }

    /// A POST sent whole and then half-closed while held is still forwarded and answered;
    /// one whose body was cut short by the half-close is recorded as aborted.
    func testAHalfClosedClientsHeldPostIsForwardedOrAborted() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        proxy.sink.behind.store(true, ordering: .relaxed)
        let whole = try RawClient(port: proxy.port)
        whole.send("POST \(origin.url("/echo?whole")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: 5\r\n\r\nhello")
        whole.shutdownWrite()
        let cut = try RawClient(port: proxy.port)
        cut.send("POST \(origin.url("/echo?cut")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: 10\r\n\r\nhello")
        cut.shutdownWrite()
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 2 })
        // Both half-closes are seen while held: the sessions stay, each holding its request.
        _ = stays(for: 0.1) { proxy.engine.metrics.activeClients.value == 2 }
        proxy.sink.catchUp()
        let answer = whole.readResponses(1)
        XCTAssertEqual(answer.first.map { String(decoding: $0.body, as: UTF8.self) }, "hello")
        XCTAssertTrue(cut.read(timeout: 10).eof, "the cut request's connection stayed open")
        let byURL = Dictionary(proxy.sink.exchanges(2).map { ($0.url, $0) }, uniquingKeysWith: { a, _ in a })
        XCTAssertNil(byURL[origin.url("/echo?whole")]?.error)
        XCTAssertEqual(byURL[origin.url("/echo?cut")]?.error?.code, .clientAborted)
    }

    /// A POST's body arrives while its head is held (more than a head's worth, so reading pauses):
    /// it is forwarded whole after the release.
    func testAHeldRequestsBodyIsForwardedWhole() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        proxy.sink.behind.store(true, ordering: .relaxed)
        let client = try RawClient(port: proxy.port)
        let body = String(repeating: "b", count: 200_000)
        client.send("POST \(origin.url("/echo")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body)
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 })
        proxy.sink.catchUp()
        let answer = client.readResponses(1)
        XCTAssertEqual(answer.first.map { String(decoding: $0.body, as: UTF8.self) }, body)
    }
}
