import HTTP1
import XCTest
@testable import LogTools
import ResponseSerialization

/// The response a record holds, rebuilt for offline replay, and the index built from a log.
final class RecordedResponseTests: XCTestCase {
    static func record(id: Int = 7, method: String = "GET", url: String = "http://api.local/v1/items", status: Int = 201,
                       headers: String = #"[["Content-Type","application/json"]]"#, bodySize: Int = 40,
                       serializer: String = "json", result: String = #"{"success":{"b":1.50,"a":[1e400,2]}}"#,
                       data: String = #"{"size":40,"captured":40,"truncated":false,"contentEncoding":null}"#) -> String {
        #"{"id":"0000018c2b1f4a1e-\#(String(format: "%06x", id))","kind":"http","client":"127.0.0.1:1","#
            + #""request":{"method":"\#(method)","url":"\#(url)","httpVersion":"HTTP/1.1","headers":[],"bodySize":0},"#
            + #""response":{"status":\#(status),"reason":"Created","httpVersion":"HTTP/1.1","headers":\#(headers),"bodySize":\#(bodySize),"mimeType":null,"charset":null},"#
            + #""data":\#(data),"rule":"default","serializer":"\#(serializer)","result":\#(result),"error":null}"#
    }

    private func answer(_ text: String) throws -> ReplayedResponse {
        try RecordedResponse.answer(record: try JSONParser.parse(Array(text.utf8), allowFragments: false), id: "x")
    }

    private func refusal(_ text: String) -> String? {
        do { _ = try answer(text); return nil } catch { return "\(error)" }
    }

