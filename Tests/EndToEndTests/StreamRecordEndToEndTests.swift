import Foundation
import XCTest

/// Streamed completions and MessagePack through the real proxy: the record of an event
/// stream holds the text its pieces make, and a msgpack body is logged as JSON.
final class StreamRecordEndToEndTests: XCTestCase {
    var origin: OriginServer!
    var proxy: TapwireProcess!

    override func setUpWithError() throws {
        origin = try OriginServer()
        proxy = try TapwireProcess(config: ["rules": [
            ["name": "openai-stream", "match": ["path": "/events/openai"],
             "serializer": ["type": "eventStream", "assemble": "/choices/0/delta/content", "maxEvents": 2]],
            ["name": "anthropic-stream", "match": ["path": "/events/anthropic"],
             "serializer": ["type": "eventStream", "assemble": "/delta/text"]],
        ]])
    }

    override func tearDown() {
        proxy = nil
        origin = nil
    }

    func testOpenAIStreamRecordHasTheAssembledTextAndTheFirstEvents() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-N", "\(origin.base)/events/openai"])
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.text.contains("data: [DONE]"), "the client got the stream unchanged: \(r.text)")
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/events/openai") })
        XCTAssertTrue(line.contains(#""rule":"openai-stream""#), line)
        XCTAssertTrue(line.contains(#""serializer":"eventStream""#), line)
        XCTAssertTrue(line.contains(#""success":{"assembled":"Hello, world! ☃","eventCount":6,"events":[{"event":"message","data":"#), line)
        let record = try parseRecord(line)
        let success = try XCTUnwrap((record["result"] as? [String: Any])?["success"] as? [String: Any])
        XCTAssertEqual((success["events"] as? [Any])?.count, 2, "maxEvents keeps the first two")
        // Time to first token: the first event's end, before the stream's.
        let timeline = try XCTUnwrap(record["timeline"] as? [String: Any])
        let first = try XCTUnwrap(timeline["firstEventTime"] as? String, line)
        let initial = try XCTUnwrap(timeline["initialResponseTime"] as? String)
        let completed = try XCTUnwrap(timeline["requestCompletedTime"] as? String)
        XCTAssertLessThanOrEqual(initial, first, "RFC 3339 in UTC with fixed digits sorts as time")
        XCTAssertLessThan(first, completed, "five more events came after the first")
    }

    func testOnlyEventStreamsHaveAFirstEventTime() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/msgpack"])
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/msgpack") })
        XCTAssertFalse(line.contains("firstEventTime"), line)
    }

    func testAnthropicStreamRecordHasTheAssembledText() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-N", "\(origin.base)/events/anthropic"])
        XCTAssertEqual(r.status, 0)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/events/anthropic") })
        let record = try parseRecord(line)
        XCTAssertEqual(record["rule"] as? String, "anthropic-stream")
        let success = try XCTUnwrap((record["result"] as? [String: Any])?["success"] as? [String: Any], line)
        XCTAssertEqual(success["assembled"] as? String, "Hello, world!")
        XCTAssertEqual(success["eventCount"] as? Int, 6)
        XCTAssertEqual((success["events"] as? [Any])?.count, 6)
    }

    func testMsgPackBodyIsLoggedAsJSONByTheDefaultRule() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/msgpack"])
        XCTAssertEqual(r.status, 0)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/msgpack") })
        XCTAssertTrue(line.contains(#""rule":"default""#), line)
        XCTAssertTrue(line.contains(#""serializer":"msgpack""#), line)
        XCTAssertTrue(line.contains(#""success":{"id":18446744073709551615,"pi":3.5,"at":"2026-12-04T18:46:40Z","raw":{"base64":"AQI="}}"#), line)
    }
}
