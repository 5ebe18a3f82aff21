import XCTest
@testable import ExchangeLog

final class RFC3339Tests: XCTestCase {
    func testEpoch() {
        XCTAssertEqual(RFC3339.format(secondsSince1970: 0), "1970-01-01T00:00:00.000000Z")
    }

    func testKnownInstantWithMicroseconds() {
        // date -u -d 2026-12-02T10:11:12Z +%s → 1796206272
        XCTAssertEqual(RFC3339.format(secondsSince1970: 1_796_206_272.123456), "2026-12-02T10:11:12.123456Z")
    }

    func testLeapDayAndEndOfDay() {
        // 2024-02-29T23:59:59Z = 1709251199
        XCTAssertEqual(RFC3339.format(secondsSince1970: 1_709_251_199.999999), "2024-02-29T23:59:59.999999Z")
        XCTAssertEqual(RFC3339.format(secondsSince1970: 1_709_251_200), "2024-03-01T00:00:00.000000Z")
    }

    func testRoundingCarriesIntoTheNextSecond() {
        XCTAssertEqual(RFC3339.format(secondsSince1970: 1_709_251_199.9999996), "2024-03-01T00:00:00.000000Z")
    }

    func testBeforeEpoch() {
        XCTAssertEqual(RFC3339.format(secondsSince1970: -1.5), "1969-12-31T23:59:58.500000Z")
        XCTAssertEqual(RFC3339.format(secondsSince1970: -86400 * 365), "1969-01-01T00:00:00.000000Z")
    }

    func testYear2000AndCenturyRules() {
        // 2000-02-29 exists (divisible by 400); 2100-03-01 follows 2100-02-28.
        XCTAssertEqual(RFC3339.format(secondsSince1970: 951_782_400), "2000-02-29T00:00:00.000000Z")
        XCTAssertEqual(RFC3339.format(secondsSince1970: 4_107_456_000), "2100-02-28T00:00:00.000000Z")
        XCTAssertEqual(RFC3339.format(secondsSince1970: 4_107_542_400), "2100-03-01T00:00:00.000000Z")
    }

    func testOutOfRangeInputsStayWellFormed() {
        XCTAssertEqual(RFC3339.format(secondsSince1970: .nan), "1970-01-01T00:00:00.000000Z")
        XCTAssertEqual(RFC3339.format(secondsSince1970: 1e300), "9999-12-31T23:59:59.000000Z")
    }

    func testAppendAddsToExistingBytes() {
        var buffer = Array(#""time":""#.utf8)
        RFC3339.append(secondsSince1970: 1_796_206_272.5, into: &buffer)
        XCTAssertEqual(String(decoding: buffer, as: UTF8.self), #""time":"2026-12-02T10:11:12.500000Z"#)
    }

    func testBasicStampForFileNames() {
        XCTAssertEqual(RFC3339.basicStamp(secondsSince1970: 1_796_206_272.9), "20261202T101112")
    }
}