    func testJSONIsTheLoggedValueCompactWithFramingAndEncodingFieldsLeftOut() throws {
        let a = try answer(Self.record(
            headers: #"[["Content-Type","application/json"],["Content-Encoding","gzip"],["Content-Length","40"],["Connection","keep-alive, X-Hop"],["X-Hop","1"],["Set-Cookie","[redacted]"],["ETag","\"v1\""]]"#))
        XCTAssertEqual(a.status, 201)
        XCTAssertEqual(a.reason, "Created")
        XCTAssertEqual(String(decoding: a.body, as: UTF8.self), #"{"b":1.50,"a":[1e400,2]}"#)
        XCTAssertEqual(a.headers.map(\.name), ["Content-Type", "ETag"], "framing, hop-by-hop and redacted fields are not replayed")
    }

    /// A HEAD answer's Content-Length describes a body it does not carry: kept apart, for
    /// answering a HEAD, never among the fields (a GET answered with it would hang).
    func testAHeadAnswerKeepsItsContentLengthApart() throws {
        let head = try answer(Self.record(method: "HEAD", headers: #"[["Content-Type","application/json"],["Content-Length","40"]]"#,
                                          bodySize: 0, serializer: "none", result: #"{"success":null}"#))
        XCTAssertEqual(head.headers.map { "\($0.name): \($0.value)" }, ["Content-Type: application/json"])
        XCTAssertEqual(head.body, [])
        XCTAssertTrue(head.fromHEAD)
        XCTAssertEqual(head.headLength, "40")
        XCTAssertFalse(head.isFull)
        // A length counted in encoded bytes describes nothing the replay sends (it decodes).
        let encoded = try answer(Self.record(method: "HEAD", headers: #"[["Content-Encoding","gzip"],["Content-Length","12"]]"#,
                                             bodySize: 0, serializer: "none", result: #"{"success":null}"#))
        XCTAssertNil(encoded.headLength)
    }

    /// Fields read from a file must not break the head they go into: a name that is not a
    /// token ("Content-Length " with a space, "Transfer-Encoding: chunked, x") is left out,
    /// as is a value or reason with control bytes; a status no final answer has is refused.
    func testFieldsAndStatusesACraftedLogCouldCarryAreRefused() throws {
        let a = try answer(Self.record(headers: #"[["Content-Length ","999"],["Transfer-Encoding: chunked, x","1"],["X-Ok","v"],["X-Bell","a\u0007b"],["","e"]]"#))
        XCTAssertEqual(a.headers.map(\.name), ["X-Ok"])
        XCTAssertEqual(refusal(Self.record(status: 101)), "its body was not captured whole: its status 101 is not a final answer's")
        XCTAssertNotNil(refusal(Self.record(status: 0)))
        XCTAssertNotNil(refusal(Self.record(status: 1000)))
    }

    /// A damaged rotated file (a gzip cut short, as a crash mid-compression leaves it) does not
    /// sink the directory: its records up to the damage and every other file are used, and
    /// the file is named as skipped.
    func testADamagedRotatedFileIsSkippedWithItsRecordsBeforeTheDamage() throws {
        let dir = try TemporaryLogDirectory()
        defer { dir.remove() }
        let name = "tapwire-20261202T100000.jsonl.gz"
        try dir.writeGzip(name, [Self.record(id: 1, url: "http://api.local/a"), Self.record(id: 2, url: "http://api.local/b")]
            .joined(separator: "\n") + "\n")
        let gz = dir.path + "/" + name
        let whole = try XCTUnwrap(FileManager.default.contents(atPath: gz))
        try whole.prefix(whole.count - 8).write(to: URL(fileURLWithPath: gz))   // no gzip trailer
        dir.write("tapwire.jsonl", Self.record(id: 3, url: "http://api.local/c") + "\n")
        let match = ReplayMatch()
        let built = try ReplayIndex.build(directory: dir.path, fileName: "tapwire.jsonl", match: match)
        XCTAssertEqual(built.unreadable, ["\(gz): truncated gzip data"])
        for path in ["/a", "/b", "/c"] {
            XCTAssertNotNil(built.answers[match.key(method: "GET", url: "http://api.local" + path)], path)
        }
        // tail and query still see the failure.
        XCTAssertThrowsError(try RecordSource(directory: dir.path, fileName: "tapwire.jsonl").forEachLine { _ in })
    }

    /// A 304 (a revalidation), a 206 (a range) or a HEAD's answer never displaces a full
    /// answer for the same request; a later full answer does displace them.
    func testPartialAndConditionalAnswersDoNotDisplaceAFullOne() throws {
        let dir = try TemporaryLogDirectory()
        defer { dir.remove() }
        let page = "http://api.local/page", other = "http://api.local/other"
        let lines = [
            Self.record(id: 1, url: page, status: 200, result: #"{"success":{"v":1}}"#),
            Self.record(id: 2, url: page, status: 304, bodySize: 0, serializer: "none", result: #"{"success":null}"#),
            Self.record(id: 3, url: page, status: 206, result: #"{"success":{"v":"part"}}"#),
            Self.record(id: 4, method: "HEAD", url: page, status: 200, headers: #"[["Content-Length","7"]]"#, bodySize: 0,
                        serializer: "none", result: #"{"success":null}"#),
            Self.record(id: 5, url: other, status: 304, bodySize: 0, serializer: "none", result: #"{"success":null}"#),
            Self.record(id: 6, url: other, status: 200, result: #"{"success":{"v":6}}"#),
        ]
        dir.write("tapwire.jsonl", lines.joined(separator: "\n") + "\n")
        let match = ReplayMatch(method: false)
        let built = try ReplayIndex.build(directory: dir.path, fileName: "tapwire.jsonl", match: match)
        let a = try XCTUnwrap(built.answers[match.key(method: "GET", url: page)])
        XCTAssertEqual(a.recordID, "0000018c2b1f4a1e-000001", "the 200 stays")
        XCTAssertEqual(String(decoding: a.body, as: UTF8.self), #"{"v":1}"#)
        XCTAssertEqual(try XCTUnwrap(built.answers[match.key(method: "GET", url: other)]).recordID, "0000018c2b1f4a1e-000006")
    }

    func testTextGoesBackInItsCharsetAndMustBeWhole() throws {
        let latin = try answer(Self.record(headers: #"[["Content-Type","text/plain; charset=iso-8859-1"]]"#, bodySize: 2,
                                           serializer: "string", result: #"{"success":"é!"}"#,
                                           data: #"{"size":2,"captured":2,"truncated":false,"contentEncoding":null}"#))
        XCTAssertEqual(latin.body, [0xE9, 0x21])
        XCTAssertEqual(refusal(Self.record(headers: #"[["Content-Type","text/plain"]]"#, bodySize: 9, serializer: "string",
                                           result: #"{"success":"abc"}"#,
                                           data: #"{"size":9,"captured":9,"truncated":false,"contentEncoding":null}"#)),
                       "its body was not captured whole: the record holds 3 of its 9 bytes")
    }

    func testBodiesTheRecordDoesNotHoldWholeAreRefused() {
        XCTAssertEqual(refusal(Self.record(data: #"{"size":40,"captured":20,"truncated":true,"contentEncoding":null}"#)),
                       "its body was not captured whole: the record says truncated")
        XCTAssertNotNil(refusal(Self.record(serializer: "data", result: #"{"success":{"size":40}}"#)))
        XCTAssertNotNil(refusal(Self.record(serializer: "jsonLines", result: #"{"success":[1,2]}"#)))
        XCTAssertNotNil(refusal(Self.record(result: #"{"failure":{"error":"responseSerializationFailed","reason":"jsonSerializationFailed","message":"x"}}"#)))
        // A whole base64 body and an empty one are served.
        XCTAssertEqual(try answer(Self.record(bodySize: 3, serializer: "data", result: #"{"success":{"base64":"AQID","size":3}}"#)).body, [1, 2, 3])
        XCTAssertEqual(try answer(Self.record(bodySize: 0, serializer: "none", result: #"{"success":null}"#)).body, [])
    }

    func testTheNewestRecordDecidesAndAnUnusableNewestOneLeavesNoAnswer() throws {
        let dir = try TemporaryLogDirectory()
        defer { dir.remove() }
        let older = Self.record(id: 1, result: #"{"success":{"v":1}}"#)
        let newer = Self.record(id: 2, url: "http://api.local/v1/items?ts=5", result: #"{"success":{"v":2}}"#)
        let cut = Self.record(id: 3, url: "http://api.local/cut", data: #"{"size":40,"captured":20,"truncated":true,"contentEncoding":null}"#)
        let wholeBeforeCut = Self.record(id: 4, url: "http://api.local/cut2")
        let cutAfterWhole = Self.record(id: 5, url: "http://api.local/cut2", data: #"{"size":40,"captured":20,"truncated":true,"contentEncoding":null}"#)
        let tunnel = #"{"id":"0000018c2b1f4a1e-000009","kind":"tunnel","client":"127.0.0.1:1","target":"h:443","status":200}"#
        try dir.writeGzip("tapwire-20261202T100000.jsonl.gz", [older, tunnel].joined(separator: "\n") + "\n")
        dir.write("tapwire.jsonl", [newer, cut, wholeBeforeCut, cutAfterWhole].joined(separator: "\n") + "\n")
        let match = ReplayMatch(ignoreParams: ["ts"])
        let built = try ReplayIndex.build(directory: dir.path, fileName: "tapwire.jsonl", match: match)
        XCTAssertEqual(built.answers.count, 1)
        XCTAssertEqual(built.unusable, 2)
        let a = try XCTUnwrap(built.answers[match.key(method: "GET", url: "http://api.local/v1/items?ts=77")])
        XCTAssertEqual(a.recordID, "0000018c2b1f4a1e-000002")
        XCTAssertEqual(String(decoding: a.body, as: UTF8.self), #"{"v":2}"#)
        XCTAssertNil(built.answers[match.key(method: "GET", url: "http://api.local/cut2")], "the newest record decides, even when it cannot be served")
    }
}
