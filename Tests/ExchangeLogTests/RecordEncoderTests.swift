import HTTP1
import ResponseSerialization
import XCTest
@testable import ExchangeLog

final class RecordEncoderTests: XCTestCase {
    private func seconds(_ value: Double) -> String {
        var out: [UInt8] = []
        RecordEncoder.appendSeconds(value, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func testDurationsArePlainDecimalsOfAtMostSixDigits() {
        XCTAssertEqual(seconds(0), "0")
        XCTAssertEqual(seconds(0.00121), "0.00121")
        XCTAssertEqual(seconds(0.000001), "0.000001")
        XCTAssertEqual(seconds(0.0000004), "0")
        XCTAssertEqual(seconds(0.0000006), "0.000001")
        XCTAssertEqual(seconds(1.5), "1.5")
        XCTAssertEqual(seconds(3), "3")
        XCTAssertEqual(seconds(12.9999996), "13")
        XCTAssertEqual(seconds(0.9999996), "1", "rounding carries into the whole seconds")
        XCTAssertEqual(seconds(9.9999996), "10")
        XCTAssertEqual(seconds(9e9), "9000000000")
        XCTAssertEqual(seconds(86_400.25), "86400.25")
        XCTAssertEqual(seconds(-0.5), "0", "clock steps never show as negative")
        XCTAssertEqual(seconds(.nan), "0")
        XCTAssertEqual(seconds(.infinity), "0")
        XCTAssertEqual(seconds(1e300), "9000000000", "clamped, never exponent notation")
        XCTAssertEqual(seconds(1e-300), "0")
    }

    /// The fraction is written two digits at a time from a table: every pair and every
    /// trailing-zero trim against a plain reference.
    func testDurationsMatchAPlainReference() {
        XCTAssertEqual(RecordEncoder.digitPairs.utf8CodeUnitCount, 200)
        var random = SplitMix64(seed: 0x5EC0_4D5)
        var values: [Double] = (0..<1_000).map { Double($0) / 1_000_000 }  // every low pair, 1 µs apart
        values += (0..<5_000).map { _ in Double(random.next() % 100_000_000_000) / 1_000_000 }
        for value in values {
            let micros = UInt64((value * 1_000_000).rounded())
            var expected = String(micros / 1_000_000)
            if micros % 1_000_000 != 0 {
                var fraction = String(micros % 1_000_000)
                fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
                while fraction.hasSuffix("0") { fraction.removeLast() }
                expected += "." + fraction
            }
            XCTAssertEqual(seconds(value), expected, "\(value)")
        }
    }

    func testIntegers() {
        for value: UInt64 in [0, 7, 10, 99, 1000, 12_345_678_901_234_567_890, UInt64.max] {
            var out: [UInt8] = []
            RecordEncoder.appendInteger(value, into: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(value))
        }
    }

    func testTunnelRecordShape() throws {
        let tunnel = CapturedTunnel(kind: .connect, client: "127.0.0.1:50000", target: "example.com:443", status: 200,
                                    bytesFromClient: 517, bytesFromUpstream: 4711,
                                    start: RecordFixture.t0, end: RecordFixture.t0 + 1.5, closedBy: .client)
        let record = try ParsedRecord(RecordFixture.processor().record(for: tunnel, id: "0000018c2b1f4a1e-00000a"))
        XCTAssertEqual(record.json, .object([
            JSON.Member("id", .string("0000018c2b1f4a1e-00000a")),
            JSON.Member("kind", .string("tunnel")),
            JSON.Member("client", .string("127.0.0.1:50000")),
            JSON.Member("target", .string("example.com:443")),
            JSON.Member("via", .null),
            JSON.Member("status", .number("200")),
            JSON.Member("bytesFromClient", .number("517")),
            JSON.Member("bytesFromUpstream", .number("4711")),
            JSON.Member("startTime", .string("2026-12-02T10:11:12.000000Z")),
            JSON.Member("endTime", .string("2026-12-02T10:11:13.500000Z")),
            JSON.Member("duration", .number("1.5")),
            JSON.Member("closedBy", .string("client")),
            JSON.Member("error", .null),
        ]))
    }

    func testTunnelWithErrorAndBackwardsEnd() throws {
        let tunnel = CapturedTunnel(kind: .connect, client: "c", target: "t:443", status: 502,
                                    bytesFromClient: 0, bytesFromUpstream: 0,
                                    start: RecordFixture.t0, end: RecordFixture.t0 - 1, closedBy: .error,
                                    error: TransportError(.upstreamDNSFailed, "no such host \"t\""))
        let record = try ParsedRecord(RecordFixture.processor().record(for: tunnel, id: "x"))
        XCTAssertEqual(record["/duration"], .number("0"))
        XCTAssertEqual(record["/endTime"], record["/startTime"])
        XCTAssertEqual(record["/error"], .object([
            JSON.Member("code", .string("upstreamDNSFailed")), JSON.Member("message", .string("no such host \"t\"")),
        ]))
    }

    /// A request that came over HTTP/2 says so the way RFC 9113 names it (no minor version).
    func testHTTP2RequestVersionIsWrittenWithoutMinor() throws {
        var exchange = RecordFixture.exchange()
        exchange.request.version = .http2
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings()).record(for: exchange, id: "x"))
        XCTAssertEqual(record["/request/httpVersion"], .string("HTTP/2"))
        XCTAssertEqual(record["/response/httpVersion"], .string("HTTP/1.1"))
    }

