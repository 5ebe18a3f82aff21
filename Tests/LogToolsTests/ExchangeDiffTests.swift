import XCTest
@testable import LogTools
import ResponseSerialization

final class ExchangeDiffTests: XCTestCase {
    func testEqualExchangesHaveNoLines() throws {
        let a = try JSONParser.parse(Fixture.http(1)), b = try JSONParser.parse(Fixture.http(1, start: "2026-12-03T00:00:00.000000Z"))
        XCTAssertTrue(ExchangeDiff(a, b).isEmpty, ExchangeDiff(a, b).text)
    }

    func testStatusHeadersAndValuesByPointer() throws {
        let url = "http://api.local/v1/items"
        let a = try JSONParser.parse(Fixture.http(1, url: url, result: #"{"success":{"items":[{"price":9.99},{"price":1}],"gone":true,"a/b":1}}"#,
                                                  responseHeaders: #"[["Content-Type","application/json"],["ETag","1"],["Vary","a"],["Vary","b"]]"#))
        let b = try JSONParser.parse(Fixture.http(2, url: url, status: 404, result: #"{"success":{"items":[{"price":10.49},{"price":1},{"price":2}],"a/b":2}}"#,
                                                  responseHeaders: #"[["content-type","application/json"],["Retry-After","5"],["Vary","a"]]"#))
        let lines = ExchangeDiff(a, b).lines
        XCTAssertEqual(Set(lines), [
            "status: 200 → 404",
            "response header - ETag: 1",
            "response header + Retry-After: 5",
            "response header Vary: a, b → a",
            "response /items/0/price: 9.99 → 10.49",
            "response /items/2: + {\"price\":2}",
            "response /gone: - true",
            "response /a~1b: 1 → 2",
        ], lines.joined(separator: "\n"))
    }

    func testNumbersCompareByExactValueAndPrintTheirText() throws {
        let a = try JSONParser.parse(Fixture.http(1, result: #"{"success":{"n":1.50,"e":1e2,"z":-0.0,"id":9007199254740993,"p":1.50}}"#))
        let b = try JSONParser.parse(Fixture.http(1, result: #"{"success":{"n":1.5,"e":100,"z":0,"id":9007199254740992,"p":1.51}}"#))
        XCTAssertEqual(ExchangeDiff(a, b).lines, ["response /id: 9007199254740993 → 9007199254740992", "response /p: 1.50 → 1.51"])
    }
}
