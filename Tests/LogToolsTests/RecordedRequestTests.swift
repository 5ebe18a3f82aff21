import XCTest
@testable import LogTools
import ResponseSerialization

/// The request a record holds, rebuilt for `tapwire curl` and `replay`: what is sent, and why
/// a request is refused.
final class RecordedRequestTests: XCTestCase {
    static func record(headers: String, bodySize: Int, body: String? = nil, bodyError: Bool = false,
                       url: String = "http://api.local:8080/v1/items?x=1", serializer: String = "json",
                       kind: String = "http", rule: String? = nil) -> JSON {
        var request = #"{"method":"POST","url":"\#(url)","httpVersion":"HTTP/1.1","headers":\#(headers),"bodySize":\#(bodySize)"#
        if let body { request += #","body":\#(body)"# }
        if bodyError { request += #","bodyError":{"error":"responseSerializationFailed","reason":"jsonSerializationFailed","message":"unexpected end of input"}"# }
        request += "}"
        let text = #"{"id":"0000018c2b1f4a1e-000007","kind":"\#(kind)","client":"127.0.0.1:1","request":\#(request),"response":null,"serializer":"\#(serializer)"\#(rule.map { #","rule":"\#($0)""# } ?? "")}"#
        return try! JSONParser.parse(text)
    }

    func testJSONBodyIsTheLoggedCompactTextWithNumbersAsRecorded() throws {
        let r = try RecordedRequest(record: Self.record(
            headers: #"[["Host","api.local:8080"],["Content-Type","application/json"],["Content-Length","40"],["Connection","keep-alive"],["X-Trace","1"]]"#,
            bodySize: 40, body: #"{"b":1.50,"a":[1e400,2],"c":"\u00e9"}"#))
        XCTAssertEqual(String(decoding: try XCTUnwrap(r.body), as: UTF8.self), #"{"b":1.50,"a":[1e400,2],"c":"é"}"#)
        XCTAssertEqual(r.headers.map(\.name), ["Content-Type", "X-Trace"], "Host, framing and hop-by-hop fields are the sender's")
        XCTAssertNil(r.replayRefusal)
        XCTAssertEqual(r.id, "0000018c2b1f4a1e-000007")
        XCTAssertEqual(r.notes, ["the body is the logged JSON, compact: 33 bytes where the original had 40"])
    }

    func testRedactedHeaderBodyMemberAndQueryAreListedAndRefused() throws {
        let r = try RecordedRequest(record: Self.record(
            headers: #"[["Content-Type","application/json"],["Authorization","[redacted]"]]"#,
            bodySize: 30, body: #"{"user":"ann","secret":{"token":"[redacted]"}}"#,
            url: "http://h/login?password=[redacted]"))
        XCTAssertEqual(Set(r.redactions), ["url query", "body /secret/token", "header Authorization"])
        let refusal = try XCTUnwrap(r.replayRefusal)
        XCTAssertTrue(refusal.contains("redacted") && refusal.contains("body /secret/token"), refusal)
    }

    func testStringBodyMustHoldEveryWireByte() throws {
        let whole = try RecordedRequest(record: Self.record(
            headers: #"[["Content-Type","application/x-www-form-urlencoded"]]"#, bodySize: 7, body: #""a=1&b=2""#))
        XCTAssertEqual(whole.body, Array("a=1&b=2".utf8))
        XCTAssertNil(whole.replayRefusal)
        let cut = try RecordedRequest(record: Self.record(
            headers: #"[["Content-Type","text/plain"]]"#, bodySize: 9000, body: #""only the start""#))
        XCTAssertNil(cut.body)
        XCTAssertTrue(try XCTUnwrap(cut.replayRefusal).contains("not captured whole"), cut.replayRefusal ?? "")
    }

    func testTextWithoutCharsetGoesBackAsLatin1Bytes() throws {
        // Logged through the string serializer with ISO-8859-1 (no charset parameter): "é" in
        // UTF-8 arrived as two bytes and was logged as two characters.
        let r = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","text/plain"]]"#, bodySize: 5,
                                                        body: #""caf\u00c3\u00a9""#))
        XCTAssertEqual(r.body, Array("café".utf8))
    }

    func testBodiesNotInTheRecordAreRefusedWithTheirReason() throws {
        let notCaptured = try RecordedRequest(record: Self.record(headers: "[]", bodySize: 12))
        XCTAssertTrue(try XCTUnwrap(notCaptured.bodyMissing).contains("none of its 12 bytes"))
        let bySize = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","image/png"]]"#, bodySize: 12,
                                                             body: #"{"size":12}"#))
        XCTAssertTrue(try XCTUnwrap(bySize.bodyMissing).contains("size only"))
        let dataRule = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","application/json"]]"#,
                                                               bodySize: 12, body: #"{"size":12}"#, serializer: "data", rule: "blobs"))
        XCTAssertNotNil(dataRule.bodyMissing, "a rule with serializer data logs the request body by size")
        let unreadable = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","application/json"]]"#,
                                                                 bodySize: 12, bodyError: true))
        XCTAssertTrue(try XCTUnwrap(unreadable.bodyMissing).contains("unexpected end of input"))
        let empty = try RecordedRequest(record: Self.record(headers: "[]", bodySize: 0))
        XCTAssertEqual(empty.body, [])
        XCTAssertNil(empty.replayRefusal)
    }

    func testABase64BodyIsWholeOnlyWhenItHoldsEveryByte() throws {
        let whole = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","image/png"]]"#, bodySize: 4,
                                                            body: #"{"base64":"AFBORw==","size":4}"#))
        XCTAssertEqual(whole.body, [0, 0x50, 0x4E, 0x47])
        XCTAssertNil(whole.replayRefusal)
        let prefix = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","image/png"]]"#, bodySize: 9,
                                                             body: #"{"base64":"AFBORw==","size":9}"#))
        XCTAssertTrue(try XCTUnwrap(prefix.bodyMissing).contains("first 4 of its 9 bytes"), prefix.bodyMissing ?? "")
    }

    func testDecodedBodyIsSentWithoutItsContentEncoding() throws {
        let r = try RecordedRequest(record: Self.record(
            headers: #"[["Content-Type","application/json"],["Content-Encoding","gzip"]]"#, bodySize: 31, body: #"{"a":1}"#))
        XCTAssertEqual(r.body, Array(#"{"a":1}"#.utf8))
        XCTAssertEqual(r.headers.map(\.name), ["Content-Type"])
        XCTAssertTrue(r.notes.contains { $0.contains("gzip") })
    }

    func testTunnelRecordIsNotARequest() {
        XCTAssertThrowsError(try RecordedRequest(record: try! JSONParser.parse(Fixture.tunnel(3)))) { error in
            XCTAssertEqual(error as? RecordedRequest.RecordError, .notHTTP(id: "0000018c2b1f4a1e-000003", kind: "tunnel"))
        }
    }

    func testReplayQueryKeepsHTTPExchangesOnly() throws {
        let dir = try TemporaryLogDirectory()
        defer { dir.remove() }
        try dir.writeGzip("tapwire-20261202T100000.jsonl.gz", Fixture.lines([Fixture.http(1, status: 500), Fixture.loss(2)]))
        dir.write("tapwire.jsonl", Fixture.lines([Fixture.http(2), Fixture.tunnel(3), Fixture.http(4, status: 500)]))
        let kept = try RecordLookup.exchanges(matching: try Query.parse("status>=500 or kind=tunnel or kind=loss"),
                                              in: RecordSource(directory: dir.path))
        XCTAssertEqual(kept.map(\.id), ["0000018c2b1f4a1e-000001", "0000018c2b1f4a1e-000004"])
    }

    func testLookupFindsRecordsAcrossRotatedFilesAndNamesAnUnknownID() throws {
        let dir = try TemporaryLogDirectory()
        defer { dir.remove() }
        try dir.writeGzip("tapwire-20261202T100000.jsonl.gz", Fixture.lines([Fixture.http(1), Fixture.loss(2)]))
        dir.write("tapwire.jsonl", Fixture.lines([Fixture.http(2), Fixture.http(3)]))
        let found = try RecordLookup.records(["0000018c2b1f4a1e-000003", "0000018c2b1f4a1e-000001"],
                                             in: RecordSource(directory: dir.path))
        XCTAssertEqual(found.count, 2)
        XCTAssertEqual(RecordView(json: try XCTUnwrap(found["0000018c2b1f4a1e-000001"])).url, "http://api.local:8080/v1/items/1?x=1")
        XCTAssertThrowsError(try RecordLookup.records(["0000018c2b1f4a1e-000001", "0000018c2b1f4a1e-000009"],
                                                      in: RecordSource(directory: dir.path))) { error in
            XCTAssertEqual(error as? RecordLookup.LookupError, .unknownID("0000018c2b1f4a1e-000009"))
        }
    }

    func testAResponseLoggedAsDataDoesNotLoseTheRequestBody() throws {
        // Under the default rule `serializer` follows the response: a POST answered 204 without
        // a Content-Type says `data`, while its JSON request body was logged whole.
        let r = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","application/json"]]"#, bodySize: 7,
                                                        body: #"{"a":1}"#, serializer: "data", rule: "default"))
        XCTAssertEqual(r.body, Array(#"{"a":1}"#.utf8))
        XCTAssertNil(r.replayRefusal)
        let text = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","text/plain"]]"#, bodySize: 2,
                                                           body: #""hi""#, serializer: "data", rule: "default"))
        XCTAssertEqual(text.body, Array("hi".utf8))
    }

    func testWholenessIsReadFromTheRecordNotTheCurrentCaptureLimit() throws {
        // A JSON value that parsed is whole (a cut one is a bodyError), whatever the limit is now.
        let json = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","application/json"]]"#,
                                                           bodySize: 2000, body: "[1]"), captureMaxBodyBytes: 1024)
        XCTAssertEqual(json.body, Array("[1]".utf8))
        // Base64 of fewer bytes than the wire had, without Content-Encoding: cut, whatever the limit.
        let base64 = try RecordedRequest(record: Self.record(headers: #"[["Content-Type","image/png"]]"#, bodySize: 9,
                                                             body: #"{"base64":"AFBORw==","size":4}"#), captureMaxBodyBytes: 1 << 20)
        XCTAssertTrue(try XCTUnwrap(base64.bodyMissing).contains("4 of its 9 bytes"), base64.bodyMissing ?? "")
        XCTAssertTrue(CurlCommand.render(base64).contains("# the body is left out: the record holds 4 of its 9 bytes"))
        // Text logged decoded: the record cannot tell; the limit decides for replay, curl says so.
        let gzipText = Self.record(headers: #"[["Content-Type","text/plain"],["Content-Encoding","gzip"]]"#,
                                   bodySize: 3000, body: #""decoded text""#)
        XCTAssertNotNil(try RecordedRequest(record: gzipText, captureMaxBodyBytes: 1024).bodyMissing)
        XCTAssertNil(try RecordedRequest(record: gzipText, captureMaxBodyBytes: 4096).bodyMissing)
        let curl = try RecordedRequest(record: gzipText)
        XCTAssertTrue(curl.notes.contains { $0.contains("cannot show it whole") }, "\(curl.notes)")
    }

    func testHeadersThatWereNotUTF8AreNotSentAsReplacementCharacters() throws {
        let r = try RecordedRequest(record: Self.record(headers: #"[["X-Name","caf\ufffd"],["X-Ok","1"]]"#, bodySize: 0))
        XCTAssertEqual(r.headers.map(\.name), ["X-Ok"])
        XCTAssertEqual(r.unsendableHeaders, ["header X-Name"])
        XCTAssertTrue(try XCTUnwrap(r.replayRefusal).contains("X-Name"), r.replayRefusal ?? "")
        let text = CurlCommand.render(r)
        XCTAssertTrue(text.contains("# left out, not UTF-8 in the request and logged with U+FFFD in place of their bytes: header X-Name"), text)
        XCTAssertFalse(text.contains("-H 'X-Name"), text)
    }
}
