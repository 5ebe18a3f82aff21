import XCTest
@testable import LogTools
import ResponseSerialization

final class ExchangeDetailTests: XCTestCase {
    func testSectionsHeadsBodiesAndWaterfall() throws {
        let line = Fixture.http(4, method: "POST", result: #"{"success":{"z":1.10,"a":[1e400,{"k":null}],"s":"\u001b[31m"}}"#,
                                requestHeaders: #"[["Host","api.local:8080"],["Content-Type","text/plain"]]"#,
                                requestBody: "hello")
        let text = ExchangeDetail.render(try JSONParser.parse(line), waterfallWidth: 40)
        for section in ["── Request", "── Response", "── Timeline"] { XCTAssertTrue(text.contains(section), section) }
        XCTAssertTrue(text.hasPrefix("http 0000018c2b1f4a1e-000004  POST http://api.local:8080/v1/items/4?x=1  → 200 OK\n"), text)
        XCTAssertTrue(text.contains("Content-Type: text/plain\n\nbody (5 bytes on the wire, as logged):\nhello\n"), text)
        // Key order and number text as recorded; an escape sequence stays escaped.
        XCTAssertTrue(text.contains("{\n  \"z\": 1.10,\n  \"a\": [\n    1e400,\n    {\n      \"k\": null\n    }\n  ],\n  \"s\": \"\\u001b[31m\"\n}"), text)
        XCTAssertFalse(text.contains("\u{1B}"))
        XCTAssertTrue(text.contains("upstream 127.0.0.1:8080 (new connection)"), text)
        XCTAssertFalse(text.contains("via "), text)
        let throughParent = Fixture.http(5, metrics: #"{"dns":null,"connect":0.001,"tls":null,"send":0.001,"wait":0.006,"receive":0.002,"connectionReused":true,"upstream":"api.local:8080","via":"socks5://127.0.0.1:1080"}"#)
        let parentText = ExchangeDetail.render(try JSONParser.parse(throughParent), waterfallWidth: 40)
        XCTAssertTrue(parentText.contains("upstream api.local:8080 (reused connection)  via socks5://127.0.0.1:1080"), parentText)
    }

    func testWaterfallBarsFollowOneAnotherToScale() throws {
        let record = try JSONParser.parse(Fixture.http(1, metrics: #"{"dns":null,"connect":0.001,"tls":null,"send":0.001,"wait":0.006,"receive":0.002,"connectionReused":false,"upstream":"u"}"#))
        // serializationDuration 0.00003 in the fixture: total 0.01003 s over 100 columns.
        let lines = TimelineWaterfall(record: record).lines(width: 100)
        func bar(_ name: String) throws -> (start: Int, length: Int) {
            let line = try XCTUnwrap(lines.first { $0.hasPrefix(name + " ") }, name)
            // Bars start after the 14-column name and the 12-column duration, two blanks.
            let tail = line.drop { $0 != "█" && $0 != "▏" }
            return (line.count - tail.count - 28, tail.filter { $0 == "█" }.count)
        }
        XCTAssertTrue(lines.contains { $0.hasPrefix("dns ") && $0.hasSuffix("-") }, lines.joined(separator: "\n"))
        let connect = try bar("connect"), send = try bar("send"), wait = try bar("wait"), receive = try bar("receive")
        XCTAssertEqual(connect.length, 10)
        XCTAssertEqual(send.start, connect.start + connect.length)
        XCTAssertEqual(wait.length, 60)
        XCTAssertEqual(receive.start, wait.start + wait.length)
        XCTAssertEqual(receive.length, 20)
        XCTAssertTrue(lines.contains { $0.hasPrefix("wait ") && $0.contains("6.000 ms") }, lines.joined(separator: "\n"))
    }

    func testPrettyTextKeepsDuplicatesOrderAndNumberText() throws {
        let value = try JSONParser.parse(#"{"b":[],"a":{},"a":[1,2.50,-0.0],"n":12345678901234567890}"#)
        XCTAssertEqual(JSONPrettyText.render(value),
                       "{\n  \"b\": [],\n  \"a\": {},\n  \"a\": [1, 2.50, -0.0],\n  \"n\": 12345678901234567890\n}")
    }

    func testATruncatedRequestBodyIsMarkedAsTheResponseOneIs() throws {
        let cut = RecordedRequestTests.record(headers: #"[["Content-Type","text/plain"]]"#, bodySize: 9000, body: #""only the start""#)
        XCTAssertTrue(ExchangeDetail.render(cut).contains("body (9000 bytes on the wire, truncated, as logged):\nonly the start\n"),
                      ExchangeDetail.render(cut))
        let whole = RecordedRequestTests.record(headers: #"[["Content-Type","text/plain"]]"#, bodySize: 5, body: #""whole""#)
        XCTAssertTrue(ExchangeDetail.render(whole).contains("body (5 bytes on the wire, as logged):"), ExchangeDetail.render(whole))
    }
}
