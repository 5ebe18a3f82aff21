import Foundation
import HTTP1
@testable import ProxyEngine
import XCTest

/// Origin-form requests for the viewer leave the loop with their socket: the head parsed, the
/// bytes after it, any answer not yet written; /healthz, /metrics and absolute-form requests
/// stay with the engine.
final class ViewerHandoffTests: XCTestCase {
    private final class Received: @unchecked Sendable {
        let lock = NSCondition()
        var handoffs: [ViewerHandoff] = []
    }

    private func engine(_ received: Received) throws -> RunningEngine {
        try RunningEngine(loops: 1, beforeStart: { engine in
            engine.viewer = { handoff in
                received.lock.lock()
                received.handoffs.append(handoff)
                received.lock.broadcast()
                received.lock.unlock()
            }
        })
    }

    private func next(_ received: Received) -> ViewerHandoff? {
        received.lock.lock()
        defer { received.lock.unlock() }
        let deadline = Date().addingTimeInterval(10)
        while received.handoffs.isEmpty { if !received.lock.wait(until: deadline) { return nil } }
        return received.handoffs.removeFirst()
    }

    func testTheSocketAndTheBytesAfterTheHeadAreHandedOver() throws {
        let received = Received()
        let proxy = try engine(received)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        // An admin answer first (keep-alive), then the viewer's request with a body and a pipelined one.
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).first.map { String(decoding: $0.body, as: UTF8.self) }, "ok\n")
        client.send("POST /api/replay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\n\r\nid=1GET / HTTP/1.1\r\n")
        let handoff = try XCTUnwrap(next(received))
        XCTAssertEqual(handoff.head.method, "POST")
        XCTAssertEqual(handoff.head.target, "/api/replay")
        XCTAssertTrue("id=1GET / HTTP/1.1\r\n".hasPrefix(String(decoding: handoff.buffered, as: UTF8.self)),
                      String(decoding: handoff.buffered, as: UTF8.self))
        XCTAssertEqual(handoff.unsent, [], "the /healthz answer had been written")
        XCTAssertTrue(handoff.peer.hasPrefix("127.0.0.1:"))
        // The socket is the viewer's now: what it writes reaches the client, and the engine forgets it.
        let answer = Array("HTTP/1.1 204 No Content\r\n\r\n".utf8)
        XCTAssertEqual(answer.withUnsafeBytes { send(handoff.socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }, answer.count)
        XCTAssertTrue(String(decoding: client.read { $0.count >= answer.count }.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 204"))
        XCTAssertTrue(eventually { proxy.engine.metrics.activeClients.value == 0 })
        close(handoff.socket)
        XCTAssertTrue(client.read(timeout: 5).eof)
    }

    func testAdminEndpointsAndAbsoluteFormStayWithTheEngine() throws {
        let received = Received()
        let proxy = try engine(received)
        defer { proxy.stop() }
        let client = try RawClient(port: proxy.port)
        client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).first?.head.hasPrefix("HTTP/1.1 200"), true)
        client.send("GET http://127.0.0.1:\(proxy.port)/ HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).first?.head.hasPrefix("HTTP/1.1 508"), true, "a request through the proxy to itself is a loop")
        received.lock.lock()
        XCTAssertTrue(received.handoffs.isEmpty)
        received.lock.unlock()
    }
}
