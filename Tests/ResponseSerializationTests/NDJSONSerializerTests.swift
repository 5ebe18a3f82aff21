import Foundation
import XCTest
@testable import ResponseSerialization

/// `jsonLines`, the NDJSON / JSON Lines serializer.
final class NDJSONSerializerTests: XCTestCase {
    private let serializer = DataResponseSerializer<JSON>.jsonLines()

    func testLinesBecomeAnArrayAndBlankLinesAreSkipped() throws {
        let body = bytes("{\"a\":1}\r\n\n  \n[true]\n\"s\"\n12345678901234567890")
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(200), body, nil).get(), .array([
            .object([JSON.Member("a", .number("1"))]), .array([.bool(true)]), .string("s"), .number("12345678901234567890"),
        ]))
    }

    func testBadLineFailsNamingTheLine() {
        let result = serializer.serializeResponse(getRequest(), httpResponse(200), bytes("{}\n\n{\"a\":}\n[]\n"), nil)
        guard case .jsonSerializationFailed(let error)? = serializationReason(result) else { return XCTFail("\(result)") }
        XCTAssertEqual((error as? JSONLinesError)?.line, 3)
        XCTAssertTrue(TapwireError.responseSerializationFailed(reason: .jsonSerializationFailed(error: error)).message
            .contains("line 3:"))
    }

    func testEmptyBodyIsEmptyArrayAndNilFails() {
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(200), Data(), nil).get(), .array([]))
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(204), nil, nil).get(), .array([]))
        let result = serializer.serializeResponse(getRequest(), httpResponse(200), nil, nil)
        guard case .inputDataNil? = serializationReason(result) else { return XCTFail("\(result)") }
    }
}
