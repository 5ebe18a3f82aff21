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
