import Foundation
import XCTest
@testable import HTTP1

/// Replays the committed h11 corpus (Resources/h11-corpus/verdicts.json, written by
/// Fuzz/h11/generate_corpus.py) through Tapwire's head parsers and BodyFramer and
/// compares every verdict: which messages are accepted, their heads, body bytes and
/// where each one ends. Disagreements are failures unless `DifferentialAllowList`
/// names the case's category with the reason Tapwire deliberately differs.
final class DifferentialH11Tests: XCTestCase {
    func testTapwireAgreesWithH11ExceptAllowListedCases() throws {
        let corpus = try H11Corpus.load()
        XCTAssertGreaterThan(corpus.cases.count, 300, "corpus missing or truncated")
        var agreed = 0
        var allowed: [String: Int] = [:]
        var usedAllowances = Set<String>()
        for testCase in corpus.cases {
            let expected = testCase.h11Verdict
            let actual = TapwireReplay.verdict(testCase, testCase.bytes, maxHeadBytes: corpus.maxHeadBytes)
            if actual == expected {
                agreed += 1
                continue
            }
            guard let allowance = DifferentialAllowList.allowance(for: testCase.name) else {
                XCTFail("""
                    \(testCase.name): Tapwire and h11 disagree
                      h11:     \(expected) \(testCase.detail ?? "")
                      Tapwire: \(actual)
                    """)
                continue
            }
            // An allowed difference must still be the one described, not some other one.
            XCTAssertTrue(allowance.matches(tapwire: actual, h11: expected),
                          "\(testCase.name): allowed as '\(allowance.reason)' but h11 \(expected) vs Tapwire \(actual)")
            usedAllowances.insert(allowance.category)
            allowed[allowance.category, default: 0] += 1
        }
        let unused = Set(DifferentialAllowList.entries.map(\.category)).subtracting(usedAllowances)
        XCTAssertTrue(unused.isEmpty, "allow-list entries no case needs any more: \(unused.sorted())")
        print("h11 differential: \(corpus.cases.count) cases, \(agreed) agree, "
              + "\(corpus.cases.count - agreed) allowed differences "
              + allowed.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
    }

    /// The replay itself must see real differences, or the comparison above proves nothing.
    func testReplayDetectsADifferentVerdict() throws {
        let corpus = try H11Corpus.load()
        let valid = try XCTUnwrap(corpus.cases.first { $0.name == "valid/req-post-cl" })
        let data = valid.bytes
        let actual = TapwireReplay.verdict(valid, data, maxHeadBytes: corpus.maxHeadBytes)
        XCTAssertEqual(actual, valid.h11Verdict)
        XCTAssertEqual(actual.messages.first?.body, Array("a=1&b=2".utf8))
        XCTAssertNotEqual(TapwireReplay.verdict(valid, Array(data.dropLast()), maxHeadBytes: corpus.maxHeadBytes), valid.h11Verdict)
    }
}

/// Where Tapwire deliberately decides differently from h11 0.16. Each entry names a
/// case category (the part of the case name before "/", or a whole case name) and
/// which way the difference goes.
enum DifferentialAllowList {
    struct Entry {
        enum Direction {
            /// Tapwire refuses a message h11 accepts (or refuses it earlier in the stream).
            case tapwireStricter
            /// Tapwire accepts a message h11 refuses.
            case tapwireMoreLenient
        }
        var category: String
        var direction: Direction
        var reason: String

        func matches(tapwire: Verdict, h11: Verdict) -> Bool {
            switch direction {
            case .tapwireStricter:
                return tapwire.end == "reject" && tapwire.messages.count <= h11.messages.count
                    && Array(h11.messages.prefix(tapwire.messages.count)) == tapwire.messages
            case .tapwireMoreLenient:
                return h11.end == "reject" && h11.messages.count <= tapwire.messages.count
                    && Array(tapwire.messages.prefix(h11.messages.count)) == h11.messages
            }
        }
    }

