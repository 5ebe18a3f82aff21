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
