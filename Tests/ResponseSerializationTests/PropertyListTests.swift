import Foundation
import XCTest
@testable import ResponseSerialization

final class PropertyListTests: XCTestCase {
    private func serialize(_ data: Data) throws -> JSON {
        try DataResponseSerializer<JSON>.propertyList().serializeResponse(getRequest(), httpResponse(200), data, nil).get()
    }

    func testDateDataAndNumberMapping() throws {
        let xml = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0"><dict>
          <key>when</key><date>2020-01-02T03:04:05Z</date>
          <key>blob</key><data>AAEC/w==</data>
          <key>big</key><integer>18446744073709551615</integer>
          <key>negative</key><integer>-5</integer>
          <key>real</key><real>1.5</real>
          <key>whole</key><real>12</real>
          <key>off</key><false/>
        </dict></plist>
        """
        XCTAssertEqual(try serialize(bytes(xml)), .object([
            JSON.Member("big", .number("18446744073709551615")),
            JSON.Member("blob", .string("AAEC/w==")),
            JSON.Member("negative", .number("-5")),
            JSON.Member("off", .bool(false)),
            JSON.Member("real", .number("1.5")),
            JSON.Member("when", .string("2020-01-02T03:04:05Z")),
            JSON.Member("whole", .number("12.0")),
        ]))
    }

    func testBinaryDateWithFractionKeepsMicroseconds() throws {
        let date = Date(timeIntervalSince1970: 1_600_000_000.25)
        let binary = try PropertyListSerialization.data(fromPropertyList: ["d": date], format: .binary, options: 0)
        XCTAssertEqual(try serialize(binary), .object([JSON.Member("d", .string("2020-09-13T12:26:40.25Z"))]))
    }

    /// A binary plist's date is a raw double: NaN, infinity and 1e300 are one hostile
    /// response away, and converting them to `time_t` would trap (and take the proxy's worker down).
    func testBinaryDatesOutsideRFC3339AreLoggedAsNumberText() throws {
        // {"d": <date>}; the 8 bytes after 0x33 are the date's seconds since 2001, big-endian.
        func plist(_ seconds: Double) -> Data {
            var bytes: [UInt8] = Array("bplist00".utf8) + [0xD1, 0x01, 0x02, 0x51, 0x64, 0x33]
            bytes += withUnsafeBytes(of: seconds.bitPattern.bigEndian, Array.init)
            bytes += [0x08, 0x0B, 0x0D] + [UInt8](repeating: 0, count: 6) + [0x01, 0x01]
            bytes += [UInt8](repeating: 0, count: 7) + [0x03] + [UInt8](repeating: 0, count: 15) + [0x16]
            return Data(bytes)
        }
        XCTAssertEqual(try serialize(plist(0)), .object([JSON.Member("d", .string("2001-01-01T00:00:00Z"))]))
        XCTAssertEqual(try serialize(plist(.nan)), .object([JSON.Member("d", .string("nan"))]))
        XCTAssertEqual(try serialize(plist(.infinity)), .object([JSON.Member("d", .string("inf"))]))
        XCTAssertEqual(try serialize(plist(-.infinity)), .object([JSON.Member("d", .string("-inf"))]))
        XCTAssertEqual(try serialize(plist(1e300)), .object([JSON.Member("d", .string("1e+300"))]))
        // Year 10000 has five digits: RFC 3339 cannot say it.
        XCTAssertEqual(try serialize(plist(253_402_300_800 - 978_307_200)),
                       .object([JSON.Member("d", .string("253402300800.0"))]))
        XCTAssertEqual(try serialize(plist(253_402_300_799 - 978_307_200)),
                       .object([JSON.Member("d", .string("9999-12-31T23:59:59Z"))]))
        XCTAssertEqual(try serialize(plist(-62_135_596_800 - 978_307_200)),
                       .object([JSON.Member("d", .string("0001-01-01T00:00:00Z"))]))
    }

    func testTopLevelArrayAndString() throws {
        let binary = try PropertyListSerialization.data(fromPropertyList: ["x", ["y": "z"]] as [Any], format: .binary, options: 0)
        XCTAssertEqual(try serialize(binary), .array([.string("x"), .object([JSON.Member("y", .string("z"))])]))
    }

    func testOpenStepIsReadable() throws {
        XCTAssertEqual(try serialize(bytes("{ b = (1, two); a = \"x y\"; }")), .object([
            JSON.Member("a", .string("x y")), JSON.Member("b", .array([.string("1"), .string("two")])),
        ]))
    }

    func testEmptyDataAndEmptyResponses() {
        let serializer = DataResponseSerializer<JSON>.propertyList()
        let empty = serializer.serializeResponse(getRequest(), httpResponse(200), Data(), nil)
        guard case .inputDataNilOrZeroLength? = serializationReason(empty) else { return XCTFail("\(empty)") }
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(204), nil, nil).get(), .null)
        XCTAssertEqual(try serializer.serializeResponse(getRequest("HEAD"), httpResponse(200), Data(), nil).get(), .null)
    }

    func testFailureMessageNamesTheProblem() {
        let result = DataResponseSerializer<JSON>.propertyList()
            .serializeResponse(getRequest(), httpResponse(200), bytes("<plist><dict><key>a</key></plist>"), nil)
        guard case .failure(let error) = result, let tapwire = error as? TapwireError else { return XCTFail("\(result)") }
        XCTAssertEqual(tapwire.reasonName, "propertyListSerializationFailed")
        XCTAssertTrue(tapwire.message.hasPrefix("PropertyList could not be serialized because of error:\n"), tapwire.message)
        XCTAssertGreaterThan(tapwire.message.count, "PropertyList could not be serialized because of error:\n".count)
    }
}