    static let entries: [Entry] = [
        // Tapwire refuses what h11 tolerates.
        Entry(category: "cl-and-te", direction: .tapwireStricter,
              reason: "Content-Length with Transfer-Encoding is the request-smuggling vector; RFC 9112 §6.3 lets a recipient refuse it, h11 lets TE win"),
        Entry(category: "te-and-cl", direction: .tapwireStricter, reason: "as cl-and-te, other field order"),
        Entry(category: "te-http10", direction: .tapwireStricter,
              reason: "RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing; h11 decodes it as chunked"),
        Entry(category: "chunk-size-space-after", direction: .tapwireStricter,
              reason: "RFC 9112 §7.1 grammar has no white space after chunk-size unless a ';' extension follows; h11 allows trailing OWS"),
        Entry(category: "chunk-size-17-digits", direction: .tapwireStricter,
              reason: "Tapwire caps a chunk-size at 16 hex digits, leading zeros included (BodyFramerTests.testTooManyHexDigitsRefused); h11 allows 20"),
        Entry(category: "chunk-size-overflow", direction: .tapwireStricter,
              reason: "a chunk-size above UInt64 is refused at once; h11 accepts up to 20 hex digits and waits for the data"),
        Entry(category: "chunk-ext-nul", direction: .tapwireStricter,
              reason: "chunk extensions must be field-value characters; h11 skips everything after ';' unchecked"),
        Entry(category: "chunk-ext-bare-cr", direction: .tapwireStricter, reason: "as chunk-ext-nul: a bare CR is no chunk-ext character"),
        Entry(category: "chunk-trailer-obs-fold", direction: .tapwireStricter, reason: "trailers follow the head rules: obs-fold refused (RFC 9112 §5.2)"),
        Entry(category: "chunk-trailer-bare-lf", direction: .tapwireStricter, reason: "trailers follow the head rules: bare LF refused"),
        Entry(category: "obs-fold", direction: .tapwireStricter,
              reason: "RFC 9112 §5.2 lets a server answer obs-fold with 400 and a proxy refuse such a response with 502; h11 unfolds"),
        Entry(category: "obs-fold-tab", direction: .tapwireStricter, reason: "as obs-fold, folded with HTAB"),
        Entry(category: "value-del", direction: .tapwireStricter,
              reason: "DEL is no field-vchar (RFC 9110 §5.5); h11 accepts every byte but NUL and white space"),
        Entry(category: "value-esc", direction: .tapwireStricter, reason: "as value-del: CTL characters are refused in field values"),
        Entry(category: "bare-lf-everywhere", direction: .tapwireStricter,
              reason: "a bare LF line end is refused (RFC 9112 §2.2 only MAY accept it; mixed line ends are a smuggling vector); h11 accepts it"),
        Entry(category: "bare-lf-one-line", direction: .tapwireStricter, reason: "as bare-lf-everywhere, one header line"),
        Entry(category: "lf-only-terminator", direction: .tapwireStricter, reason: "as bare-lf-everywhere, the empty line ending the head"),
        Entry(category: "request-line/version-1.2", direction: .tapwireStricter,
              reason: "only HTTP/1.0 and 1.1 are parsed; RFC 9112 §2.3 says SHOULD treat 1.2 as 1.1, Tapwire refuses (h11 accepts any x.y)"),
        Entry(category: "request-line/version-2.0", direction: .tapwireStricter, reason: "HTTP/2.0 in an HTTP/1 request-line is refused"),
        Entry(category: "request-line/version-0.9", direction: .tapwireStricter, reason: "HTTP/0.9 is refused"),
        Entry(category: "status-line/version-1.2", direction: .tapwireStricter, reason: "as request-line/version-1.2, in a status-line"),
        Entry(category: "status-line/version-0.9", direction: .tapwireStricter, reason: "HTTP/0.9 is refused"),
        Entry(category: "status-line/reason-del", direction: .tapwireStricter, reason: "DEL is no reason-phrase character (RFC 9112 §4)"),
        Entry(category: "host/space-inside", direction: .tapwireStricter,
              reason: "RFC 9112 §3.2: a Host value that is not uri-host[:port] gets 400; h11 does not check Host syntax"),
        Entry(category: "host/slash", direction: .tapwireStricter, reason: "as host/space-inside"),
        Entry(category: "host/userinfo", direction: .tapwireStricter, reason: "as host/space-inside: '@' is no uri-host character"),
        Entry(category: "random/delete-obs-text-4", direction: .tapwireStricter, reason: "mutation put a space into Host: invalid Host"),
        Entry(category: "random/options-star-21", direction: .tapwireStricter, reason: "mutation put a tab into Host: invalid Host"),
        Entry(category: "random/odd-names-40", direction: .tapwireStricter, reason: "mutation made a bare LF line end"),
        Entry(category: "random/get-42", direction: .tapwireStricter, reason: "mutation made a bare LF line end and a 0xFF in Host"),
        Entry(category: "random/reason-obs-text-13", direction: .tapwireStricter, reason: "mutation made a bare LF line end"),

        // Tapwire accepts what h11 refuses: h11 implements only part of RFC 9112.
        Entry(category: "te-gzip-chunked", direction: .tapwireMoreLenient,
              reason: "h11 supports no coding but chunked; 'gzip, chunked' is valid framing (RFC 9112 §6.1) and a proxy forwards it as is"),
        Entry(category: "te-comma-chunked", direction: .tapwireMoreLenient,
              reason: "an empty list element is allowed (RFC 9110 §5.6.1); h11 wants the exact value 'chunked'"),
        Entry(category: "te-chunked-gzip", direction: .tapwireMoreLenient,
              reason: "response only: chunked not last means close-delimited (RFC 9112 §6.3 item 4); the request case is refused by both"),
        Entry(category: "te-identity", direction: .tapwireMoreLenient, reason: "response only: as te-chunked-gzip, read until close"),
        Entry(category: "te-xchunked", direction: .tapwireMoreLenient, reason: "response only: as te-chunked-gzip, read until close"),
        Entry(category: "chunk-size-bws-ext", direction: .tapwireMoreLenient,
              reason: "RFC 9112 §7.1.1 allows BWS before ';' of a chunk extension; h11's pattern has none"),
        Entry(category: "leading-crlf", direction: .tapwireMoreLenient,
              reason: "request only: RFC 9112 §2.2 says a server SHOULD ignore empty lines before the request-line; h11 refuses"),
        Entry(category: "leading-two-crlf", direction: .tapwireMoreLenient, reason: "as leading-crlf"),
    ]

