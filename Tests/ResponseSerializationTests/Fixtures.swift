import Foundation
import HTTP1
import XCTest
@testable import ResponseSerialization

func getRequest(_ method: String = "GET", accept: String? = nil) -> HTTPRequestHead {
    var headers: HTTPHeaders = [("Host", "example.test")]
    if let accept { headers.add(name: "Accept", value: accept) }
    return HTTPRequestHead(method: method, target: "/", headers: headers)
}

func httpResponse(_ status: Int, contentType: String? = nil) -> HTTPResponseHead {
    var headers = HTTPHeaders()
    if let contentType { headers.add(name: "Content-Type", value: contentType) }
    return HTTPResponseHead(status: status, reason: "", headers: headers)
}

func bytes(_ text: String) -> Data { Data(text.utf8) }

func exchange(request: HTTPRequestHead = getRequest(), response: HTTPResponseHead? = httpResponse(200),
              data: Data?, error: Error? = nil, capture: BodyCapture? = nil) -> CompletedExchange {
    CompletedExchange(request: request, response: response, data: data, error: error, capture: capture,
                      requestStartTime: 1000, initialResponseTime: 1000.25, requestCompletedTime: 1000.5)
}

/// The reason of a serialization failure, or a test failure.
func serializationReason<T>(_ result: Result<T, Error>, file: StaticString = #filePath, line: UInt = #line)
    -> TapwireError.ResponseSerializationFailureReason? {
    guard case .failure(let error) = result else { XCTFail("expected failure, got \(result)", file: file, line: line); return nil }
    guard case .responseSerializationFailed(let reason)? = error as? TapwireError else {
        XCTFail("expected responseSerializationFailed, got \(error)", file: file, line: line); return nil
    }
    return reason
}

func validationReason(_ error: Error?, file: StaticString = #filePath, line: UInt = #line)
    -> TapwireError.ResponseValidationFailureReason? {
    guard case .responseValidationFailed(let reason)? = error as? TapwireError else {
        XCTFail("expected responseValidationFailed, got \(String(describing: error))", file: file, line: line); return nil
    }
    return reason
}

struct SampleError: Error, Equatable, CustomStringConvertible {
    var text = "sample failure"
    var description: String { text }
}