    /// Trailer sections are recorded after the rest of their message, redacted like heads,
    /// and only when there was one.
    func testTrailersAreRecordedAndRedacted() throws {
        var exchange = RecordFixture.exchange()
        exchange.responseBody.trailers = HTTPHeaders([("grpc-status", "0"), ("Authorization", "TRAILER-SECRET")])
        exchange.requestBody.trailers = HTTPHeaders([("x-checksum", "abc")])
        let processor = RecordFixture.processor(ProcessorSettings(redactHeaders: ["authorization"]))
        let record = try ParsedRecord(processor.record(for: exchange, id: "x"))
        XCTAssertEqual(record["/response/trailers"], .array([.array([.string("grpc-status"), .string("0")]),
                                                             .array([.string("Authorization"), .string("[redacted]")])]))
        XCTAssertEqual(record["/request/trailers"], .array([.array([.string("x-checksum"), .string("abc")])]))
        XCTAssertFalse(record.line.contains("TRAILER-SECRET"))
        let plain = try ParsedRecord(processor.record(for: RecordFixture.exchange(), id: "y"))
        XCTAssertFalse(plain.keys("/response").contains("trailers"))
        XCTAssertFalse(plain.keys("/request").contains("trailers"))
    }

    func testWebSocketRecordShape() throws {
        let upgrade = RecordFixture.exchange(
            url: "http://echo.local/socket",
            requestHeaders: [("Host", "echo.local"), ("Upgrade", "websocket"), ("Cookie", "s=SECRET")],
            status: 101, reason: "Switching Protocols",
            responseHeaders: [("Upgrade", "websocket"), ("Connection", "Upgrade")])
        let tunnel = CapturedTunnel(kind: .websocket, client: "127.0.0.1:50001", target: "echo.local:80", status: 101,
                                    bytesFromClient: 120, bytesFromUpstream: 96,
                                    start: RecordFixture.t0, end: RecordFixture.t0 + 12.25, closedBy: .upstream,
                                    upgrade: upgrade)
        let processor = RecordFixture.processor(ProcessorSettings(redactHeaders: ["cookie"]))
        let record = try ParsedRecord(processor.record(for: tunnel, id: "x"))
        XCTAssertEqual(record.keys(""), ["id", "kind", "client", "target", "via", "status", "request", "response",
                                         "bytesFromClient", "bytesFromUpstream", "startTime", "endTime", "duration",
                                         "closedBy", "messagesFromClient", "messagesFromUpstream", "pingsFromClient",
                                         "pingsFromUpstream", "pongsFromClient", "pongsFromUpstream", "closeCode", "closeReason",
                                         "closeFrom", "frameError", "error"])
        XCTAssertEqual(record["/messagesFromClient"], .null, "not parsed: null")
        XCTAssertEqual(record["/kind"], .string("websocket"))
        XCTAssertEqual(record.keys("/request"), ["method", "url", "httpVersion", "headers", "bodySize"])
        XCTAssertEqual(record["/request/url"], .string("http://echo.local/socket"))
        XCTAssertEqual(record["/request/headers/2"], .array([.string("Cookie"), .string("[redacted]")]))
        XCTAssertEqual(record.keys("/response"), ["status", "reason", "httpVersion", "headers", "bodySize", "mimeType", "charset"])
        XCTAssertEqual(record["/response/status"], .number("101"))
        XCTAssertEqual(record["/response/mimeType"], .null)
        XCTAssertEqual(record["/bytesFromUpstream"], .number("96"))
        XCTAssertEqual(record["/duration"], .number("12.25"))
        XCTAssertFalse(record.line.contains("SECRET"))

        let bare = CapturedTunnel(kind: .websocket, client: "c", target: "t:80", status: 101, bytesFromClient: 1,
                                  bytesFromUpstream: 2, start: RecordFixture.t0, end: RecordFixture.t0, closedBy: .client)
        let bareRecord = try ParsedRecord(processor.record(for: bare, id: "x"))
        XCTAssertEqual(bareRecord["/request"], .null)
        XCTAssertEqual(bareRecord["/response"], .null)
    }