    static func allowance(for caseName: String) -> Entry? {
        let category = caseName.split(separator: "/").first.map(String.init) ?? caseName
        return entries.first { $0.category == caseName } ?? entries.first { $0.category == category }
    }
}

/// One message as both sides describe it. Content-Length and Transfer-Encoding
/// fields are left out of `headers`: h11 rewrites them (merges equal lengths,
/// lowercases the coding) and the comparison of `body` and `consumed` already
/// covers what they mean.
struct Message: Equatable, CustomStringConvertible {
    var startLine: String
    var headers: [String]
    var body: [UInt8]
    var consumed: Int

    var description: String { "[\(startLine) | \(headers.count) fields | body \(body.count) | consumed \(consumed)]" }

    static func framingField(_ name: String) -> Bool {
        HTTPHeaders.equalNames(name, "content-length") || HTTPHeaders.equalNames(name, "transfer-encoding")
    }
}

struct Verdict: Equatable, CustomStringConvertible {
    var messages: [Message]
    /// "clean", "tunnel", "reject" or "incomplete" (see generate_corpus.py).
    var end: String
    var description: String { "\(messages) then \(end)" }
}

enum TapwireReplay {
    static let maxMessages = 4

    static func verdict(_ testCase: H11Corpus.Case, _ data: [UInt8], maxHeadBytes: Int) -> Verdict {
        var messages: [Message] = []
        var rest = data[...]
        while true {
            if rest.isEmpty || messages.count == maxMessages { return Verdict(messages: messages, end: "clean") }
            let step: Step
            do throws(HTTPParseError) {
                step = try parseOne(testCase, Array(rest), maxHeadBytes: maxHeadBytes)
            } catch {
                return Verdict(messages: messages, end: "reject")
            }
            switch step {
            case .incomplete:
                return Verdict(messages: messages, end: "incomplete")
            case .message(let message, let tunnel):
                messages.append(message)
                rest = rest.dropFirst(message.consumed)
                if tunnel { return Verdict(messages: messages, end: "tunnel") }
            }
        }
    }

