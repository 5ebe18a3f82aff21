import Foundation
import HTTP1
import ResponseSerialization
import XCTest
@testable import ExchangeLog

/// `ExchangeProcessor.outcome` writes compact-JSON records without building the
/// `CompletedExchange`, its `Data` and the `DataResponse`. These tests hold that path to the
/// general one, byte for byte, over the cases where the serializer's checks differ: a
/// transport error, a decoding error, a cut body, empty bodies the policy allows or not,
/// invalid JSON, fragments, key redaction and the rules' options.
final class CompactFastPathTests: XCTestCase {
    private typealias Fixture = RecordFixture

    private static let json = Array(#"{"b":1,"token":"s3cret","a":[1,2.50,{"c":null}]}"#.utf8)

    private func assertSamePaths(_ exchange: CapturedExchange, settings: ProcessorSettings = ProcessorSettings(),
                                 expecting fragment: String, file: StaticString = #filePath, line: UInt = #line) {
        let fast = Fixture.processor(settings)
        var general = Fixture.processor(settings)
        general.compactFastPath = false
        let fastRecord = String(decoding: fast.record(for: exchange, id: "r-1"), as: UTF8.self)
        let generalRecord = String(decoding: general.record(for: exchange, id: "r-1"), as: UTF8.self)
        XCTAssertEqual(fastRecord, generalRecord, file: file, line: line)
        // And the case is the one meant: each names what its result says.
        XCTAssertTrue(fastRecord.contains(fragment), "\(fragment) not in \(fastRecord)", file: file, line: line)
    }

    func testAValidBodyIsTheSameCompactText() {
        assertSamePaths(Fixture.exchange(body: Self.json), expecting: #""success":{"b":1,"token":"s3cret","a":[1,2.50,{"c":null}]}"#)
    }

    func testRedactedKeysAreRedactedAlike() {
        let settings = ProcessorSettings(redactJSONKeys: ["Token"])
        assertSamePaths(Fixture.exchange(body: Self.json), settings: settings, expecting: #""token":"[redacted]""#)
    }

    func testAGzipBodyIsDecodedFirst() {
        let exchange = Fixture.exchange(responseHeaders: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                                        body: Fixture.gzip(Self.json))
        assertSamePaths(exchange, expecting: #""contentEncoding":"gzip""#)
    }

    func testADecodingFailureIsTheResult() {
        let exchange = Fixture.exchange(responseHeaders: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                                        body: Array("not gzip".utf8))
        assertSamePaths(exchange, expecting: #""contentDecodingFailed""#)
    }

    func testATransportErrorComesFirst() {
        let cut = Fixture.exchange(body: Array(Self.json.prefix(10)), totalBytes: UInt64(Self.json.count),
                                   error: TransportError(.upstreamReset, "connection reset by peer"))
        assertSamePaths(cut, expecting: #""upstreamReset""#)
        let none = Fixture.exchange(status: nil, error: TransportError(.upstreamConnectFailed, "connection refused"))
        assertSamePaths(none, expecting: #""response":null"#)
    }

    func testACutBodyIsInputDataTruncated() {
        let exchange = Fixture.exchange(body: Array(Self.json.prefix(20)), totalBytes: 4096)
        assertSamePaths(exchange, expecting: #""inputDataTruncated""#)
    }

    func testEmptyBodies() {
        // Allowed empty: 204, and a HEAD request's response.
        assertSamePaths(Fixture.exchange(status: 204, reason: "No Content"), expecting: #""success":null"#)
        assertSamePaths(Fixture.exchange(method: "HEAD", responseHeaders: [("Content-Type", "application/json"), ("Content-Length", "40")]),
                        expecting: #""success":null"#)
        // Not allowed: a 200 with nothing.
        assertSamePaths(Fixture.exchange(), expecting: #""inputDataNilOrZeroLength""#)
    }

    func testARulesEmptyPolicyAndFragments() {
        let rule = Fixture.rule("api") { rule in
            rule.serializer.emptyResponseCodes = [200]
            rule.serializer.emptyRequestMethods = ["OPTIONS"]
            rule.serializer.allowFragments = false
        }
        let settings = ProcessorSettings(rules: [rule])
        assertSamePaths(Fixture.exchange(), settings: settings, expecting: #""rule":"api","serializer":"json","result":{"success":null}"#)
        assertSamePaths(Fixture.exchange(method: "OPTIONS", status: 404, reason: "Not Found"), settings: settings,
                        expecting: #""success":null"#)
        assertSamePaths(Fixture.exchange(status: 204, reason: "No Content"), settings: settings,
                        expecting: #""inputDataNilOrZeroLength""#)
        assertSamePaths(Fixture.exchange(body: Array("42".utf8)), settings: settings, expecting: #""jsonSerializationFailed""#)
        assertSamePaths(Fixture.exchange(body: Array("42".utf8)), expecting: #""success":42"#)
    }

    func testInvalidJSONFailsAlike() {
        assertSamePaths(Fixture.exchange(body: Array(#"{"a":1,}"#.utf8)), expecting: #""jsonSerializationFailed""#)
    }

    func testAPlusJSONTypeWithACharset() {
        let exchange = Fixture.exchange(responseHeaders: [("Content-Type", "application/problem+json; charset=utf-8")], body: Self.json)
        assertSamePaths(exchange, expecting: #""mimeType":"application/problem+json","charset":"utf-8""#)
    }

    func testARequestBodyIsLoggedAlike() {
        let exchange = Fixture.exchange(method: "POST",
                                        requestHeaders: [("Host", "api.local:8080"), ("Content-Type", "application/json")],
                                        requestBody: Self.json, body: Self.json)
        assertSamePaths(exchange, settings: ProcessorSettings(redactJSONKeys: ["token"]),
                        expecting: #""body":{"b":1,"token":"[redacted]""#)
    }
}
