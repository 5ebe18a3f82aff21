import Foundation
import HTTP1
import XCTest
@testable import ResponseSerialization

final class DataResponseTests: XCTestCase {
    private let timeline = Timeline(requestStartTime: 1, initialResponseTime: 2, requestCompletedTime: 3, serializationCompletedTime: 4)
    private let metrics = ExchangeMetrics(wait: 0.5, upstream: "10.0.0.1:80")

    private func response(_ result: Result<Int, Error>) -> DataResponse<Int> {
        DataResponse(request: getRequest(), response: httpResponse(201), data: bytes("42"), result: result,
                     timeline: timeline, metrics: metrics)
    }

    private func assertOtherFieldsKept<T>(_ mapped: DataResponse<T>, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(mapped.request, getRequest(), file: file, line: line)
        XCTAssertEqual(mapped.response?.status, 201, file: file, line: line)
        XCTAssertEqual(mapped.data, bytes("42"), file: file, line: line)
        XCTAssertEqual(mapped.timeline, timeline, file: file, line: line)
        XCTAssertEqual(mapped.metrics, metrics, file: file, line: line)
    }

    func testValueAndError() {
        XCTAssertEqual(response(.success(42)).value, 42)
        XCTAssertNil(response(.success(42)).error)
        XCTAssertNil(response(.failure(SampleError())).value)
        XCTAssertEqual(response(.failure(SampleError())).error as? SampleError, SampleError())
    }

    func testMapKeepsOtherFields() {
        let mapped = response(.success(42)).map { String($0 * 2) }
        XCTAssertEqual(mapped.value, "84")
        assertOtherFieldsKept(mapped)
        XCTAssertEqual(response(.failure(SampleError())).map { $0 + 1 }.error as? SampleError, SampleError())
    }

    func testFlatMapTurnsAThrowIntoFailure() {
        let ok = response(.success(42)).flatMap { $0 + 1 }
        XCTAssertEqual(ok.value, 43)
        assertOtherFieldsKept(ok)
        let thrown = response(.success(42)).flatMap { (_: Int) -> Int in throw SampleError(text: "thrown") }
        XCTAssertEqual(thrown.error as? SampleError, SampleError(text: "thrown"))
        assertOtherFieldsKept(thrown)
    }

    func testMapErrorKeepsOtherFields() {
        let mapped = response(.failure(SampleError(text: "a"))).mapError { SampleError(text: "wrapped \($0)") }
        XCTAssertEqual(mapped.error as? SampleError, SampleError(text: "wrapped a"))
        assertOtherFieldsKept(mapped)
        XCTAssertEqual(response(.success(1)).mapError { _ in SampleError(text: "never") }.value, 1)
    }

    func testDescription() {
        XCTAssertEqual(response(.success(42)).description, "SUCCESS: 42")
        XCTAssertEqual(response(.failure(TapwireError.responseSerializationFailed(reason: .inputDataNil))).description,
                       "FAILURE: Response could not be serialized, input data was nil.")
    }
}
