import Foundation
import HTTP1
import XCTest
@testable import ResponseSerialization

/// Validation rules beyond the numbered behaviours of `SpecBehaviourTests`.
final class ValidationTests: XCTestCase {
    func testMIMEParsing() {
        XCTAssertEqual(MIMEType("  Application/JSON ; charset=utf-8")?.description, "application/json")
        XCTAssertEqual(MIMEType("text/*;q=0.5")?.subtype, "*")
        XCTAssertNil(MIMEType("   "))
        XCTAssertTrue(MIMEType("*/*")?.isWildcard == true)
    }

    func testWildcardsCountOnlyOnTheAcceptableSide() {
        let json = MIMEType("application/json")!
        XCTAssertTrue(MIMEType("application/*")!.matches(json))
        XCTAssertFalse(json.matches(MIMEType("application/*")!))
        XCTAssertFalse(MIMEType("text/*")!.matches(json))
        XCTAssertFalse(MIMEType("*/xml")!.matches(json))
    }

    func testEmptyStatusSetAlwaysFails() {
        let exchange = exchange(response: httpResponse(200), data: bytes("x")).validate(statusCode: [Int]())
        guard case .unacceptableStatusCode(200)? = validationReason(exchange.error) else { return XCTFail() }
    }

    func testMissingContentTypePassesOnlyWithFullWildcard() {
        let noType = exchange(response: httpResponse(200), data: bytes("x")).validate(contentType: ["text/plain", "*/*"])
        XCTAssertNil(noType.error)
        let failing = exchange(response: httpResponse(200), data: bytes("x")).validate(contentType: ["text/plain", "application/*"])
        guard case .missingContentType(let acceptable)? = validationReason(failing.error) else { return XCTFail() }
        XCTAssertEqual(acceptable, ["application/*", "text/plain"])
    }

    func testAcceptableListInErrorIsSorted() {
        let exchange = exchange(response: httpResponse(200, contentType: "image/png"), data: bytes("x"))
            .validate(contentType: ["text/html", "application/json", "text/css"])
        guard case .unacceptableContentType(let acceptable, _)? = validationReason(exchange.error) else { return XCTFail() }
        XCTAssertEqual(acceptable, ["application/json", "text/css", "text/html"])
    }

    func testValidateWithoutAcceptHeaderAcceptsAnyType() {
        let exchange = exchange(request: getRequest(), response: httpResponse(200, contentType: "image/png"), data: bytes("x")).validate()
        XCTAssertNil(exchange.error)
    }

    func testValidateSplitsAcceptOnCommas() {
        XCTAssertEqual(ResponseValidation.acceptableContentTypes(of: getRequest(accept: "text/html, application/json;q=0.9")),
                       ["text/html", "application/json;q=0.9"])
        let exchange = exchange(request: getRequest(accept: "text/html, application/json;q=0.9"),
                                response: httpResponse(200, contentType: "application/json"), data: bytes("{}")).validate()
        XCTAssertNil(exchange.error)
    }

    func testBadStatusHidesContentTypeFailureInValidate() {
        let exchange = exchange(request: getRequest(accept: "application/json"),
                                response: httpResponse(503, contentType: "text/html"), data: bytes("down")).validate()
        guard case .unacceptableStatusCode(503)? = validationReason(exchange.error) else { return XCTFail() }
    }

    func testValidatorSkippedWithoutResponse() {
        var ran = false
        let exchange = exchange(response: nil, data: nil).validate { _, _, _ in ran = true; return .failure(SampleError()) }
        XCTAssertFalse(ran)
        XCTAssertNil(exchange.error)
    }

    func testCustomValidatorErrorsAreWrappedAndTapwireErrorsKept() {
        let custom = exchange(data: bytes("x")).validate { _, _, _ in .failure(SampleError(text: "custom")) }
        guard case .customValidationFailed(let inner)? = validationReason(custom.error) else { return XCTFail() }
        XCTAssertEqual(inner as? SampleError, SampleError(text: "custom"))

        let own = exchange(data: bytes("x")).validate { _, response, _ in
            .failure(TapwireError.responseValidationFailed(reason: .unacceptableStatusCode(code: response.status)))
        }
        guard case .unacceptableStatusCode(200)? = validationReason(own.error) else { return XCTFail() }
    }

    func testCustomValidatorSeesRequestResponseAndData() {
        var seen: (String?, Int, Data?)?
        exchange(request: getRequest("POST"), response: httpResponse(201), data: bytes("body"))
            .validate { request, response, data in seen = (request?.method, response.status, data); return .success }
        XCTAssertEqual(seen?.0, "POST")
        XCTAssertEqual(seen?.1, 201)
        XCTAssertEqual(seen?.2, bytes("body"))
    }

    func testCustomSerializerWrapsForeignErrors() {
        let failing = DataResponseSerializer<Int>.custom { _, _, _ in throw SampleError(text: "bad shape") }
        let result = failing.serializeResponse(getRequest(), httpResponse(200), bytes("x"), nil)
        guard case .customSerializationFailed(let inner)? = serializationReason(result) else { return XCTFail("\(result)") }
        XCTAssertEqual(inner as? SampleError, SampleError(text: "bad shape"))
    }

    func testEmptyResponseRulesAreConfigurable() {
        let serializer = DataResponseSerializer<JSON>.json(emptyResponseCodes: [200], emptyRequestMethods: [])
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(200), Data(), nil).get(), .null)
        let head = serializer.serializeResponse(getRequest("HEAD"), httpResponse(204), nil, nil)
        guard case .inputDataNilOrZeroLength? = serializationReason(head) else { return XCTFail("\(head)") }
    }

    func testVersion5RuleParsesABodyOn204() {
        // Version 4 returned the empty value for 204 even with a body; version 5 parses the body.
        let result = DataResponseSerializer<JSON>.json().serializeResponse(getRequest(), httpResponse(204), bytes("[1]"), nil)
        XCTAssertEqual(try result.get(), .array([.number("1")]))
        XCTAssertEqual(try DataResponseSerializer<JSON>.json().serializeResponse(getRequest(), httpResponse(304), Data(), nil).get(), .null)
    }
}