    enum Step {
        case incomplete
        case message(Message, tunnel: Bool)
    }

    /// One message from the start of `bytes`, then the end of the stream, as the
    /// proxy engine would see it.
    static func parseOne(_ testCase: H11Corpus.Case, _ bytes: [UInt8], maxHeadBytes: Int) throws(HTTPParseError) -> Step {
        let startLine: String
        let headers: HTTPHeaders
        let length: Int
        let framing: BodyFraming
        var tunnel = false
        if testCase.kind == "request" {
            guard case .complete(let head, let n) = try Wire.parseRequest(bytes, max: maxHeadBytes) else { return .incomplete }
            startLine = "\(head.method) \(head.target) \(head.version)"
            (headers, length, framing) = (head.headers, n, try head.bodyFraming())
        } else {
            guard case .complete(let head, let n) = try Wire.parseResponse(bytes, max: maxHeadBytes) else { return .incomplete }
            let method = testCase.requestMethod ?? "GET"
            startLine = "\(head.version) \(head.status) \(head.reason)"
            (headers, length, framing) = (head.headers, n, try head.bodyFraming(requestMethod: method))
            tunnel = method == "CONNECT" && (200...299).contains(head.status)
        }
        var framer = BodyFramer(framing)
        var body: [UInt8] = []
        let taken = try withBytes(Array(bytes[length...])) { buffer throws(HTTPParseError) -> Int in
            try framer.consume(buffer) { body.append(contentsOf: $0) }
        }
        if !framer.isComplete && !framer.finishAtEOF() { return .incomplete }
        let fields = headers.filter { !Message.framingField($0.name) }.map { "\($0.name): \($0.value)" }
        return .message(Message(startLine: startLine, headers: fields, body: body, consumed: length + taken), tunnel: tunnel)
    }
}

/// verdicts.json as written by the generator.
struct H11Corpus: Decodable {
    var h11: String
    var seed: Int
    var maxHeadBytes: Int
    var cases: [Case]

    struct Case: Decodable {
        var name: String
        /// The raw bytes, one per code point.
        var input: String
        var kind: String
        var requestMethod: String?
        var messages: [H11Message]
        var end: String
        var detail: String?

        var bytes: [UInt8] { H11Message.bytes(input) }

        var h11Verdict: Verdict {
            Verdict(messages: messages.map { $0.message(kind: kind) }, end: end)
        }
    }

    /// Strings in the file hold one byte per code point (latin-1), so any byte survives JSON.
    struct H11Message: Decodable {
        var method: String?
        var target: String?
        var status: Int?
        var reason: String?
        var version: String
        var headers: [[String]]
        var body: String
        var consumed: Int

        static func bytes(_ latin1: String) -> [UInt8] { latin1.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }
        /// What Tapwire's parser makes of the same bytes: UTF-8, invalid sequences replaced.
        static func text(_ latin1: String) -> String { String(decoding: bytes(latin1), as: UTF8.self) }

        func message(kind: String) -> Message {
            let startLine = kind == "request"
                ? "\(Self.text(method ?? "")) \(Self.text(target ?? "")) HTTP/\(version)"
                : "HTTP/\(version) \(status ?? 0) \(Self.text(reason ?? ""))"
            let fields = headers.compactMap { pair -> String? in
                guard pair.count == 2, !Message.framingField(pair[0]) else { return nil }
                return "\(Self.text(pair[0])): \(Self.text(pair[1]))"
            }
            return Message(startLine: startLine, headers: fields, body: Self.bytes(body), consumed: consumed)
        }
    }

    static func load() throws -> H11Corpus {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Resources/h11-corpus/verdicts.json")
        let data = try Data(contentsOf: file)
        return try JSONDecoder().decode(H11Corpus.self, from: data)
    }
}