    /// Every line parses, whatever the header names and values hold, and the
    /// headers come back exactly as captured.
    func testReplayOfComesFromTheRequestFieldWhichIsNotLoggedAsAHeader() throws {
        let processor = RecordFixture.processor()
        let plain = RecordFixture.exchange(requestHeaders: [("Host", "api.local:8080"), ("Accept", "*/*")])
        var replay = RecordFixture.exchange(requestHeaders: [("Host", "api.local:8080"), ("x-tapwire-replay-of", "0000018c2b1f4a1e-000001"),
                                                             ("Accept", "*/*")])
        let plainRecord = try ParsedRecord(processor.record(for: plain, id: "0000018c2b1f4a1e-000002"))
        let replayRecord = try ParsedRecord(processor.record(for: replay, id: "0000018c2b1f4a1e-000002"))
        XCTAssertNil(plainRecord["/replayOf"])
        XCTAssertFalse(plainRecord.line.contains("replayOf"))
        XCTAssertEqual(replayRecord["/replayOf"], .string("0000018c2b1f4a1e-000001"))
        XCTAssertEqual(replayRecord.keys("").last, "replayOf")
        XCTAssertEqual(replayRecord["/request/headers"], plainRecord["/request/headers"])
        // Apart from the field, the record is the one the request without it gives.
        XCTAssertEqual(replayRecord.line, String(plainRecord.line.dropLast()) + #","replayOf":"0000018c2b1f4a1e-000001"}"#)
        // An empty value names nothing.
        replay.request.headers = [("Host", "api.local:8080"), ("X-Tapwire-Replay-Of", ""), ("Accept", "*/*")]
        XCTAssertEqual(try ParsedRecord(processor.record(for: replay, id: "0000018c2b1f4a1e-000002")).line, plainRecord.line)
    }

    func testReplayedFromIsLastAndOnlyInAReplayedAnswer() throws {
        let processor = RecordFixture.processor()
        var exchange = RecordFixture.exchange(requestHeaders: [("Host", "api.local:8080")])
        let plain = try ParsedRecord(processor.record(for: exchange, id: "0000018c2b1f4a1e-000002"))
        XCTAssertFalse(plain.line.contains("replayedFrom"))
        exchange.replayedFrom = "0000018c2b1f4a1e-000001"
        let replayed = try ParsedRecord(processor.record(for: exchange, id: "0000018c2b1f4a1e-000002"))
        XCTAssertEqual(replayed["/replayedFrom"], .string("0000018c2b1f4a1e-000001"))
        XCTAssertEqual(replayed.line, String(plain.line.dropLast()) + #","replayedFrom":"0000018c2b1f4a1e-000001"}"#)
    }

    func testEveryGeneratedRecordParses() throws {
        var random = SplitMix64(seed: 0x7A9_C0DE)
        let pieces = ["a", "Z", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "日本", "😀", "\u{2028}",
                      " ", "[", "]", "{", "}", ",", ":", "/", "\u{FEFF}", "%", "[redacted]"]
        func text(_ maxLength: Int) -> String {
            (0..<Int(random.next() % UInt64(maxLength + 1))).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
        }
        let bodies: [(String, [UInt8])] = [
            ("application/json", Array(#"{"a\"b":[1,"\u0000",{"c":null}],"token":"t"}"#.utf8)),
            ("application/json", Array("{bad".utf8)),
            ("text/plain; charset=utf-8", [0xFF, 0xFE, 0x41]),
            ("text/plain", [0x00, 0x0A, 0x22, 0x5C, 0xE9]),
            ("text/event-stream", Array("data: x\n\n".utf8)),
            ("application/x-ndjson", Array("1\n\"\\n\"\n".utf8)),
            ("application/octet-stream", [0, 1, 2, 255]),
        ]
        let processor = RecordFixture.processor(ProcessorSettings(
            rules: [RecordFixture.rule("bin", .data, match: { var m = RuleMatch(); m.methods = ["PUT"]; return m }()) {
                $0.serializer.base64Bytes = 3
            }],
            redactHeaders: ["authorization"], redactJSONKeys: ["token"]))
        for iteration in 0..<400 {
            let requestHeaders = (0..<Int(random.next() % 6)).map { _ in (text(8), text(20)) }
            let responseHeaders = (0..<Int(random.next() % 4)).map { _ in (text(8), text(20)) }
            let (contentType, body) = bodies[Int(random.next() % UInt64(bodies.count))]
            let methods = ["GET", "PUT", "POST", "HEAD", text(4)]
            let hasResponse = random.next() % 5 != 0
            let codes = TransportError.Code.allCases
            let error = random.next() % 4 == 0 ? TransportError(codes[Int(random.next() % UInt64(codes.count))], text(30)) : nil
            let exchange = RecordFixture.exchange(
                method: methods[Int(random.next() % 5)], url: "http://h/" + text(10),
                requestHeaders: requestHeaders, requestBody: random.next() % 3 == 0 ? body : [],
                status: hasResponse ? Int(100 + random.next() % 500) : nil, reason: text(10),
                responseHeaders: [("Content-Type", contentType)] + responseHeaders, body: body,
                totalBytes: UInt64(body.count) + random.next() % 2, error: error)
            let id = text(5)
            let bytes = processor.record(for: exchange, id: id)
            let record: ParsedRecord
            do {
                record = try ParsedRecord(bytes)
            } catch {
                return XCTFail("iteration \(iteration): \(error)\n\(String(decoding: bytes, as: UTF8.self))")
            }
            XCTAssertEqual(record["/id"], .string(id))
            let expected = JSON.array(requestHeaders.map { name, value in
                .array([.string(name), .string(name.lowercased() == "authorization" ? "[redacted]" : value)])
            })
            XCTAssertEqual(record["/request/headers"], expected, "iteration \(iteration)")
            if hasResponse {
                XCTAssertEqual(record["/response/headers/0/1"], .string(contentType))
            } else {
                XCTAssertEqual(record["/response"], .null)
            }
        }
    }
}

/// A small seeded generator, so a failing iteration can be replayed.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
