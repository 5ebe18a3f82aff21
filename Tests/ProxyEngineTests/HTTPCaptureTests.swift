import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// What the engine captures of plain HTTP exchanges, checked against what the
/// client sent and the origin answered.
final class HTTPCaptureTests: XCTestCase {
    func testGetCapturesHeadsBodyAndOrderedClock() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/json")) HTTP/1.1\r\nHost: \(origin.authority)\r\nX-Probe: one\r\nuser-agent: raw\r\n\r\n")
        let responses = client.readResponses(1)
        XCTAssertEqual(responses.count, 1)
        let json = #"{"id":12345678901234567890,"ok":true,"name":"tap","items":[1,2,3],"password":"hunter2"}"#
        XCTAssertEqual(responses.first.map { String(decoding: $0.body, as: UTF8.self) }, json)

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.url, origin.url("/json"))
        XCTAssertTrue(x.client.hasPrefix("127.0.0.1:"), x.client)
        XCTAssertEqual(x.request.method, "GET")
        XCTAssertEqual(x.request.target, origin.url("/json"))
        XCTAssertEqual(x.request.version, .http1_1)
        // The head as the client sent it: order and the case of names kept.
        XCTAssertEqual(x.request.headers.fields.map(\.name), ["Host", "X-Probe", "user-agent"])
        XCTAssertEqual(x.request.headers.fields.map(\.value), [origin.authority, "one", "raw"])
        XCTAssertEqual(x.response?.status, 200)
        XCTAssertEqual(x.response?.reason, "OK")
        XCTAssertEqual(x.response?.headers.first(name: "Content-Type"), "application/json")
        XCTAssertEqual(x.response?.headers.first(name: "Content-Length"), String(json.utf8.count))
        XCTAssertEqual(x.responseBody.text, json)
        XCTAssertEqual(x.responseBody.totalBytes, UInt64(json.utf8.count))
        XCTAssertFalse(x.responseBody.truncated)
        XCTAssertEqual(x.requestBody.totalBytes, 0)
        XCTAssertNil(x.error)
        XCTAssertFalse(x.connectionReused)
        XCTAssertEqual(x.upstreamAddress, origin.authority)

        let c = x.clock
        let points = [c.requestStart, c.connected, c.requestSent, c.firstResponseByte, c.lastResponseByte]
        XCTAssertFalse(points.contains { $0 == nil }, "every clock point is set: \(c)")
        let values = points.compactMap { $0 }
        XCTAssertEqual(values, values.sorted(), "requestStart ≤ connected ≤ requestSent ≤ firstResponseByte ≤ lastResponseByte: \(c)")
        if let connectStart = c.connectStart, let connected = c.connected {
            XCTAssertLessThanOrEqual(c.requestStart, connectStart)
            XCTAssertLessThanOrEqual(connectStart, connected)
        } else {
            XCTFail("connectStart is set for a new connection")
        }
        // Wall-clock seconds since 1970, not a monotonic reading.
        XCTAssertEqual(c.requestStart, Date().timeIntervalSince1970, accuracy: 600)
    }

    func testPostBodyIsCapturedAndForwarded() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        let body = (0..<100).map { String($0 % 10) }.joined()
        client.send("POST \(origin.url("/echo")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        let responses = client.readResponses(1)
        XCTAssertEqual(responses.first.map { String(decoding: $0.body, as: UTF8.self) }, body)

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.request.method, "POST")
        XCTAssertEqual(x.requestBody.text, body)
        XCTAssertEqual(x.requestBody.totalBytes, 100)
        XCTAssertFalse(x.requestBody.truncated)
        XCTAssertEqual(x.responseBody.text, body)
        XCTAssertEqual(x.response?.headers.first(name: "X-Method"), "POST")
        XCTAssertNil(x.error)
    }

    /// Heads are written in place into the output buffer (`writeForwardedWireForm`): a head
    /// of tens of kilobytes each way still goes out whole, in one piece of libevent's memory.
    func testLargeHeadsAreForwardedWholeBothWays() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.maxHeaderBytes = 128 * 1024 }
        let client = try RawClient(port: proxy.port)
        // 120 fields of ~400 bytes: a ~48 KB request head; the origin lists their names in
        // X-Seen-Headers, a response field of ~20 KB.
        let names = (0..<120).map { "X-Field-\($0)-" + String(repeating: "n", count: 150) }
        let fields = names.map { "\($0): " + String(repeating: "v", count: 250) + "\r\n" }.joined()
        client.send("GET \(origin.url("/echo")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\(fields)\r\n")
        guard let response = client.readResponses(1).first else { return XCTFail("no answer") }
        XCTAssertTrue(response.head.hasPrefix("HTTP/1.1 200 OK\r\n"), String(response.head.prefix(200)))
        let seen = response.head.split(separator: "\r\n").first { $0.hasPrefix("X-Seen-Headers: ") }
        XCTAssertEqual(seen.map { String($0.dropFirst(16)) }, (["host"] + names.map { $0.lowercased() }).joined(separator: ","))
        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.request.headers.count, 121)
        XCTAssertNil(x.error)
    }

    func testCaptureLimitTruncatesCopiesButForwardsEverything() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.captureMaxBodyBytes = 16 }
        let client = try RawClient(port: proxy.port)
        let body = String(repeating: "abcdefghij", count: 10)
        client.send("POST \(origin.url("/echo")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: 100\r\n\r\n\(body)")
        let responses = client.readResponses(1)
        XCTAssertEqual(responses.first?.body.count, 100, "the client still gets the whole body")

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.requestBody.bytes.count, 16)
        XCTAssertEqual(x.requestBody.text, String(body.prefix(16)))
        XCTAssertEqual(x.requestBody.totalBytes, 100)
        XCTAssertTrue(x.requestBody.truncated)
        XCTAssertEqual(x.responseBody.bytes.count, 16)
        XCTAssertEqual(x.responseBody.totalBytes, 100)
        XCTAssertTrue(x.responseBody.truncated)
    }

    /// The capture's memory stays within the limit: grown by the array's doubling, a 100 KB
    /// limit took up to 128 KB (and the pipeline's byte bound counted only what was used).
    func testCaptureMemoryStaysWithinTheLimit() throws {
        let origin = try origin()
        let limit = 100_000
        let proxy = try RunningEngine { $0.captureMaxBodyBytes = limit }
        for (path, size) in [("/big?size=300000", 300_000), ("/big?size=60000", 60_000)] {
            let client = try RawClient(port: proxy.port)
            client.send("GET \(origin.url(path)) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
            XCTAssertEqual(client.readResponses(1).first?.body.count, size)
        }
        let captures = proxy.sink.exchanges(2).map(\.responseBody)
        XCTAssertEqual(captures.map(\.bytes.count), [limit, 60_000])
        for capture in captures {
            // Never past the limit (malloc may round it up a little).
            XCTAssertLessThanOrEqual(capture.bytes.capacity, limit + 4096, "\(capture.bytes.count) bytes")
        }
    }

    /// A Content-Length near UInt64.max, its body sent in pieces: the capture's arithmetic
    /// must not overflow (a trap would end the whole proxy).
    func testAHugeDeclaredLengthSentInPiecesDoesNotCrash() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.captureMaxBodyBytes = 100_000 }
        let client = try RawClient(port: proxy.port)
        let head = "POST \(origin.url("/sink")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: 10000000000000000000\r\n\r\n"
        client.send(head + "first")
        // Each piece is read (and counted) before the next is sent.
        let read = { proxy.engine.metrics.bytesFromClients.value }
        XCTAssertTrue(eventually { read() >= head.utf8.count + 5 })
        client.send("second")
        XCTAssertTrue(eventually { read() >= head.utf8.count + 11 })
        client.shutdownWrite()
        let other = try RawClient(port: proxy.port)
        other.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(other.readResponses(1).first.map { String(decoding: $0.body, as: UTF8.self) }, "ok\n", "the proxy is gone")
    }

    func testRequestBodiesAreNotCopiedWhenTurnedOff() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.captureRequestBodies = false }
        let client = try RawClient(port: proxy.port)
        client.send("POST \(origin.url("/echo")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: 11\r\n\r\nhello world")
        let responses = client.readResponses(1)
        XCTAssertEqual(responses.first.map { String(decoding: $0.body, as: UTF8.self) }, "hello world")

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.requestBody.bytes, [])
        // The size is still counted: only the copy is skipped.
        XCTAssertEqual(x.requestBody.totalBytes, 11)
        XCTAssertEqual(x.responseBody.text, "hello world", "response bodies are still captured")
    }

    func testChunkedResponsePayloadIsCapturedWithoutFraming() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/chunked")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let received = client.read { String(decoding: $0, as: UTF8.self).hasSuffix("0\r\nX-Trailer: yes\r\n\r\n") }
        let text = String(decoding: received.bytes, as: UTF8.self)
        XCTAssertTrue(text.contains("6\r\nhello \r\n"), "the client gets the chunked framing: \(text)")

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.response?.headers.first(name: "Transfer-Encoding"), "chunked")
        XCTAssertEqual(x.responseBody.text, "hello chunked world")
        XCTAssertEqual(x.responseBody.totalBytes, 19)
        XCTAssertNil(x.error)
    }

    /// metrics.dns is null when no lookup was made (the spec's example), a span when one was.
    func testDNSPhaseOnlyForNamesThatAreLookedUp() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/json")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).count, 1)
        client.send("GET http://localhost:\(origin.port)/json HTTP/1.1\r\nHost: localhost:\(origin.port)\r\nConnection: close\r\n\r\n")
        _ = client.read(timeout: 10)
        let xs = proxy.sink.exchanges(2)
        guard xs.count == 2 else { return }
        XCTAssertNil(xs[0].clock.dnsDone, "127.0.0.1 needs no lookup")
        XCTAssertNotNil(xs[0].clock.connected)
        XCTAssertNotNil(xs[1].clock.dnsDone, "localhost is looked up")
    }

    /// The request goes upstream as HTTP/1.1, so the origin may chunk; an HTTP/1.0 client
    /// cannot read chunks (RFC 9112 §6.1) and gets the payload, ended by the close.
    func testHTTP10ClientGetsAChunkedResponseAsItsPayloadEndedByClose() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/chunked")) HTTP/1.0\r\nHost: \(origin.authority)\r\nConnection: keep-alive\r\n\r\n")
        let received = client.read(timeout: 5)
        let text = String(decoding: received.bytes, as: UTF8.self)
        XCTAssertTrue(received.eof, "the close ends the body: \(text)")
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        XCTAssertFalse(text.lowercased().contains("transfer-encoding"), text)
        XCTAssertTrue(text.contains("Connection: close\r\n"), text)
        XCTAssertTrue(text.hasSuffix("\r\n\r\nhello chunked world"), text)

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.response?.headers.first(name: "Transfer-Encoding"), "chunked", "the record keeps the origin's head")
        XCTAssertEqual(x.responseBody.text, "hello chunked world")
        XCTAssertNil(x.error)
        // The upstream connection read the whole chunked body, so it is reusable.
        XCTAssertTrue(eventually { proxy.engine.metrics.pooledUpstreams.value == 1 })
    }

    /// A server must ignore Upgrade in an HTTP/1.0 request (RFC 9110 §7.8); forwarded, it
    /// would reach the origin as an HTTP/1.1 upgrade request.
    func testHTTP10UpgradeIsNotForwarded() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/echo")) HTTP/1.0\r\nHost: \(origin.authority)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        let text = String(decoding: client.read(timeout: 5).bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        let seen = text.split(separator: "\r\n").first { $0.hasPrefix("X-Seen-Headers:") } ?? ""
        XCTAssertFalse(seen.contains("upgrade"), String(seen))
    }

    /// An HTTP/1.0 client would take an interim 1xx for the final answer (RFC 9110 §15.2).
    func testHTTP10ClientIsNotSentInterimResponses() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let old = try RawClient(port: proxy.port)
        old.send("GET \(origin.url("/continue")) HTTP/1.0\r\nHost: \(origin.authority)\r\n\r\n")
        let text = String(decoding: old.read(timeout: 5).bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        XCTAssertFalse(text.contains("100 Continue"), text)
        XCTAssertTrue(text.hasSuffix("\r\n\r\nok"), text)

        let current = try RawClient(port: proxy.port)
        current.send("GET \(origin.url("/continue")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        let answer = current.read(timeout: 5) { String(decoding: $0, as: UTF8.self).hasSuffix("\r\n\r\nok") }
        XCTAssertTrue(String(decoding: answer.bytes, as: UTF8.self).hasPrefix("HTTP/1.1 100 Continue\r\n"),
                      "an HTTP/1.1 client still gets it")
    }

    func testPipelinedRequestsAreCapturedInOrder() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        let paths = ["/echo?n=1", "/status?code=404", "/json", "/status?code=503"]
        client.send(paths.map { "GET \(origin.url($0)) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n" }.joined())
        let responses = client.readResponses(paths.count)
        XCTAssertEqual(responses.map { $0.head.split(separator: " ").dropFirst().first.map(String.init) ?? "" },
                       ["200", "404", "200", "503"])

        let captured = proxy.sink.exchanges(paths.count)
        XCTAssertEqual(captured.map(\.url), paths.map(origin.url))
        XCTAssertEqual(captured.map { $0.response?.status ?? 0 }, [200, 404, 200, 503])
        XCTAssertTrue(captured.allSatisfy { $0.error == nil })
    }

    func testPipelinedRequestsBeforeAHalfCloseAreAllAnswered() throws {
        // A client may send its requests and shut down its sending side (`nc -N`, scripts):
        // every complete request it sent is answered in order, then the connection closes.
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        let paths = ["/echo?n=1", "/status?code=404", "/json"]
        client.send(paths.map { "GET \(origin.url($0)) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n" }.joined())
        client.shutdownWrite()
        let (bytes, eof) = client.read(timeout: 15)
        let responses = RawClient.splitResponses(bytes)
        XCTAssertEqual(responses.map { $0.head.split(separator: " ").dropFirst().first.map(String.init) ?? "" },
                       ["200", "404", "200"])
        XCTAssertTrue(eof, "the connection closes after the last answer")
        // Answers with more requests behind them do not announce a close. (The last one
        // does when the half-close was read before its head went out, which is a race.)
        XCTAssertEqual(responses.prefix(2).map { $0.head.lowercased().contains("connection: close") }, [false, false])
        XCTAssertEqual(proxy.sink.exchanges(paths.count).map(\.url), paths.map(origin.url))
    }

    func testKeepAliveReusesTheUpstreamConnection() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        for _ in 0..<2 {
            client.send("GET \(origin.url("/echo")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
            XCTAssertEqual(client.readResponses(1).count, 1)
        }
        let captured = proxy.sink.exchanges(2)
        XCTAssertEqual(captured.map(\.connectionReused), [false, true])
        // The origin counts requests per connection: the second one came on the same socket.
        XCTAssertEqual(captured.map { $0.response?.headers.first(name: "X-Served") }, ["1", "2"])
        XCTAssertNotNil(captured.first?.clock.connected)
        XCTAssertNil(captured.last?.clock.connected, "a reused connection has no connect time")
    }
}
