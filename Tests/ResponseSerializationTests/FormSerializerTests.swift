import Foundation
import XCTest
@testable import ResponseSerialization

final class FormSerializerTests: XCTestCase {
    private func pairs(_ text: String) throws -> JSON {
        try DataResponseSerializer<JSON>.form().serializeResponse(getRequest(), httpResponse(200), bytes(text), nil).get()
    }

    private func pair(_ name: String, _ value: String) -> JSON { .array([.string(name), .string(value)]) }

    func testPairsInOrderWithRepeatsPlusAndPercent() throws {
        XCTAssertEqual(try pairs("a=1&b=hello+world&a=2&c=%C3%A9%26&flag"), .array([
            pair("a", "1"), pair("b", "hello world"), pair("a", "2"), pair("c", "é&"), pair("flag", ""),
        ]))
    }

    func testBadEscapesAreKeptLiterally() throws {
        XCTAssertEqual(try pairs("x=100%&y=%zz&z=%4"), .array([pair("x", "100%"), pair("y", "%zz"), pair("z", "%4")]))
    }

    func testEmptyPiecesAndEqualsInValue() throws {
        XCTAssertEqual(try pairs("&&k=a=b&&=v"), .array([pair("k", "a=b"), pair("", "v")]))
    }

    func testInvalidUTF8BecomesReplacementCharacter() throws {
        XCTAssertEqual(try pairs("n=%FF"), .array([pair("n", "\u{FFFD}")]))
    }

    func testNilFailsAndEmptyIsEmptyArray() {
        let serializer = DataResponseSerializer<JSON>.form()
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(200), Data(), nil).get(), .array([]))
        let result = serializer.serializeResponse(getRequest(), httpResponse(200), nil, nil)
        guard case .inputDataNil? = serializationReason(result) else { return XCTFail("\(result)") }
    }
}
