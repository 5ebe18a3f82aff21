import Foundation
import XCTest
@testable import ResponseSerialization

/// The wording and the machine names the log records for every error.
final class ErrorMessageTests: XCTestCase {
    private func serialization(_ reason: TapwireError.ResponseSerializationFailureReason) -> TapwireError {
        .responseSerializationFailed(reason: reason)
    }
    private func validation(_ reason: TapwireError.ResponseValidationFailureReason) -> TapwireError {
        .responseValidationFailed(reason: reason)
    }

    func testSerializationMessages() {
        XCTAssertEqual(serialization(.inputDataNil).message, "Response could not be serialized, input data was nil.")
        XCTAssertEqual(serialization(.inputDataNilOrZeroLength).message,
                       "Response could not be serialized, input data was nil or zero length.")
        XCTAssertEqual(serialization(.stringSerializationFailed(encoding: "utf-8")).message,
                       "String could not be serialized with encoding: utf-8.")
        XCTAssertEqual(serialization(.jsonSerializationFailed(error: JSONParseError(offset: 3, message: "unexpected character"))).message,
                       "JSON could not be serialized because of error:\nunexpected character at byte 3")
        XCTAssertEqual(serialization(.propertyListSerializationFailed(error: SampleError(text: "bad plist"))).message,
                       "PropertyList could not be serialized because of error:\nbad plist")
        XCTAssertEqual(serialization(.customSerializationFailed(error: SampleError(text: "no"))).message,
                       "Custom response serializer failed with error:\nno")
        XCTAssertEqual(serialization(.inputDataTruncated(captured: 1024, total: 4096)).message,
                       "Response could not be serialized, input data was truncated at the capture limit: captured 1024 of 4096 bytes.")
        XCTAssertEqual(serialization(.inputDataTruncated(captured: 31, total: 31)).message,
                       "Response could not be serialized, input data was truncated: the transfer was cut after 31 bytes, or they decode past the decode limit.")
        XCTAssertEqual(serialization(.contentDecodingFailed(encoding: "gzip", message: "invalid header")).message,
                       "Content-Encoding \"gzip\" could not be decoded because of error:\ninvalid header")
    }

    func testValidationMessages() {
        XCTAssertEqual(validation(.unacceptableStatusCode(code: 404)).message, "Response status code was unacceptable: 404.")
        XCTAssertEqual(validation(.unacceptableContentType(acceptableContentTypes: ["application/json", "text/html"],
                                                           responseContentType: "application/xml")).message,
                       "Response Content-Type \"application/xml\" does not match any acceptable types: application/json, text/html.")
        XCTAssertEqual(validation(.missingContentType(acceptableContentTypes: ["application/json"])).message,
                       "Response Content-Type was missing and acceptable content types (application/json) do not match \"*/*\".")
        XCTAssertEqual(validation(.customValidationFailed(error: SampleError(text: "nope"))).message,
                       "Custom response validation failed with error: nope")
    }

    func testLocalizedDescriptionIsTheMessage() {
        let error: Error = serialization(.inputDataNil)
        XCTAssertEqual(error.localizedDescription, "Response could not be serialized, input data was nil.")
        XCTAssertEqual("\(serialization(.inputDataNil))", "Response could not be serialized, input data was nil.")
    }

    func testFoundationErrorsUseTheirDebugDescription() {
        let error = NSError(domain: NSCocoaErrorDomain, code: 3840,
                            userInfo: [NSDebugDescriptionErrorKey: "Unexpected character d at line 1"])
        XCTAssertEqual(serialization(.propertyListSerializationFailed(error: error)).message,
                       "PropertyList could not be serialized because of error:\nUnexpected character d at line 1")
    }

    func testErrorAndReasonNames() {
        let cases: [(TapwireError, String, String)] = [
            (serialization(.inputDataNil), "responseSerializationFailed", "inputDataNil"),
            (serialization(.inputDataNilOrZeroLength), "responseSerializationFailed", "inputDataNilOrZeroLength"),
            (serialization(.stringSerializationFailed(encoding: "utf-8")), "responseSerializationFailed", "stringSerializationFailed"),
            (serialization(.jsonSerializationFailed(error: SampleError())), "responseSerializationFailed", "jsonSerializationFailed"),
            (serialization(.propertyListSerializationFailed(error: SampleError())), "responseSerializationFailed", "propertyListSerializationFailed"),
            (serialization(.customSerializationFailed(error: SampleError())), "responseSerializationFailed", "customSerializationFailed"),
            (serialization(.msgpackSerializationFailed(error: MsgPackError(offset: 3, message: "x"))), "responseSerializationFailed", "msgpackSerializationFailed"),
            (serialization(.inputDataTruncated(captured: 1, total: 2)), "responseSerializationFailed", "inputDataTruncated"),
            (serialization(.contentDecodingFailed(encoding: "br", message: "x")), "responseSerializationFailed", "contentDecodingFailed"),
            (validation(.unacceptableStatusCode(code: 500)), "responseValidationFailed", "unacceptableStatusCode"),
            (validation(.unacceptableContentType(acceptableContentTypes: [], responseContentType: "a/b")), "responseValidationFailed", "unacceptableContentType"),
            (validation(.missingContentType(acceptableContentTypes: [])), "responseValidationFailed", "missingContentType"),
            (validation(.customValidationFailed(error: SampleError())), "responseValidationFailed", "customValidationFailed"),
            (.transportFailed(TransportFailure(code: .upstreamConnectFailed, message: "connection refused")), "transportFailed", "upstreamConnectFailed"),
        ]
        for (error, name, reason) in cases {
            XCTAssertEqual(error.errorName, name)
            XCTAssertEqual(error.reasonName, reason)
        }
    }

    func testTransportFailureCodesAreStable() {
        // The record's `error.code` strings: scripts filter on them, so none may change.
        XCTAssertEqual(TransportFailure.Code.allCases.map(\.rawValue),
                       ["upstreamConnectFailed", "upstreamDNSFailed", "upstreamTimeout", "upstreamReset", "malformedResponse",
                        "loopDetected", "clientAborted", "clientTimeout", "malformedRequest", "tlsFailed", "clientTLSFailed",
                        "shuttingDown", "http2ProtocolError", "http2HeaderListTooLarge", "http2RapidReset", "http2Flood",
                        "upstreamProxyFailed", "upstreamProxyAuthFailed"])
        let failure = TapwireError.transportFailed(TransportFailure(code: .upstreamTimeout, message: "no response within 10 s"))
        XCTAssertEqual(failure.message, "no response within 10 s")
        XCTAssertEqual(failure.transportFailure?.code, .upstreamTimeout)
    }

    func testLogFieldsForTapwireAndForeignErrors() {
        XCTAssertEqual(ErrorLogFields(serialization(.jsonSerializationFailed(error: SampleError(text: "bad")))),
                       ErrorLogFields(error: "responseSerializationFailed", reason: "jsonSerializationFailed",
                                      message: "JSON could not be serialized because of error:\nbad"))
        XCTAssertEqual(ErrorLogFields(SampleError(text: "mine")),
                       ErrorLogFields(error: "SampleError", reason: nil, message: "mine"))
        XCTAssertEqual(ErrorLogFields(TransportFailure(code: .clientAborted, message: "client closed")),
                       ErrorLogFields(error: "transportFailed", reason: "clientAborted", message: "client closed"))
    }
}
