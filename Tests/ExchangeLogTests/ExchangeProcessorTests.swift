import CZlib
import Foundation
import HTTP1
import ResponseSerialization
import XCTest
@testable import ExchangeLog

/// Exchanges for the record tests. Clock points are whole seconds plus binary
/// fractions, so every duration has an exact decimal text.
enum RecordFixture {
    /// 2026-12-02T10:11:12Z
    static let t0 = 1_796_206_272.0

    static func clock() -> ExchangeClock {
        var clock = ExchangeClock()
        clock.requestStart = t0
        clock.connectStart = t0 + 0.0625
        clock.dnsDone = t0 + 0.125
        clock.connected = t0 + 0.25
        clock.requestSent = t0 + 0.375
        clock.firstResponseByte = t0 + 0.5
        clock.lastResponseByte = t0 + 0.75
        return clock
    }

    /// serializationCompletedTime in every processor made here.
    static let serializedAt = t0 + 1.0

    static func processor(_ settings: ProcessorSettings = ProcessorSettings()) -> ExchangeProcessor {
        ExchangeProcessor(settings: settings, clock: { RecordFixture.serializedAt })
    }

    static func exchange(method: String = "GET", url: String = "http://api.local:8080/v1/items?x=1",
                         requestHeaders: [(String, String)] = [("Host", "api.local:8080")],
                         requestBody: [UInt8] = [],
                         status: Int? = 200, reason: String = "OK",
                         responseHeaders: [(String, String)] = [("Content-Type", "application/json")],
                         body: [UInt8] = [], totalBytes: UInt64? = nil,
                         error: TransportError? = nil) -> CapturedExchange {
        let response = status.map { HTTPResponseHead(status: $0, reason: reason, headers: HTTPHeaders(responseHeaders)) }
        return CapturedExchange(
            client: "127.0.0.1:53422", url: url,
            request: HTTPRequestHead(method: method, target: url, headers: HTTPHeaders(requestHeaders)),
            requestBody: CapturedBody(bytes: requestBody, totalBytes: UInt64(requestBody.count)),
            response: response,
            responseBody: CapturedBody(bytes: body, totalBytes: totalBytes ?? UInt64(body.count)),
            error: error, clock: clock(), connectionReused: false, upstreamAddress: "127.0.0.1:8080")
    }

    static func rule(_ name: String, _ kind: SerializerSpec.Kind = .json, match: RuleMatch = RuleMatch(),
                     configure: (inout Rule) -> Void = { _ in }) -> Rule {
        var rule = Rule(name: name, match: match, serializer: SerializerSpec(kind: kind))
        configure(&rule)
        return rule
    }

    /// Compresses with zlib's gzip wrapper (windowBits 31), in one call.
    static func gzip(_ input: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        precondition(deflateInit2_(&stream, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY,
                                   zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        defer { deflateEnd(&stream) }
        var input = input
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 64)
        let produced: Int = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = UInt32(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = UInt32(outBuffer.count)
                precondition(deflate(&stream, Z_FINISH) == Z_STREAM_END)
                return outBuffer.count - Int(stream.avail_out)
            }
        }
        return Array(output[0..<produced])
    }
}

/// The parsed line, with pointer access for assertions.
struct ParsedRecord {
    let json: JSON
    let line: String

    init(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertFalse(bytes.contains(0x0A), "a record must be one line", file: file, line: line)
        self.line = String(decoding: bytes, as: UTF8.self)
        json = try JSONParser.parse(bytes, allowFragments: false)
    }

    subscript(_ pointer: String) -> JSON? {
        guard let parsed = try? JSONPointer(pointer) else { return nil }
        return json.value(at: parsed)
    }

    func keys(_ pointer: String) -> [String] {
        guard case .object(let members)? = self[pointer] else { return [] }
        return members.map(\.key)
    }
}

final class ExchangeProcessorTests: XCTestCase {
    let httpKeys = ["id", "kind", "client", "request", "response", "data", "rule", "serializer",
                    "result", "error", "timeline", "metrics"]

    func testJSONExchangeRecordFieldByField() throws {
        let body = Array(#"{"zeta":12345678901234567890,"alpha":[1,2.50,3e2],"mid":{"b":true,"a":null}}"#.utf8)
        let exchange = RecordFixture.exchange(
            requestHeaders: [("Host", "api.local:8080"), ("Accept", "application/json")],
            responseHeaders: [("Content-Type", "application/json; charset=UTF-8"), ("X-Trace", "abc")], body: body)
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "0000018c2b1f4a1e-000001"))

        XCTAssertEqual(record.keys(""), httpKeys)
        XCTAssertEqual(record["/id"], .string("0000018c2b1f4a1e-000001"))
        XCTAssertEqual(record["/kind"], .string("http"))
        XCTAssertEqual(record["/client"], .string("127.0.0.1:53422"))

        XCTAssertEqual(record.keys("/request"), ["method", "url", "httpVersion", "headers", "bodySize"])
        XCTAssertEqual(record["/request/method"], .string("GET"))
        XCTAssertEqual(record["/request/url"], .string("http://api.local:8080/v1/items?x=1"))
        XCTAssertEqual(record["/request/httpVersion"], .string("HTTP/1.1"))
        XCTAssertEqual(record["/request/headers"], .array([
            .array([.string("Host"), .string("api.local:8080")]),
            .array([.string("Accept"), .string("application/json")]),
        ]))
        XCTAssertEqual(record["/request/bodySize"], .number("0"))

        XCTAssertEqual(record.keys("/response"), ["status", "reason", "httpVersion", "headers", "bodySize", "mimeType", "charset"])
        XCTAssertEqual(record["/response/status"], .number("200"))
        XCTAssertEqual(record["/response/reason"], .string("OK"))
        XCTAssertEqual(record["/response/headers/1"], .array([.string("X-Trace"), .string("abc")]))
        XCTAssertEqual(record["/response/bodySize"], .number(String(body.count)))
        XCTAssertEqual(record["/response/mimeType"], .string("application/json"))
        XCTAssertEqual(record["/response/charset"], .string("utf-8"))

        XCTAssertEqual(record.keys("/data"), ["size", "captured", "truncated", "contentEncoding"])
        XCTAssertEqual(record["/data/size"], .number(String(body.count)))
        XCTAssertEqual(record["/data/captured"], .number(String(body.count)))
        XCTAssertEqual(record["/data/truncated"], .bool(false))
        XCTAssertEqual(record["/data/contentEncoding"], .null)

