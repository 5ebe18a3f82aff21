import Foundation
import HTTP1
@testable import ProxyEngine
import XCTest

/// Reverse and SOCKS5 listeners and offline replay, driven in-process with raw sockets.
final class ListenerModeEngineTests: XCTestCase {
    /// Greets, connects to `port` on 127.0.0.1 and checks the two replies.
    private func socksConnect(_ client: RawClient, port: Int) {
        client.send([5, 1, 0])
        XCTAssertEqual(client.read { $0.count >= 2 }.bytes, [5, 0])
        client.send([5, 1, 0, 1, 127, 0, 0, 1, UInt8(port >> 8), UInt8(port & 0xFF)])
        XCTAssertEqual(client.read { $0.count >= 10 }.bytes, [5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
    }

    func testAfterTheSOCKS5ConnectHTTPIsRecordedAsAnHTTPCONNECTsWouldBe() throws {
        let origin = try OriginServer()
        let running = try RunningEngine { $0.listenerModes = [.socks5(nil)] }
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        socksConnect(client, port: origin.port)
        client.send("GET /json HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let answer = try XCTUnwrap(client.readResponses(1).first)
        XCTAssertTrue(answer.head.hasPrefix("HTTP/1.1 200"), answer.head)
        XCTAssertTrue(String(decoding: answer.body, as: UTF8.self).contains("12345678901234567890"))
        let exchange = try XCTUnwrap(running.sink.exchanges(1).first)
        XCTAssertEqual(exchange.url, "http://\(origin.authority)/json")
    }

    func testAfterTheSOCKS5ConnectOtherBytesAreABlindTunnel() throws {
        let origin = try OriginServer()
        let running = try RunningEngine { $0.listenerModes = [.socks5(nil)] }
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        socksConnect(client, port: origin.port)
        client.send([0x00, 0x01, 0x02, 0x03])
        client.shutdownWrite()
        _ = client.read(timeout: 5)
        let tunnel = try XCTUnwrap(running.sink.tunnels(1).first)
        XCTAssertEqual(tunnel.target, origin.authority)
        XCTAssertEqual(tunnel.status, 200)
        XCTAssertEqual(tunnel.bytesFromClient, 4)
    }

    func testARefusedSOCKS5ConnectGetsItsReplyAndARecord() throws {
        let running = try RunningEngine { $0.listenerModes = [.socks5(nil)] }
        defer { running.stop() }
        let closedPort = try unusedLoopbackPort()
        let client = try RawClient(port: running.port)
        client.send([5, 1, 0] + [5, 1, 0, 1, 127, 0, 0, 1, UInt8(closedPort >> 8), UInt8(closedPort & 0xFF)])
        let r = client.read { $0.count >= 12 }
        XCTAssertEqual(Array(r.bytes.prefix(12)), [5, 0] + [5, 5, 0, 1, 0, 0, 0, 0, 0, 0], "05: connection refused")
        let tunnel = try XCTUnwrap(running.sink.tunnels(1).first)
        XCTAssertEqual(tunnel.error?.code, .upstreamConnectFailed)
        XCTAssertTrue(client.read(timeout: 5).eof, "closed after the reply")
    }

    func testAStalledSOCKS5HandshakeIsClosedWithoutAnHTTPAnswer() throws {
        let running = try RunningEngine {
            $0.listenerModes = [.socks5(nil)]
            $0.clientIdleTimeout = 0.3
        }
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        client.send([5, 1])
        let r = client.read(timeout: 10)
        XCTAssertTrue(r.eof, "closed at limits.clientIdleTimeout")
        XCTAssertEqual(r.bytes, [], "no 408: a SOCKS client would not read it")
    }

    /// A client that half-closes with a partial greeting is closed: the bytes are no HTTP
    /// head, so no HTTP answer (here a bare LF in them would have drawn a 400).
    func testASOCKS5ClientGoneMidGreetingGetsNoHTTPAnswer() throws {
        let running = try RunningEngine { $0.listenerModes = [.socks5(nil)] }
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        client.send([5, 0x0A, 0])
        client.shutdownWrite()
        let r = client.read(timeout: 10)
        XCTAssertTrue(r.eof)
        XCTAssertEqual(r.bytes, [], String(decoding: r.bytes, as: UTF8.self))
    }

    /// The largest handshake, sent at once: a greeting offering 255 methods, a 255/255-byte
    /// authentication and a request naming a 255-byte host (1,032 bytes, past one pass's
    /// 1,024). Every message is answered, the request included, without waiting for more.
    func testAWholeMaximalSOCKS5HandshakeSentAtOnceIsAnswered() throws {
        let user = String(repeating: "u", count: 255), password = String(repeating: "p", count: 255)
        let running = try RunningEngine {
            $0.listenerModes = [.socks5(SOCKS5Credentials([user: password]))]
            $0.clientIdleTimeout = 30
            $0.connectTimeout = 3
        }
        defer { running.stop() }
        let host = String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 63) + "."
            + String(repeating: "c", count: 63) + "." + String(repeating: "d", count: 61) + ".x"
        XCTAssertEqual(host.utf8.count, 255)
        let greeting: [UInt8] = [5, 255] + (0..<255).map { UInt8($0) }
        let auth: [UInt8] = [1, 255] + Array(user.utf8) + [255] + Array(password.utf8)
        let request: [UInt8] = [5, 1, 0, 3, 255] + Array(host.utf8) + [0, 80]
        XCTAssertEqual(greeting.count + auth.count + request.count, 1032)
        let client = try RawClient(port: running.port)
        client.send(greeting + auth + request)
        // Method 2, auth success, then the request's reply (the host does not resolve: 04).
        let r = client.read(timeout: 10) { $0.count >= 4 + 10 }
        XCTAssertEqual(Array(r.bytes.prefix(4)), [5, 2, 1, 0])
        XCTAssertGreaterThanOrEqual(r.bytes.count, 14, "the request was answered: \(r.bytes)")
        XCTAssertEqual(r.bytes.dropFirst(4).first, 5)
    }

    func testReverseListenerRewritesHostAndRecordsTheUpstreamURL() throws {
        let origin = try OriginServer()
        let upstream = HTTPAuthority(scheme: "http", host: "127.0.0.1", port: origin.port)
        let running = try RunningEngine { $0.listenerModes = [.reverse(ReverseUpstream(authority: upstream, keepHost: false))] }
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        client.send("GET /echo?x=1 HTTP/1.1\r\nHost: app.test\r\n\r\n")
        let first = try XCTUnwrap(client.readResponses(1).first)
        XCTAssertTrue(first.head.contains("X-Host: \(origin.authority)"), first.head)
        // Tapwire's own paths are the upstream's here; the connection stays open.
        client.send("GET /healthz HTTP/1.1\r\nHost: app.test\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).count, 1)
        let exchanges = running.sink.exchanges(2)
        XCTAssertEqual(exchanges[0].url, "http://\(origin.authority)/echo?x=1")
        XCTAssertEqual(exchanges[1].url, "http://\(origin.authority)/healthz")
        XCTAssertEqual(exchanges[0].request.headers.first(name: "host"), "app.test", "the record keeps what the client sent")
    }

    /// A HEAD's recorded answer gives a HEAD its Content-Length, and a GET (matched on the
    /// URL alone) the length of what it sends: nothing. A GET's answer gives a HEAD the length
    /// of its body. Every answer's framing holds, so the connection stays usable.
    func testReplayedHEADAndGETAnswersFrameTheirBodies() throws {
        let match = ReplayMatch(method: false)
        let headAnswer = ReplayedResponse(recordID: "0000018c2b1f4a1e-000001", status: 200, reason: "OK",
                                          headers: [("Content-Type", "text/plain")], body: [], fromHEAD: true, headLength: "5")
        let getAnswer = ReplayedResponse(recordID: "0000018c2b1f4a1e-000002", status: 200, reason: "OK",
                                         headers: [("Content-Type", "text/plain")], body: Array("hello".utf8))
        let responder = ReplayResponder(match: match, notFound: .notFound, directory: "recordings",
                                        index: [match.key(method: "HEAD", url: "http://api.test/h"): headAnswer,
                                                match.key(method: "GET", url: "http://api.test/g"): getAnswer])
        let running = try RunningEngine(beforeStart: { $0.replayResponders = [responder] })
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        func exchange(_ request: String) -> String {
            client.send(request)
            return String(decoding: client.read(timeout: 10) { $0.count >= 4 && $0.suffix(4).elementsEqual([13, 10, 13, 10]) }.bytes,
                          as: UTF8.self)
        }
        let head = exchange("HEAD http://api.test/h HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(head.contains("Content-Length: 5\r\n"), head)
        let get = exchange("GET http://api.test/h HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(get.contains("Content-Length: 0\r\n"), "a GET gets the length of what is sent: \(get)")
        let headOfGet = exchange("HEAD http://api.test/g HTTP/1.1\r\nHost: api.test\r\n\r\n")
        XCTAssertTrue(headOfGet.contains("Content-Length: 5\r\n"), headOfGet)
        client.send("GET http://api.test/g HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let last = client.readResponses(1)
        XCTAssertEqual(last.first?.body, Array("hello".utf8), "the connection is still in step")
    }

    /// A client that pipelines replayed requests and does not read: the answers stop at
    /// about limits.highWaterBytes plus the socket buffers, instead of every request's body
    /// being added to the output at once; once it reads, every answer comes, in order.
    func testPipelinedReplayedRequestsWaitForTheOutputToDrain() throws {
        let match = ReplayMatch()
        let body = [UInt8](repeating: UInt8(ascii: "r"), count: 256 << 10)
        let answer = ReplayedResponse(recordID: "0000018c2b1f4a1e-000001", status: 200, reason: "OK",
                                      headers: [("Content-Type", "application/octet-stream")], body: body)
        let responder = ReplayResponder(match: match, notFound: .notFound, directory: "recordings",
                                        index: [match.key(method: "GET", url: "http://api.test/big"): answer])
        let running = try RunningEngine({ $0.highWaterBytes = 64 << 10 }, beforeStart: { $0.replayResponders = [responder] })
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        let count = 100
        client.send(String(repeating: "GET http://api.test/big HTTP/1.1\r\nHost: api.test\r\n\r\n", count: count))
        Thread.sleep(forTimeInterval: 1)
        let answeredWhileDeaf = running.sink.events.count
        XCTAssertLessThan(answeredWhileDeaf, count / 2, "answers past the high-water mark waited (25 MB would be queued otherwise)")
        let answers = client.readResponses(count, timeout: 60)
        XCTAssertEqual(answers.count, count)
        XCTAssertTrue(answers.allSatisfy { $0.body == body })
    }

    func testReplayAnswersFromTheIndexAndKeepsTheConnection() throws {
        let match = ReplayMatch(ignoreParams: ["ts"])
        let answer = ReplayedResponse(recordID: "0000018c2b1f4a1e-000001", status: 200, reason: "OK",
                                      headers: [("Content-Type", "application/json")], body: Array(#"{"v":1}"#.utf8))
        let responder = ReplayResponder(match: match, notFound: .badGateway, directory: "recordings",
                                        index: [match.key(method: "POST", url: "http://api.test/v1?ts=1"): answer])
        let running = try RunningEngine(beforeStart: { $0.replayResponders = [responder] })
        defer { running.stop() }
        let client = try RawClient(port: running.port)
        // A body already buffered is read and dropped: the next request on the connection is parsed.
        client.send("POST http://api.test/v1?ts=2 HTTP/1.1\r\nHost: api.test\r\nContent-Length: 5\r\n\r\nhello"
                    + "GET http://api.test/other HTTP/1.1\r\nHost: api.test\r\n\r\n")
        let answers = client.readResponses(2)
        XCTAssertEqual(answers.count, 2)
        XCTAssertTrue(answers[0].head.hasPrefix("HTTP/1.1 200 OK"), answers[0].head)
        XCTAssertEqual(answers[0].body, Array(#"{"v":1}"#.utf8))
        XCTAssertTrue(answers[1].head.hasPrefix("HTTP/1.1 502"), answers[1].head)
        let exchange = try XCTUnwrap(running.sink.exchanges(1).first)
        XCTAssertEqual(exchange.replayedFrom, "0000018c2b1f4a1e-000001")
        XCTAssertEqual(exchange.response?.status, 200)
        XCTAssertNil(exchange.upstreamAddress)
        XCTAssertEqual(running.sink.events.count, 1, "a not-found answer is not recorded")
        // A reload swaps the index whole.
        responder.replace([:])
        XCTAssertNil(responder.answer(method: "POST", url: "http://api.test/v1?ts=1"))
    }
}
