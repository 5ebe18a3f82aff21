import Foundation
import XCTest
@testable import ResponseSerialization

/// A body cut at the capture limit: whole-document formats refuse it, data and string take the prefix.
final class TruncatedInputTests: XCTestCase {
    private let cut = BodyCapture(captured: 8, total: 100)

    private func assertTruncated<T>(_ response: DataResponse<T>, file: StaticString = #filePath, line: UInt = #line) {
        guard case .inputDataTruncated(let captured, let total)? = serializationReason(response.result, file: file, line: line) else {
            return XCTFail("\(response.result)", file: file, line: line)
        }
        XCTAssertEqual(captured, 8, file: file, line: line)
        XCTAssertEqual(total, 100, file: file, line: line)
    }

    func testCaptureInfersTruncation() {
        XCTAssertTrue(BodyCapture(captured: 8, total: 100).truncated)
        XCTAssertFalse(BodyCapture(captured: 8, total: 8).truncated)
        XCTAssertFalse(BodyCapture.whole(3).truncated)
    }

    func testJSONRefusesTruncatedBody() {
        assertTruncated(exchange(data: bytes("{\"a\": [1"), capture: cut).serialize(with: .json()))
    }

    func testPropertyListRefusesTruncatedBody() {
        assertTruncated(exchange(data: bytes("<plist>"), capture: cut).serialize(with: .propertyList()))
    }

    func testJSONLinesRefusesTruncatedBody() {
        assertTruncated(exchange(data: bytes("{}\n{\"a\""), capture: cut).serialize(with: .jsonLines()))
    }

    func testFormRefusesTruncatedBody() {
        assertTruncated(exchange(data: bytes("a=1&b=2"), capture: cut).serialize(with: .form()))
    }

    func testEventStreamRefusesTruncatedBody() {
        assertTruncated(exchange(data: bytes("data: a\n\n"), capture: cut).serialize(with: .eventStream()))
    }

    func testDataAcceptsTruncatedBodyAsPrefix() {
        let response = exchange(data: bytes("12345678"), capture: cut).serialize(with: .data())
        XCTAssertEqual(response.value, bytes("12345678"))
    }

    func testStringAcceptsTruncatedBodyAsPrefix() {
        let response = exchange(data: bytes("partial "), capture: cut).serialize(with: .string())
        XCTAssertEqual(response.value, "partial ")
    }

    /// A cut can fall inside a character. The prefix loses that character, not its text;
    /// bytes invalid before the cut, or in a body that was not cut, still fail.
    func testStringDropsTheCharacterTheCutSplit() {
        let utf8 = httpResponse(200, contentType: "text/plain; charset=utf-8")
        let cutInE = exchange(response: utf8, data: Data([0x61, 0xC3]), capture: BodyCapture(captured: 2, total: 3))
        XCTAssertEqual(cutInE.serialize(with: .string()).value, "a")
        let onlyHalf = exchange(response: utf8, data: Data([0xE2, 0x82]), capture: BodyCapture(captured: 2, total: 3))
        XCTAssertEqual(onlyHalf.serialize(with: .string()).value, "")
        let cutEmoji = Data("ok 😀".utf8.dropLast(1))
        XCTAssertEqual(exchange(response: utf8, data: cutEmoji, capture: cut).serialize(with: .string()).value, "ok ")
        let utf16 = exchange(data: Data([0x00, 0x68, 0xD8, 0x3D, 0xDE]), capture: cut)
        XCTAssertEqual(utf16.serialize(with: .string(encoding: .utf16BE)).value, "h")

        let invalidEarlier = exchange(response: utf8, data: Data([0x61, 0xFF, 0x62, 0xC3]), capture: cut)
        guard case .stringSerializationFailed(let name)? = serializationReason(invalidEarlier.serialize(with: .string()).result)
        else { return XCTFail("an invalid byte before the cut was accepted") }
        XCTAssertEqual(name, "utf-8")
        let whole = exchange(response: utf8, data: Data([0x61, 0xC3]))
        XCTAssertNotNil(serializationReason(whole.serialize(with: .string()).result), "a whole body ending mid-character")
    }

    /// A mapped serializer is the same serializer with another value: it takes a cut body
    /// when the original does, reads it as a prefix the same way, and refuses it otherwise.
    func testAMappedSerializerKeepsTheOriginalsHandlingOfACutBody() {
        let utf8 = httpResponse(200, contentType: "text/plain; charset=utf-8")
        let cutInE = exchange(response: utf8, data: Data([0x61, 0xC3]), capture: BodyCapture(captured: 2, total: 3))
        let length = DataResponseSerializer<String>.string().map { $0.count }
        XCTAssertTrue(length.acceptsTruncatedInput)
        XCTAssertEqual(cutInE.serialize(with: length).value, 1)
        let size = DataResponseSerializer<Data>.data().map { $0.count }
        XCTAssertEqual(exchange(data: bytes("12345678"), capture: cut).serialize(with: size).value, 8)
        let wrapped = DataResponseSerializer<JSON>.json().map { [$0] }
        XCTAssertFalse(wrapped.acceptsTruncatedInput)
        assertTruncated(exchange(data: bytes("{\"a\": [1"), capture: cut).serialize(with: wrapped))
    }

    func testCustomSerializerChoosesWhetherItAcceptsTruncation() {
        let counting = DataResponseSerializer<Int>.custom(acceptsTruncatedInput: true) { _, _, data in data?.count ?? 0 }
        XCTAssertEqual(exchange(data: bytes("12345678"), capture: cut).serialize(with: counting).value, 8)
        let strict = DataResponseSerializer<Int>.custom { _, _, data in data?.count ?? 0 }
        assertTruncated(exchange(data: bytes("12345678"), capture: cut).serialize(with: strict))
    }

    func testTransportErrorTakesPrecedenceOverTruncation() {
        let failure = TapwireError.transportFailed(TransportFailure(code: .upstreamReset, message: "reset by peer"))
        let response = exchange(data: bytes("{\"a"), error: failure, capture: cut).serialize(with: .json())
        XCTAssertEqual((response.error as? TapwireError)?.reasonName, "upstreamReset")
    }
}