        XCTAssertEqual(record["/rule"], .string("default"))
        XCTAssertEqual(record["/serializer"], .string("json"))
        XCTAssertEqual(record.keys("/result"), ["success"])
        XCTAssertEqual(record.keys("/result/success"), ["zeta", "alpha", "mid"])
        XCTAssertEqual(record.keys("/result/success/mid"), ["b", "a"])
        XCTAssertEqual(record["/result/success/zeta"], .number("12345678901234567890"))
        XCTAssertEqual(record["/result/success/alpha"], .array([.number("1"), .number("2.50"), .number("3e2")]))
        XCTAssertTrue(record.line.contains(#""zeta":12345678901234567890,"alpha":[1,2.50,3e2]"#))
        XCTAssertEqual(record["/error"], .null)

        XCTAssertEqual(record.keys("/timeline"), ["requestStartTime", "initialResponseTime", "requestCompletedTime",
                                                  "serializationCompletedTime", "latency", "requestDuration",
                                                  "serializationDuration", "totalDuration"])
        XCTAssertEqual(record["/timeline/requestStartTime"], .string("2026-12-02T10:11:12.000000Z"))
        XCTAssertEqual(record["/timeline/initialResponseTime"], .string("2026-12-02T10:11:12.500000Z"))
        XCTAssertEqual(record["/timeline/requestCompletedTime"], .string("2026-12-02T10:11:12.750000Z"))
        XCTAssertEqual(record["/timeline/serializationCompletedTime"], .string("2026-12-02T10:11:13.000000Z"))
        XCTAssertEqual(record["/timeline/latency"], .number("0.5"))
        XCTAssertEqual(record["/timeline/requestDuration"], .number("0.75"))
        XCTAssertEqual(record["/timeline/serializationDuration"], .number("0.25"))
        XCTAssertEqual(record["/timeline/totalDuration"], .number("1"))

        XCTAssertEqual(record.keys("/metrics"), ["dns", "connect", "tls", "send", "wait", "receive",
                                                 "connectionReused", "upstream", "upstreamHTTPVersion", "via"])
        XCTAssertEqual(record["/metrics/via"], .null, "direct")
        XCTAssertEqual(record["/metrics/dns"], .number("0.0625"))
        XCTAssertEqual(record["/metrics/connect"], .number("0.125"))
        XCTAssertEqual(record["/metrics/tls"], .null)
        XCTAssertEqual(record["/metrics/send"], .number("0.125"))
        XCTAssertEqual(record["/metrics/wait"], .number("0.125"))
        XCTAssertEqual(record["/metrics/receive"], .number("0.25"))
        XCTAssertEqual(record["/metrics/connectionReused"], .bool(false))
        XCTAssertEqual(record["/metrics/upstream"], .string("127.0.0.1:8080"))
    }

    func testReusedConnectionHasNoDNSOrConnectPhase() throws {
        var exchange = RecordFixture.exchange(body: Array("1".utf8))
        exchange.clock.connectStart = nil
        exchange.clock.dnsDone = nil
        exchange.clock.connected = nil
        exchange.connectionReused = true
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/metrics/dns"], .null)
        XCTAssertEqual(record["/metrics/connect"], .null)
        XCTAssertEqual(record["/metrics/send"], .number("0.375"))
        XCTAssertEqual(record["/metrics/connectionReused"], .bool(true))
    }

    func testSerializationTimeIsNeverBeforeRequestCompleted() throws {
        let processor = ExchangeProcessor(settings: ProcessorSettings(), clock: { RecordFixture.t0 - 10 })
        let record = try ParsedRecord(processor.record(for: RecordFixture.exchange(body: Array("1".utf8)), id: "x"))
        XCTAssertEqual(record["/timeline/serializationCompletedTime"], .string("2026-12-02T10:11:12.750000Z"))
        XCTAssertEqual(record["/timeline/serializationDuration"], .number("0"))
    }

    func testGzipResponseIsDecodedBeforeTheSerializer() throws {
        let text = String(repeating: #"{"k":"vvvvvvvvvvvvvvvv"},"#, count: 40)
        let plain = Array(("[" + text + "7]").utf8)
        let encoded = RecordFixture.gzip(plain)
        XCTAssertLessThan(encoded.count, plain.count)
        let exchange = RecordFixture.exchange(
            responseHeaders: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: encoded)
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/data/size"], .number(String(plain.count)))
        XCTAssertEqual(record["/data/captured"], .number(String(encoded.count)))
        XCTAssertEqual(record["/data/contentEncoding"], .string("gzip"))
        XCTAssertEqual(record["/response/bodySize"], .number(String(encoded.count)))
        XCTAssertEqual(record["/result/success/40"], .number("7"))
        XCTAssertEqual(record["/result/success/0/k"], .string("vvvvvvvvvvvvvvvv"))
    }

    func testCorruptGzipFailsWithContentDecodingFailed() throws {
        let exchange = RecordFixture.exchange(
            responseHeaders: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
            body: Array("this is not gzip at all".utf8))
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/result/failure/error"], .string("responseSerializationFailed"))
        XCTAssertEqual(record["/result/failure/reason"], .string("contentDecodingFailed"))
        XCTAssertEqual(record["/data/size"], .null)
        XCTAssertEqual(record["/data/captured"], .number("23"))
    }

    func testTruncatedBodyFailsJSONButStringSucceedsOnThePrefix() throws {
        let prefix = Array(#"{"items":[1,2,"#.utf8)
        let exchange = RecordFixture.exchange(body: prefix, totalBytes: 1000)
        let json = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(json["/result/failure/error"], .string("responseSerializationFailed"))
        XCTAssertEqual(json["/result/failure/reason"], .string("inputDataTruncated"))
        guard case .string(let message)? = json["/result/failure/message"] else { return XCTFail("no message") }
        XCTAssertTrue(message.contains("captured \(prefix.count) of 1000 bytes"), message)
        XCTAssertEqual(json["/data/truncated"], .bool(true))
        XCTAssertEqual(json["/data/captured"], .number(String(prefix.count)))
        XCTAssertEqual(json["/response/bodySize"], .number("1000"))

        let stringRule = RecordFixture.rule("text", .string)
        let processor = RecordFixture.processor(ProcessorSettings(rules: [stringRule]))
        let text = try ParsedRecord(processor.record(for: exchange, id: "x"))
        XCTAssertEqual(text["/rule"], .string("text"))
        XCTAssertEqual(text["/result/success"], .string(#"{"items":[1,2,"#))
        XCTAssertEqual(text["/data/truncated"], .bool(true))
        XCTAssertEqual(text["/response/charset"], .string("iso-8859-1"))
    }

    /// The default string serializer decodes with the Content-Type's charset (else
    /// ISO-8859-1), and a page cut inside a character keeps the text before it.
    func testTextIsDecodedWithTheContentTypeCharsetAndCutBetweenCharacters() throws {
        let page = Array("<p>café 😀</p>".utf8)
        let headers = [("Content-Type", "text/html; charset=utf-8")]
        let whole = try ParsedRecord(RecordFixture.processor().record(
            for: RecordFixture.exchange(responseHeaders: headers, body: page), id: "x"))
        XCTAssertEqual(whole["/serializer"], .string("string"))
        XCTAssertEqual(whole["/result/success"], .string("<p>café 😀</p>"))
        XCTAssertEqual(whole["/response/charset"], .string("utf-8"))

        let latin1 = try ParsedRecord(RecordFixture.processor().record(
            for: RecordFixture.exchange(responseHeaders: [("Content-Type", "text/html")], body: Array("é".utf8)), id: "x"))
        XCTAssertEqual(latin1["/result/success"], .string("Ã©"))
        XCTAssertEqual(latin1["/response/charset"], .string("iso-8859-1"))

        // Cut two bytes into the four-byte emoji: the capture limit, then the decode limit.
        let cut = Array(page.prefix(11))
        let captured = try ParsedRecord(RecordFixture.processor().record(
            for: RecordFixture.exchange(responseHeaders: headers, body: cut, totalBytes: UInt64(page.count)), id: "x"))
        XCTAssertEqual(captured["/result/success"], .string("<p>café "))
        XCTAssertEqual(captured["/data/truncated"], .bool(true))
        let decodeLimited = try ParsedRecord(RecordFixture.processor(ProcessorSettings(decodeLimit: 11)).record(
            for: RecordFixture.exchange(responseHeaders: headers + [("Content-Encoding", "gzip")],
                                        body: RecordFixture.gzip(page)), id: "x"))
        XCTAssertEqual(decodeLimited["/result/success"], .string("<p>café "))
        XCTAssertEqual(decodeLimited["/data/truncated"], .bool(true))
    }

    /// A HEAD or 304 answer labelled with a coding Tapwire lacks has no body to fail on;
    /// a non-empty one still fails, naming the coding.
    func testAnUnknownCodingFailsOnlyWithABody() throws {
        let empty = RecordFixture.exchange(status: 304, reason: "Not Modified",
                                           responseHeaders: [("Content-Type", "text/html"), ("Content-Encoding", "dcb")])
        let record = try ParsedRecord(RecordFixture.processor().record(for: empty, id: "x"))
        XCTAssertEqual(record["/result/success"], .string(""))
        XCTAssertEqual(record["/data/size"], .number("0"))
        let withBody = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/html"), ("Content-Encoding", "dcb")],
                                              body: [1, 2, 3])
        let failed = try ParsedRecord(RecordFixture.processor().record(for: withBody, id: "x"))
        XCTAssertEqual(failed["/result/failure/reason"], .string("contentDecodingFailed"))
    }

    /// `data.truncated` is true whenever the serializer saw less than the whole body: a
    /// transfer cut by a failure with every byte that came captured, and a decode limit
    /// reached in an inner layer that leaves the final output short of the limit.
    func testCutTransfersAndInnerLayerCutsAreTruncated() throws {
        var reset = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/plain")], body: Array("half a bo".utf8),
                                           error: TransportError(.upstreamReset, "closed before the body was complete"))
        reset.responseBody.cutShort = true
        let cut = try ParsedRecord(RecordFixture.processor().record(for: reset, id: "x"))
        XCTAssertEqual(cut["/data/truncated"], .bool(true))
        XCTAssertEqual(cut["/data/captured"], .number("9"))

        // A reset after a whole body cuts nothing.
        var late = reset
        late.responseBody.cutShort = false
        XCTAssertEqual(try ParsedRecord(RecordFixture.processor().record(for: late, id: "x"))["/data/truncated"], .bool(false))

        var random = SystemRandomNumberGenerator()
        let noise = (0..<2000).map { _ in UInt8.random(in: 0...255, using: &random) }
        let twice = RecordFixture.gzip(RecordFixture.gzip(noise))
        let stacked = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/octet-stream"),
                                                               ("Content-Encoding", "gzip, gzip")], body: twice)
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(decodeLimit: 1000)).record(for: stacked, id: "x"))
        guard case .number(let size)? = record["/data/size"], let decoded = Int(size) else { return XCTFail("no size") }
        XCTAssertLessThan(decoded, 1000, "the outer layer stopped at the limit, the inner one short of it")
        XCTAssertEqual(record["/data/truncated"], .bool(true))
    }

    /// Escaping makes control bytes six times longer: a logged string is cut so its JSON
    /// text stays within the decode limit, and the record says truncated.
    func testALoggedStringStaysWithinTheDecodeLimitAfterEscaping() throws {
        let controls = [UInt8](repeating: 0x01, count: 1000)
        let exchange = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")],
                                              body: RecordFixture.gzip(controls))
        let processor = RecordFixture.processor(ProcessorSettings(decodeLimit: 1000))
        let bytes = processor.record(for: exchange, id: "x")
        XCTAssertLessThan(bytes.count, 1000 + 2048, "the record grew to \(bytes.count) bytes")
        let record = try ParsedRecord(bytes)
        XCTAssertEqual(record["/result/success"], .string(String(repeating: "\u{01}", count: 166)))
        XCTAssertEqual(record["/data/size"], .number("1000"), "the decoded size stays what was decoded")
        XCTAssertEqual(record["/data/truncated"], .bool(true))

        // A cut falls between characters; text that fits is left whole.
        XCTAssertEqual(ExchangeProcessor.prefix(of: "ab\u{01}é", escapedWithin: 9), "ab\u{01}")
        XCTAssertEqual(ExchangeProcessor.prefix(of: "aé", escapedWithin: 2), "a")
        XCTAssertNil(ExchangeProcessor.prefix(of: "\u{01}\u{01}", escapedWithin: 12))
        XCTAssertNil(ExchangeProcessor.prefix(of: String(repeating: "a", count: 1000), escapedWithin: 1000))
    }

    /// A rule that keeps a route's bodies out of the log keeps the request's out too: the
    /// login's secret is in what the client sends.
    func testARuleKeepsTheRequestBodysSecretsOut() throws {
        let login = RecordFixture.exchange(method: "POST", url: "http://api.local:8080/v1/login",
                                           requestHeaders: [("Host", "api.local:8080"), ("Content-Type", "application/json")],
                                           requestBody: Array(#"{"user":"ann","pin":"1234"}"#.utf8),
                                           body: Array(#"{"ok":true,"pin":"1234"}"#.utf8))
        func record(_ kind: SerializerSpec.Kind, redact: [String] = []) throws -> ParsedRecord {
            var rule = RecordFixture.rule("login", kind)
            rule.match.path = Glob("/v1/login")
            rule.redact = redact.compactMap { try? JSONPointer($0) }
            return try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: login, id: "x"))
        }
        let none = try record(.none)
        XCTAssertNil(none["/request/body"], "serializer none logs no request body")
        XCTAssertEqual(try record(.data)["/request/body"], .object([JSON.Member("size", .number("27"))]))
        let redacted = try record(.json, redact: ["/pin"])
        XCTAssertEqual(redacted["/request/body"], .object([JSON.Member("user", .string("ann")), JSON.Member("pin", .string("[redacted]"))]))
        XCTAssertEqual(redacted["/result/success/pin"], .string("[redacted]"))
        // Without a rule the request body is logged as before.
        let plain = try ParsedRecord(RecordFixture.processor().record(for: login, id: "x"))
        XCTAssertEqual(plain["/request/body/pin"], .string("1234"))
    }

    /// Any value that escaping blows up (here event-stream data of control bytes) is dropped
    /// past the record bound, with the reason; the record stays small and whole.
    func testARecordPastTheBoundDropsItsValuesAndSaysWhy() throws {
        let limit = 1 << 20
        let processor = RecordFixture.processor(ProcessorSettings(decodeLimit: limit))
        XCTAssertEqual(processor.maxRecordBytes, 3 << 20)
        // 1 MiB of control bytes in one event's data: 6 MiB escaped.
        let events = Array("data: ".utf8) + [UInt8](repeating: 0x01, count: limit - 8) + Array("\n\n".utf8)
        let stream = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/event-stream")], body: events)
        let bytes = processor.record(for: stream, id: "x")
        XCTAssertLessThan(bytes.count, 8192, "the record kept its escaped values")
        let record = try ParsedRecord(bytes)
        XCTAssertEqual(record["/result/failure/reason"], .string("recordTooLarge"))
        XCTAssertEqual(record["/data/truncated"], .bool(true))
        XCTAssertEqual(record["/data/size"], .number(String(events.count)), "the sizes stay what was seen")

        // Under the bound nothing changes.
        let short = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/event-stream")],
                                           body: Array("data: \u{01}\n\n".utf8))
        XCTAssertNotNil(try ParsedRecord(processor.record(for: short, id: "x"))["/result/success"])
    }

    func testDecodeLimitTruncatesTheDecodedBody() throws {
        let plain = [UInt8](repeating: UInt8(ascii: "a"), count: 5000)
        let exchange = RecordFixture.exchange(
            responseHeaders: [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")], body: RecordFixture.gzip(plain))
        let processor = RecordFixture.processor(ProcessorSettings(decodeLimit: 1000))
        let record = try ParsedRecord(processor.record(for: exchange, id: "x"))
        XCTAssertEqual(record["/data/size"], .number("1000"))
        XCTAssertEqual(record["/data/truncated"], .bool(true))
        XCTAssertEqual(record["/result/success"], .string(String(repeating: "a", count: 1000)))
    }

    func testTransportErrorRecord() throws {
        var exchange = RecordFixture.exchange(status: nil, error: TransportError(.upstreamConnectFailed, "connect to 10.0.0.1:80: Connection refused"))
        exchange.clock.connected = nil
        exchange.clock.requestSent = nil
        exchange.clock.firstResponseByte = nil
        exchange.clock.lastResponseByte = nil
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record.keys(""), httpKeys)
        XCTAssertEqual(record["/response"], .null)
        XCTAssertEqual(record["/result"], .object([JSON.Member("failure", .object([
            JSON.Member("error", .string("transportFailed")),
            JSON.Member("reason", .string("upstreamConnectFailed")),
            JSON.Member("message", .string("connect to 10.0.0.1:80: Connection refused")),
        ]))]))
        XCTAssertEqual(record["/error"], .object([
            JSON.Member("code", .string("upstreamConnectFailed")),
            JSON.Member("message", .string("connect to 10.0.0.1:80: Connection refused")),
        ]))
        XCTAssertEqual(record["/data/size"], .number("0"))
        // Completed at the last point reached (dnsDone), never before the start.
        XCTAssertEqual(record["/timeline/requestCompletedTime"], .string("2026-12-02T10:11:12.125000Z"))
        XCTAssertEqual(record["/timeline/initialResponseTime"], .string("2026-12-02T10:11:12.125000Z"))
        XCTAssertEqual(record["/metrics/wait"], .null)
        XCTAssertEqual(record["/metrics/receive"], .null)
    }

    func testTransportErrorAfterThePartialResponseStillCarriesTheError() throws {
        let exchange = RecordFixture.exchange(body: Array(#"{"a":"#.utf8), totalBytes: 5,
                                              error: TransportError(.upstreamReset, "connection reset by peer"))
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/response/status"], .number("200"))
        XCTAssertEqual(record["/result/failure/reason"], .string("upstreamReset"))
        XCTAssertEqual(record["/error/code"], .string("upstreamReset"))
    }

    func testStatusValidationFailureRecord() throws {
        let rule = RecordFixture.rule("strict") {
            var validation = ValidationSpec()
            validation.statusCodes = [StatusPattern("200-299")!]
            validation.contentTypes = ["text/html"]
            $0.validate = validation
        }
        let exchange = RecordFixture.exchange(status: 404, reason: "Not Found", body: Array(#"{"e":1}"#.utf8))
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: exchange, id: "x"))
        XCTAssertEqual(record["/rule"], .string("strict"))
        XCTAssertEqual(record["/result/failure/error"], .string("responseValidationFailed"))
        XCTAssertEqual(record["/result/failure/reason"], .string("unacceptableStatusCode"))
        XCTAssertEqual(record["/result/failure/message"], .string("Response status code was unacceptable: 404."))
        XCTAssertEqual(record["/error"], .null)
    }

    func testContentTypeValidationFailureRecord() throws {
        let rule = RecordFixture.rule("typed") {
            var validation = ValidationSpec()
            validation.statusCodes = [StatusPattern("2xx")!]
            validation.contentTypes = ["text/html", "application/xml"]
            $0.validate = validation
        }
        let exchange = RecordFixture.exchange(body: Array(#"{"e":1}"#.utf8))
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: exchange, id: "x"))
        XCTAssertEqual(record["/result/failure/reason"], .string("unacceptableContentType"))
        XCTAssertEqual(record["/result/failure/message"],
                       .string(#"Response Content-Type "application/json" does not match any acceptable types: application/xml, text/html."#))
    }

    func testPassingValidationLetsTheSerializerRun() throws {
        let rule = RecordFixture.rule("ok") {
            var validation = ValidationSpec()
            validation.statusCodes = [StatusPattern("2xx")!]
            validation.contentTypes = ["application/*"]
            $0.validate = validation
        }
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule]))
            .record(for: RecordFixture.exchange(body: Array("[1]".utf8)), id: "x"))
        XCTAssertEqual(record["/result/success"], .array([.number("1")]))
    }

    func testSelectThenRedactPointers() throws {
        let rule = RecordFixture.rule("github") {
            $0.select = [try! JSONPointer("/full_name"), try! JSONPointer("/owner/login"), try! JSONPointer("/owner/id")]
            $0.redact = [try! JSONPointer("/owner/id")]
        }
        let body = #"{"id":1,"full_name":"a/b","owner":{"id":99,"login":"a","url":"u"},"private":false}"#
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule]))
            .record(for: RecordFixture.exchange(body: Array(body.utf8)), id: "x"))
        XCTAssertEqual(record["/result/success"], .object([
            JSON.Member("full_name", .string("a/b")),
            JSON.Member("owner", .object([JSON.Member("id", .string("[redacted]")), JSON.Member("login", .string("a"))])),
        ]))
    }

    /// Both pointer lists name places in the document as received; select closes up arrays,
    /// so redacting after it missed `/items/2/card` (it had become `/items/0/card`).
    func testRedactPointersIntoArraysHoldWhatSelectKeeps() throws {
        let rule = RecordFixture.rule("cards") {
            $0.select = [try! JSONPointer("/items/2")]
            $0.redact = [try! JSONPointer("/items/2/card")]
        }
        let body = #"{"items":[{"card":"A"},{"card":"B"},{"card":"SECRET-CARD"}]}"#
        let line = String(decoding: RecordFixture.processor(ProcessorSettings(rules: [rule]))
            .record(for: RecordFixture.exchange(body: Array(body.utf8)), id: "x"), as: UTF8.self)
        XCTAssertFalse(line.contains("SECRET-CARD"), line)
        let record = try ParsedRecord(Array(line.utf8))
        XCTAssertEqual(record["/result/success"], .object([
            JSON.Member("items", .array([.object([JSON.Member("card", .string("[redacted]"))])])),
        ]))
    }

    func testRedactedHeadersNeverReachTheLine() throws {
        let exchange = RecordFixture.exchange(
            requestHeaders: [("Host", "h"), ("Authorization", "Bearer SECRET-TOKEN-1"), ("cookie", "sid=SECRET-COOKIE-2"),
                             ("Proxy-Authorization", "Basic SECRET-PROXY-3")],
            responseHeaders: [("Content-Type", "application/json"), ("Set-Cookie", "sid=SECRET-SETCOOKIE-4; HttpOnly"),
                              ("SET-COOKIE", "other=SECRET-SETCOOKIE-5")],
            body: Array("{}".utf8))
        let settings = ProcessorSettings(redactHeaders: ["authorization", "proxy-authorization", "Cookie", "set-cookie"])
        let bytes = RecordFixture.processor(settings).record(for: exchange, id: "x")
        let record = try ParsedRecord(bytes)
        XCTAssertFalse(record.line.contains("SECRET"), record.line)
        XCTAssertEqual(record["/request/headers/1"], .array([.string("Authorization"), .string("[redacted]")]))
        XCTAssertEqual(record["/request/headers/2"], .array([.string("cookie"), .string("[redacted]")]))
        XCTAssertEqual(record["/response/headers/2"], .array([.string("SET-COOKIE"), .string("[redacted]")]))
        XCTAssertEqual(record["/request/headers/0"], .array([.string("Host"), .string("h")]))
    }

    func testHeaderBytesThatAreNotUTF8AreLoggedWithReplacementCharacters() throws {
        // A parsed head keeps the bytes as sent (Latin-1 "café", a control-free obs-text byte);
        // the record must still be UTF-8 JSON.
        let wire = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Name: caf".utf8) + [0xE9]
            + Array("\r\nX-Quote: a\"b\\c\r\n\r\n".utf8)
        let parsed = try wire.withUnsafeBytes { try HTTPHeadParser.parseResponseHead($0, maxHeadBytes: 4096) }
        guard case .complete(let response, _) = parsed else { return XCTFail("head not parsed") }
        var exchange = RecordFixture.exchange(body: Array("{}".utf8))
        exchange.response = response
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/response/headers/1"], .array([.string("X-Name"), .string("caf\u{FFFD}")]))
        XCTAssertEqual(record["/response/headers/2"], .array([.string("X-Quote"), .string("a\"b\\c")]))
    }

    func testJSONKeysRedactedAtAnyDepthInResponseAndRequestBodies() throws {
        let responseBody = #"{"token":"SECRET-A","data":[{"user":"u","Password":"SECRET-B"},[{"access_token":"SECRET-C"}]],"n":1}"#
        let requestBody = #"{"login":{"password":"SECRET-D","name":"n"},"list":[{"refresh_token":"SECRET-E"}]}"#
        let exchange = RecordFixture.exchange(
            method: "POST", requestHeaders: [("Host", "h"), ("Content-Type", "application/json")],
            requestBody: Array(requestBody.utf8), body: Array(responseBody.utf8))
        let settings = ProcessorSettings(redactJSONKeys: ["password", "token", "access_token", "refresh_token"])
        let record = try ParsedRecord(RecordFixture.processor(settings).record(for: exchange, id: "x"))
        XCTAssertFalse(record.line.contains("SECRET"), record.line)
        XCTAssertEqual(record["/result/success/token"], .string("[redacted]"))
        XCTAssertEqual(record["/result/success/data/0/Password"], .string("[redacted]"))
        XCTAssertEqual(record["/result/success/data/0/user"], .string("u"))
        XCTAssertEqual(record["/result/success/data/1/0/access_token"], .string("[redacted]"))
        XCTAssertEqual(record.keys("/request"), ["method", "url", "httpVersion", "headers", "bodySize", "body"])
        XCTAssertEqual(record["/request/bodySize"], .number(String(requestBody.utf8.count)))
        XCTAssertEqual(record["/request/body/login"], .object([
            JSON.Member("password", .string("[redacted]")), JSON.Member("name", .string("n")),
        ]))
        XCTAssertEqual(record["/request/body/list/0/refresh_token"], .string("[redacted]"))
    }

    func testRequestBodyFormIsAStringAndBadJSONIsABodyError() throws {
        let form = RecordFixture.exchange(
            method: "POST", requestHeaders: [("Content-Type", "application/x-www-form-urlencoded")],
            requestBody: Array("a=1&b=%C3%A9".utf8), body: Array("{}".utf8))
        let formRecord = try ParsedRecord(RecordFixture.processor().record(for: form, id: "x"))
        XCTAssertEqual(formRecord["/request/body"], .string("a=1&b=%C3%A9"))

        let bad = RecordFixture.exchange(
            method: "POST", requestHeaders: [("Content-Type", "application/json")],
            requestBody: Array("{not json".utf8), body: Array("{}".utf8))
        let badRecord = try ParsedRecord(RecordFixture.processor().record(for: bad, id: "x"))
        XCTAssertNil(badRecord["/request/body"])
        XCTAssertEqual(badRecord["/request/bodyError/reason"], .string("jsonSerializationFailed"))
        XCTAssertEqual(badRecord["/result/success"], .object([]))
    }

    /// Urlencoded fields named in redact.jsonKeys: in the body logged as a string (request
    /// bodies by default) and in the form serializer's pairs.
    func testFormFieldsNamedInJSONKeysAreRedacted() throws {
        let processor = RecordFixture.processor(ProcessorSettings(
            rules: [RecordFixture.rule("forms", .form)], redactJSONKeys: ["password", "token"]))
        let x = RecordFixture.exchange(
            method: "POST", requestHeaders: [("Content-Type", "application/x-www-form-urlencoded")],
            requestBody: Array("user=u&Password=SECRET-1&pass%77ord=SECRET-2&flag&token=&user%5Bpassword%5D=SECRET-5".utf8),
            responseHeaders: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array("a=1&TOKEN=SECRET-3&items[0][token]=SECRET-6&passwords=kept".utf8))
        let line = String(decoding: processor.record(for: x, id: "x"), as: UTF8.self)
        XCTAssertFalse(line.contains("SECRET"), line)
        let record = try ParsedRecord(Array(line.utf8))
        XCTAssertEqual(record["/request/body"],
                       .string("user=u&Password=[redacted]&pass%77ord=[redacted]&flag&token=[redacted]&user%5Bpassword%5D=[redacted]"))
        // Bracket notation (Rails, PHP, qs) names nested fields: each part is a name.
        XCTAssertEqual(record["/result/success"], .array([
            .array([.string("a"), .string("1")]), .array([.string("TOKEN"), .string("[redacted]")]),
            .array([.string("items[0][token]"), .string("[redacted]")]), .array([.string("passwords"), .string("kept")]),
        ]))

        // A JSON document sent with the form type and parsed by a json rule keeps key redaction.
        let json = RecordFixture.processor(ProcessorSettings(rules: [RecordFixture.rule("j", .json) { $0.select = [try! JSONPointer("")] }],
                                                             redactJSONKeys: ["password"]))
        let y = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/x-www-form-urlencoded")],
                                       body: Array(#"[{"password":"SECRET-4"}]"#.utf8))
        let jsonLine = String(decoding: json.record(for: y, id: "y"), as: UTF8.self)
        XCTAssertFalse(jsonLine.contains("SECRET"), jsonLine)
    }

    /// `?access_token=…` (OAuth, WebSocket auth) in the logged URL.
    func testQueryParametersNamedInJSONKeysAreRedacted() throws {
        let processor = RecordFixture.processor(ProcessorSettings(redactJSONKeys: ["access_token"]))
        let x = RecordFixture.exchange(url: "http://api.local/v1?x=1&Access_Token=SECRET-1&y#frag")
        let line = String(decoding: processor.record(for: x, id: "x"), as: UTF8.self)
        XCTAssertFalse(line.contains("SECRET"), line)
        XCTAssertEqual(try ParsedRecord(Array(line.utf8))["/request/url"], .string("http://api.local/v1?x=1&Access_Token=[redacted]&y#frag"))
        // Without such a parameter the URL is written as it came.
        let plain = RecordFixture.exchange(url: "http://api.local/v1?x=1&token_type=a")
        XCTAssertEqual(try ParsedRecord(processor.record(for: plain, id: "x"))["/request/url"], .string("http://api.local/v1?x=1&token_type=a"))

        let ws = CapturedTunnel(kind: .websocket, client: "c", target: "http://h/ws?access_token=SECRET-2", status: 101,
                                bytesFromClient: 0, bytesFromUpstream: 0, start: 1, end: 2, closedBy: .client,
                                upgrade: RecordFixture.exchange(url: "http://h/ws?access_token=SECRET-2"))
        let wsLine = String(decoding: processor.record(for: ws, id: "w"), as: UTF8.self)
        XCTAssertFalse(wsLine.contains("SECRET"), wsLine)
    }

    /// Server-sent events carry JSON in their data lines more often than not.
    func testJSONInEventStreamDataHasItsKeysRedacted() throws {
        let processor = RecordFixture.processor(ProcessorSettings(redactJSONKeys: ["access_token"]))
        let x = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/event-stream")],
                                       body: Array("event: auth\ndata: {\"access_token\":\"SECRET-1\",\"n\":1}\n\ndata: plain text\n\n".utf8))
        let line = String(decoding: processor.record(for: x, id: "x"), as: UTF8.self)
        XCTAssertFalse(line.contains("SECRET"), line)
        let record = try ParsedRecord(Array(line.utf8))
        XCTAssertEqual(record["/serializer"], .string("eventStream"))
        XCTAssertEqual(record["/result/success/0/data"], .string(#"{"access_token":"[redacted]","n":1}"#))
        XCTAssertEqual(record["/result/success/1/data"], .string("plain text"))
    }

    /// With `assemble` the value is an object; the events in it keep their data redaction,
    /// the assembled text is the streamed prose as sent.
    func testAssembledEventStreamRecord() throws {
        var spec = SerializerSpec(kind: .eventStream)
        spec.assemble = try JSONPointer("/delta/text")
        spec.maxEvents = 1
        let rule = Rule(name: "stream", match: RuleMatch(), serializer: spec)
        let processor = RecordFixture.processor(ProcessorSettings(rules: [rule], redactJSONKeys: ["access_token"]))
        let body = "data: {\"access_token\":\"SECRET-1\",\"delta\":{\"text\":\"Hel\"}}\n\n"
            + "data: {\"delta\":{\"text\":\"lo\"}}\n\ndata: [DONE]\n\n"
        let x = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/event-stream")], body: Array(body.utf8))
        let line = String(decoding: processor.record(for: x, id: "x"), as: UTF8.self)
        XCTAssertFalse(line.contains("SECRET"), line)
        let record = try ParsedRecord(Array(line.utf8))
        XCTAssertEqual(record["/serializer"], .string("eventStream"))
        XCTAssertEqual(record["/result/success/assembled"], .string("Hello"))
        XCTAssertEqual(record["/result/success/eventCount"], .number("3"))
        XCTAssertEqual(record["/result/success/events/0/data"], .string(#"{"access_token":"[redacted]","delta":{"text":"Hel"}}"#))
        XCTAssertNil(record["/result/success/events/1"])
        XCTAssert(line.contains(#""success":{"assembled":"Hello","eventCount":3,"events":[{"event":"message","data":"#), line)
    }

    /// `application/msgpack` goes to the msgpack serializer by default; its value is the
    /// record's JSON, its failure names the offset.
    func testMsgPackRecord() throws {
        let processor = RecordFixture.processor(ProcessorSettings(redactJSONKeys: ["token"]))
        // {"id": 2^64-1, "token": "s", "at": timestamp 32 of 0, 1: bin 0x01}
        let body: [UInt8] = [0x84, 0xA2, 0x69, 0x64, 0xCF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                             0xA5, 0x74, 0x6F, 0x6B, 0x65, 0x6E, 0xA1, 0x73,
                             0xA2, 0x61, 0x74, 0xD6, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x01, 0xC4, 0x01, 0x01]
        let x = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/x-msgpack")], body: body)
        let line = String(decoding: processor.record(for: x, id: "x"), as: UTF8.self)
        XCTAssert(line.contains(#""serializer":"msgpack""#), line)
        XCTAssert(line.contains(#""success":{"id":18446744073709551615,"token":"[redacted]","at":"1970-01-01T00:00:00Z","1":{"base64":"AQ=="}}"#), line)

        let bad = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/msgpack")], body: [0x92, 0x01, 0xC1])
        let record = try ParsedRecord(processor.record(for: bad, id: "x"))
        XCTAssertEqual(record["/result/failure/reason"], .string("msgpackSerializationFailed"))
        XCTAssertEqual(record["/result/failure/message"],
                       .string("MessagePack could not be serialized because of error:\nbyte 0xc1 is never used in MessagePack at byte offset 2"))

        // A rule's select and redact pointers reach into the value.
        var rule = Rule(name: "m", match: RuleMatch(), serializer: SerializerSpec(kind: .msgpack), select: [try JSONPointer("/id")])
        rule.redact = []
        let selected = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: x, id: "x"))
        XCTAssertEqual(selected["/result/success"], .object([JSON.Member("id", .number("18446744073709551615"))]))
    }

    /// `application/grpc` goes to the grpc serializer by default: its messages split, each
    /// decoded without a schema; a gzip message (`grpc-encoding: gzip`) is inflated first; a
    /// cut message is reported; framing that is not gRPC fails naming the offset.
    func testGRPCRecord() throws {
        let processor = RecordFixture.processor(ProcessorSettings())
        let plain: [UInt8] = [0x08, 0x96, 0x01, 0x12, 0x02] + Array("ok".utf8)
        let zipped = RecordFixture.gzip(plain)
        let body: [UInt8] = [0, 0, 0, 0, UInt8(plain.count)] + plain + [1, 0, 0, 0, UInt8(zipped.count)] + zipped + [0, 0, 0, 0, 9, 0x08]
        let x = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/grpc"), ("grpc-encoding", "gzip")], body: body)
        let record = try ParsedRecord(processor.record(for: x, id: "x"))
        XCTAssertEqual(record["/serializer"], .string("grpc"))
        XCTAssertEqual(record["/result/success/messages/0/message"], .object([JSON.Member("1", .number("150")), JSON.Member("2", .string("ok"))]))
        XCTAssertEqual(record["/result/success/messages/1/compressed"], .bool(true))
        XCTAssertEqual(record["/result/success/messages/1/message"], record["/result/success/messages/0/message"])
        XCTAssertEqual(record["/result/success/cutShort/offset"], .number(String(10 + plain.count + zipped.count)))

        let json = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/grpc+json")],
                                          body: [0, 0, 0, 0, 8] + Array(#"{"a":[1]}"#.utf8.prefix(8)) + [0, 0, 0, 0, 2] + Array("{}".utf8))
        let jsonRecord = try ParsedRecord(processor.record(for: json, id: "x"))
        XCTAssertEqual(jsonRecord["/serializer"], .string("grpc"), "not the +json suffix's json serializer")
        XCTAssertNotNil(jsonRecord["/result/success/messages/0/error"], "a message that is not JSON keeps its bytes and says why")
        XCTAssertEqual(jsonRecord["/result/success/messages/1/message"], .object([]))

        let bad = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/grpc")], body: [7, 0, 0, 0, 0])
        let badRecord = try ParsedRecord(processor.record(for: bad, id: "x"))
        XCTAssertEqual(badRecord["/result/failure/reason"], .string("grpcSerializationFailed"))
    }

    /// `application/x-protobuf` goes to the protobuf serializer: one message without a
    /// schema; `redact.jsonKeys` cannot name its numbered fields, but a rule's pointers can.
    func testProtobufRecord() throws {
        let processor = RecordFixture.processor(ProcessorSettings())
        let x = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/x-protobuf")],
                                       body: [0x08, 0x96, 0x01, 0x12, 0x02] + Array("ok".utf8))
        let record = try ParsedRecord(processor.record(for: x, id: "x"))
        XCTAssertEqual(record["/serializer"], .string("protobuf"))
        XCTAssertEqual(record["/result/success"], .object([JSON.Member("1", .number("150")), JSON.Member("2", .string("ok"))]))
        let bad = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/protobuf")], body: [0x0F])
        let badRecord = try ParsedRecord(processor.record(for: bad, id: "x"))
        XCTAssertEqual(badRecord["/result/failure/reason"], .string("protobufSerializationFailed"))
        XCTAssertEqual(badRecord["/result/failure/message"],
                       .string("Protobuf could not be serialized because of error:\nwire type 7 does not exist at byte offset 0"))
        var rule = Rule(name: "p", match: RuleMatch(), serializer: SerializerSpec(kind: .protobuf), select: [try JSONPointer("/2")])
        rule.redact = []
        let selected = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: x, id: "x"))
        XCTAssertEqual(selected["/result/success"], .object([JSON.Member("2", .string("ok"))]))
    }

    /// JSON sent as text/plain (fetch's default) or as a form (`curl -d`) is logged by the
    /// string serializer; its secrets were written as sent.
    func testJSONInAStringValueHasItsKeysRedacted() throws {
        let processor = RecordFixture.processor(ProcessorSettings(redactJSONKeys: ["password"]))
        for contentType in ["text/plain;charset=UTF-8", "application/x-www-form-urlencoded"] {
            let x = RecordFixture.exchange(
                method: "POST", requestHeaders: [("Content-Type", contentType)],
                requestBody: Array(#"{"user":"u","Password":"SECRET-1"}"#.utf8),
                responseHeaders: [("Content-Type", "text/plain")], body: Array(#" [ {"password" : "SECRET-2"} ] "#.utf8))
            let line = String(decoding: processor.record(for: x, id: "x"), as: UTF8.self)
            XCTAssertFalse(line.contains("SECRET"), line)
            let record = try ParsedRecord(Array(line.utf8))
            XCTAssertEqual(record["/request/body"], .string(#"{"user":"u","Password":"[redacted]"}"#))
            XCTAssertEqual(record["/result/success"], .string(#"[{"password":"[redacted]"}]"#))
        }
        // Text that is not JSON, or JSON without such a key, keeps its exact form.
        let plain = RecordFixture.exchange(
            method: "POST", requestHeaders: [("Content-Type", "text/plain")], requestBody: Array(#"{ "a" : 1 }"#.utf8),
            responseHeaders: [("Content-Type", "text/plain")], body: Array("{password: not json".utf8))
        let record = try ParsedRecord(processor.record(for: plain, id: "x"))
        XCTAssertEqual(record["/request/body"], .string(#"{ "a" : 1 }"#))
        XCTAssertEqual(record["/result/success"], .string("{password: not json"))
    }

    /// Request bodies take the one-pass compactor (only key redaction applies to them):
    /// the record must hold exactly what parse, redact and write gave before.
    func testRequestJSONBodiesAreWrittenAsParseRedactWriteWouldWriteThem() throws {
        let keys = ["password", "token"]
        let processor = RecordFixture.processor(ProcessorSettings(redactJSONKeys: Set(keys)))
        let bodies = [
            #" { "a" : [1, 2.50, -0e+3, true, null, 1E400], "Password": {"x":1}, "s":"\/\u00e9\ud83d\ude00\"\t" } "#,
            #""a string""#, "12", "[]", "{}", #"{"a":{"token":[1,2]},"a":2,"TOKEN":"x"}"#, "\"\\u0000\"",
            "{\"caf\u{E9}\": \"\u{1F600}\"}", "{not json", "[1,]", #"{"a":1}x"#, "\u{FEFF}{}", "\"\u{1}\"",
        ]
        for body in bodies {
            let exchange = RecordFixture.exchange(
                method: "POST", requestHeaders: [("Host", "h"), ("Content-Type", "application/json")],
                requestBody: Array(body.utf8), body: Array("{}".utf8))
            let line = String(decoding: processor.record(for: exchange, id: "x"), as: UTF8.self)
            if let tree = try? JSONParser.parse(Array(body.utf8), allowFragments: SerializerSpec(kind: .json).allowFragments) {
                var expected: [UInt8] = []
                JSONWriter.write(JSONKeySet(keys).redacting(tree), into: &expected)
                XCTAssertTrue(line.contains(#","body":"# + String(decoding: expected, as: UTF8.self) + "}"),
                              "\(body) -> \(line)")
            } else {
                let record = try ParsedRecord(Array(line.utf8))
                XCTAssertNil(record["/request/body"], body)
                XCTAssertEqual(record["/request/bodyError/reason"], JSON.string("jsonSerializationFailed"), body)
            }
        }
    }

    func testGzippedRequestBodyIsDecoded() throws {
        let plain = Array(#"{"q":"x"}"#.utf8)
        let exchange = RecordFixture.exchange(
            method: "POST", requestHeaders: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
            requestBody: RecordFixture.gzip(plain), body: Array("{}".utf8))
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/request/body"], .object([JSON.Member("q", .string("x"))]))
    }

    func testStringSerializerWithExplicitWindows1252() throws {
        let rule = RecordFixture.rule("legacy", .string) { $0.serializer.encoding = "windows-1252" }
        // 0x80 is € in windows-1252 (a control character in ISO-8859-1); 0xE9 is é.
        let exchange = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/plain; charset=utf-8")],
                                              body: [0x80, 0x20, 0x63, 0x61, 0x66, 0xE9])
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: exchange, id: "x"))
        XCTAssertEqual(record["/serializer"], .string("string"))
        XCTAssertEqual(record["/result/success"], .string("€ café"))
        XCTAssertEqual(record["/response/charset"], .string("windows-1252"))
    }

    func testDataSerializerLogsBase64PrefixAndSize() throws {
        let bytes: [UInt8] = Array(0..<200)
        let withPrefix = RecordFixture.rule("bin", .data) { $0.serializer.base64Bytes = 4 }
        let exchange = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/octet-stream")], body: bytes)
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [withPrefix])).record(for: exchange, id: "x"))
        XCTAssertEqual(record["/result/success"], .object([
            JSON.Member("base64", .string("AAECAw==")), JSON.Member("size", .number("200")),
        ]))

        let sizeOnly = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(sizeOnly["/serializer"], .string("data"))
        XCTAssertEqual(sizeOnly["/result/success"], .object([JSON.Member("size", .number("200"))]))
    }

    func testNoneSerializerLogsNull() throws {
        let rule = RecordFixture.rule("quiet", .none)
        let exchange = RecordFixture.exchange(body: Array("{broken".utf8))
        let record = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: exchange, id: "x"))
        XCTAssertEqual(record["/serializer"], .string("none"))
        XCTAssertEqual(record["/result"], .object([JSON.Member("success", .null)]))
        XCTAssertEqual(record["/timeline/serializationCompletedTime"], .string("2026-12-02T10:11:13.000000Z"))

        // No serializer runs, but a failed exchange is still a failure, as in Alamofire's plain response handler.
        let failed = RecordFixture.exchange(status: nil, error: TransportError(.upstreamTimeout, "no response in 60 s"))
        let failedRecord = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [rule])).record(for: failed, id: "x"))
        XCTAssertEqual(failedRecord["/result/failure/reason"], .string("upstreamTimeout"))
    }

    func testEmptyResponseOptions() throws {
        let noContent = RecordFixture.exchange(status: 204, reason: "No Content", body: [])
        let defaultRecord = try ParsedRecord(RecordFixture.processor().record(for: noContent, id: "x"))
        XCTAssertEqual(defaultRecord["/result"], .object([JSON.Member("success", .null)]))

        let emptyOK = RecordFixture.exchange(body: [])
        let strict = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [RecordFixture.rule("j")]))
            .record(for: emptyOK, id: "x"))
        XCTAssertEqual(strict["/result/failure/reason"], .string("inputDataNilOrZeroLength"))

        let lenient = RecordFixture.rule("j") { $0.serializer.emptyResponseCodes = [200] }
        let lenientRecord = try ParsedRecord(RecordFixture.processor(ProcessorSettings(rules: [lenient])).record(for: emptyOK, id: "x"))
        XCTAssertEqual(lenientRecord["/result"], .object([JSON.Member("success", .null)]))
    }

    func testBinaryPlistIsSniffedAndConverted() throws {
        let plist = try PropertyListSerialization.data(fromPropertyList: ["name": "tapwire", "n": 3], format: .binary, options: 0)
        let exchange = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/octet-stream")], body: Array(plist))
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/serializer"], .string("propertyList"))
        XCTAssertEqual(record["/result/success/name"], .string("tapwire"))
        XCTAssertEqual(record["/result/success/n"], .number("3"))
    }

    func testJSONParseFailureNamesTheReason() throws {
        let record = try ParsedRecord(RecordFixture.processor()
            .record(for: RecordFixture.exchange(body: Array("definitely not valid json".utf8)), id: "x"))
        XCTAssertEqual(record["/result/failure/error"], .string("responseSerializationFailed"))
        XCTAssertEqual(record["/result/failure/reason"], .string("jsonSerializationFailed"))
    }

    func testKeyRedactorAgreesWithJSONRedactingKeys() throws {
        let keys: Set<String> = ["password", "Token", "a"]
        let redactor = JSONKeySet(keys)
        let documents = [
            #"{"PASSWORD":1,"token":{"password":2},"list":[{"a":[1]},[{"A":null}],"x"],"b":{"c":{"tOkEn":"t"}}}"#,
            #"[{"password":"p"},{"nested":[[{"token":1}]]},3]"#,
            #""password""#,
            #"{"pass":1,"passwords":2,"é":{"a":0}}"#,
        ]
        for text in documents {
            let json = try JSONParser.parse(text)
            XCTAssertEqual(redactor.redacting(json), json.redactingKeys(keys), text)
        }
        XCTAssertEqual(redactor.redacting(try JSONParser.parse(#"{"Password":1}"#)).compactText, #"{"Password":"[redacted]"}"#)
    }

    func testUnknownCharsetParameterIsLoggedAsSent() throws {
        let exchange = RecordFixture.exchange(responseHeaders: [("Content-Type", "application/json; charset=x-klingon")],
                                              body: Array("1".utf8))
        let record = try ParsedRecord(RecordFixture.processor().record(for: exchange, id: "x"))
        XCTAssertEqual(record["/response/charset"], .string("x-klingon"))
        let text = RecordFixture.exchange(responseHeaders: [("Content-Type", "text/plain; charset=x-klingon")],
                                          body: [0xE9])
        let textRecord = try ParsedRecord(RecordFixture.processor().record(for: text, id: "x"))
        XCTAssertEqual(textRecord["/response/charset"], .string("iso-8859-1"), "the string serializer fell back to Latin-1")
        XCTAssertEqual(textRecord["/result/success"], .string("é"))
    }
}

/// A `FileDescriptorSet` written field by field: package `s`, `Req {string name = 1}`,
/// `Resp {int64 n = 1}`, `service Svc { rpc Call(Req) returns (Resp) }`.
enum TinyDescriptorSet {
    static func ld(_ field: UInt8, _ bytes: [UInt8]) -> [UInt8] { [field << 3 | 2, UInt8(bytes.count)] + bytes }
    static func text(_ field: UInt8, _ s: String) -> [UInt8] { ld(field, Array(s.utf8)) }
    static func varint(_ field: UInt8, _ v: UInt8) -> [UInt8] { [field << 3, v] }
    static var bytes: [UInt8] {
        let name = text(1, "name") + varint(3, 1) + varint(4, 1) + varint(5, 9) + text(10, "name")
        let n = text(1, "n") + varint(3, 1) + varint(4, 1) + varint(5, 3)
        let req = text(1, "Req") + ld(2, name)
        let resp = text(1, "Resp") + ld(2, n)
        let method = text(1, "Call") + text(2, ".s.Req") + text(3, ".s.Resp")
        let service = text(1, "Svc") + ld(2, method)
        let file = text(1, "s.proto") + text(2, "s") + ld(4, req) + ld(4, resp) + ld(6, service)
        return ld(1, file)
    }
}

final class GRPCSchemaRecordTests: XCTestCase {
    /// A `grpc` rule with a descriptor set: the method path picks the types, the request's
    /// messages decode as its input type, the response's as its output (64-bit as strings).
    func testTheMethodPathSelectsTheTypesBothWays() throws {
        var spec = SerializerSpec(kind: .grpc)
        spec.schema = try ProtobufSchema(descriptorSet: TinyDescriptorSet.bytes)
        let rule = Rule(name: "g", match: RuleMatch(), serializer: spec)
        let processor = RecordFixture.processor(ProcessorSettings(rules: [rule]))
        let request: [UInt8] = [0, 0, 0, 0, 5, 0x0A, 0x03] + Array("ann".utf8)
        var x = RecordFixture.exchange(method: "POST", url: "https://api.local/s.Svc/Call",
                                       requestHeaders: [("Content-Type", "application/grpc")], requestBody: request,
                                       responseHeaders: [("Content-Type", "application/grpc")], body: [0, 0, 0, 0, 2, 0x08, 0x2A])
        x.request.target = "/s.Svc/Call"
        let record = try ParsedRecord(processor.record(for: x, id: "x"))
        XCTAssertEqual(record["/result/success/messages/0/message"], .object([JSON.Member("n", .string("42"))]), record.line)
        XCTAssertEqual(record["/request/body/messages/0/message"], .object([JSON.Member("name", .string("ann"))]), record.line)
        // Another method: read without the schema.
        x.request.target = "/s.Svc/Other"
        let other = try ParsedRecord(processor.record(for: x, id: "y"))
        XCTAssertEqual(other["/result/success/messages/0/message"], .object([JSON.Member("1", .number("42"))]), other.line)
    }
}
