import Foundation
import HTTP1
import XCTest
@testable import ResponseSerialization

/// The serializers' numbered behaviours (Alamofire's, as the proxy's records rely on them), one test each.
final class SpecBehaviourTests: XCTestCase {
    func test01_dataSerializerWithDataAndNoResponseSucceedsWithFourBytes() {
        let result = DataResponseSerializer<Data>.data().serializeResponse(nil, nil, bytes("data"), nil)
        XCTAssertEqual(try result.get().count, 4)
    }

    func test02_dataSerializerWithNilDataFailsInputDataNil() {
        let result = DataResponseSerializer<Data>.data().serializeResponse(nil, nil, nil, nil)
        guard case .inputDataNil? = serializationReason(result) else { return XCTFail("\(result)") }
    }

    func test03_anySerializerReturnsAnErrorPassedInUnchanged() {
        let passed = SampleError(text: "upstream went away")
        let request = getRequest(), response = httpResponse(200, contentType: "application/json")
        let data = bytes("{\"a\":1}")
        let results: [Result<Any, Error>] = [
            DataResponseSerializer<Data>.data().serializeResponse(request, response, data, passed).map { $0 },
            DataResponseSerializer<String>.string().serializeResponse(request, response, data, passed).map { $0 },
            DataResponseSerializer<JSON>.json().serializeResponse(request, response, data, passed).map { $0 },
            DataResponseSerializer<JSON>.propertyList().serializeResponse(request, response, data, passed).map { $0 },
            DataResponseSerializer<JSON>.jsonLines().serializeResponse(request, response, data, passed).map { $0 },
            DataResponseSerializer<JSON>.form().serializeResponse(request, response, data, passed).map { $0 },
            DataResponseSerializer<JSON>.eventStream().serializeResponse(request, response, data, passed).map { $0 },
        ]
        for result in results {
            guard case .failure(let error) = result else { XCTFail("expected failure"); continue }
            XCTAssertEqual(error as? SampleError, passed)
        }
    }

    func test04_dataSerializerWith204AndNoBodySucceedsEmpty() {
        let result = DataResponseSerializer<Data>.data().serializeResponse(getRequest(), httpResponse(204), nil, nil)
        XCTAssertEqual(try result.get(), Data())
    }

    /// Check 3: Data and String fail only on nil data; zero-length data on a plain 200
    /// is an empty value, where JSON and property lists fail (test 10).
    func test04b_dataAndStringZeroLengthOn200AreEmptyValues() {
        XCTAssertEqual(try DataResponseSerializer<Data>.data().serializeResponse(getRequest(), httpResponse(200), Data(), nil).get(), Data())
        XCTAssertEqual(try DataResponseSerializer<String>.string().serializeResponse(getRequest(), httpResponse(200), Data(), nil).get(), "")
        let utf8 = httpResponse(200, contentType: "text/plain; charset=utf-8")
        XCTAssertEqual(try DataResponseSerializer<String>.string().serializeResponse(getRequest(), utf8, Data(), nil).get(), "")
    }

    func test05_stringNilDataFailsOn200AndIsEmptyFor204_205AndHEAD() {
        let serializer = DataResponseSerializer<String>.string()
        let on200 = serializer.serializeResponse(getRequest(), httpResponse(200), nil, nil)
        guard case .inputDataNil? = serializationReason(on200) else { return XCTFail("\(on200)") }
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(204), nil, nil).get(), "")
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(205), nil, nil).get(), "")
        XCTAssertEqual(try serializer.serializeResponse(getRequest("HEAD"), httpResponse(200), nil, nil).get(), "")
    }

    func test06_stringByteE9WithoutCharsetIsLatin1() {
        let result = DataResponseSerializer<String>.string().serializeResponse(getRequest(), httpResponse(200), Data([0xE9]), nil)
        XCTAssertEqual(try result.get(), "é")
    }

    func test07_stringByteE9WithExplicitUTF8FailsNamingUTF8() {
        let result = DataResponseSerializer<String>.string(encoding: .utf8)
            .serializeResponse(getRequest(), httpResponse(200), Data([0xE9]), nil)
        guard case .stringSerializationFailed(let encoding)? = serializationReason(result) else { return XCTFail("\(result)") }
        XCTAssertEqual(encoding, "utf-8")
    }

    func test08_stringContentTypeCharsetUTF8InAnyCaseIsUsed() {
        let utf8 = Data("é€".utf8)
        for contentType in ["text/plain; charset=UTF-8", "text/plain; charset=utf-8", "text/plain;CHARSET=\"Utf-8\""] {
            let result = DataResponseSerializer<String>.string()
                .serializeResponse(getRequest(), httpResponse(200, contentType: contentType), utf8, nil)
            XCTAssertEqual(try result.get(), "é€", contentType)
        }
    }

    func test09_stringUTF32BytesWithCharsetUTF8Fails() {
        let utf32 = "random data".data(using: .utf32)!
        let result = DataResponseSerializer<String>.string()
            .serializeResponse(getRequest(), httpResponse(200, contentType: "text/plain; charset=utf-8"), utf32, nil)
        guard case .stringSerializationFailed(let encoding)? = serializationReason(result) else { return XCTFail("\(result)") }
        XCTAssertEqual(encoding, "utf-8")
    }

    func test10_jsonNilOrEmptyDataOn200FailsNilOrZeroLength() {
        for data in [nil, Data()] as [Data?] {
            let result = DataResponseSerializer<JSON>.json().serializeResponse(getRequest(), httpResponse(200), data, nil)
            guard case .inputDataNilOrZeroLength? = serializationReason(result) else { return XCTFail("\(result)") }
        }
    }

    func test11_jsonValidSucceedsAndInvalidFailsWithParserMessage() {
        let ok = DataResponseSerializer<JSON>.json().serializeResponse(getRequest(), httpResponse(200), bytes("{\"json\": true}"), nil)
        XCTAssertEqual(try ok.get(), .object([JSON.Member("json", .bool(true))]))
        let bad = DataResponseSerializer<JSON>.json()
            .serializeResponse(getRequest(), httpResponse(200), bytes("definitely not valid json"), nil)
        guard case .jsonSerializationFailed(let error)? = serializationReason(bad) else { return XCTFail("\(bad)") }
        XCTAssertTrue(error is JSONParseError, "\(error)")
    }

    func test12_jsonNilDataWith204_205OrHEADIsNull() {
        let serializer = DataResponseSerializer<JSON>.json()
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(204), nil, nil).get(), .null)
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(205), nil, nil).get(), .null)
        XCTAssertEqual(try serializer.serializeResponse(getRequest("HEAD"), httpResponse(200), nil, nil).get(), .null)
    }

    func test13_jsonBareFragmentIsAccepted() {
        let result = DataResponseSerializer<JSON>.json().serializeResponse(getRequest(), httpResponse(200), bytes("\"abc\""), nil)
        XCTAssertEqual(try result.get(), .string("abc"))
    }

    func test14_plistXMLAndBinaryOfTheSameDictionaryAreEqual() throws {
        let dictionary: [String: Any] = ["name": "tapwire", "count": 3, "ratio": 0.5, "on": true,
                                         "list": ["a", 1] as [Any]]
        let xml = try PropertyListSerialization.data(fromPropertyList: dictionary, format: .xml, options: 0)
        let binary = try PropertyListSerialization.data(fromPropertyList: dictionary, format: .binary, options: 0)
        XCTAssertNotEqual(xml, binary)
        let serializer = DataResponseSerializer<JSON>.propertyList()
        let fromXML = try serializer.serializeResponse(getRequest(), httpResponse(200), xml, nil).get()
        let fromBinary = try serializer.serializeResponse(getRequest(), httpResponse(200), binary, nil).get()
        XCTAssertEqual(fromXML, fromBinary)
        XCTAssertEqual(fromXML, .object([
            JSON.Member("count", .number("3")), JSON.Member("list", .array([.string("a"), .number("1")])),
            JSON.Member("name", .string("tapwire")), JSON.Member("on", .bool(true)), JSON.Member("ratio", .number("0.5")),
        ]))
    }

    func test15_plistInvalidDataFails() {
        let result = DataResponseSerializer<JSON>.propertyList()
            .serializeResponse(getRequest(), httpResponse(200), bytes("definitely not valid plist data"), nil)
        guard case .propertyListSerializationFailed? = serializationReason(result) else { return XCTFail("\(result)") }
    }

    func test16_validation404Against2xxFailsUnacceptableStatusCode() {
        let exchange = exchange(response: httpResponse(404), data: bytes("x")).validate(statusCode: 200..<300)
        guard case .unacceptableStatusCode(let code)? = validationReason(exchange.error) else { return XCTFail() }
        XCTAssertEqual(code, 404)
    }

    func test17_validationJSONResponseAgainstPatternsPasses() {
        let response = httpResponse(200, contentType: "application/json")
        for pattern in ["application/json; q=0.8; charset=utf-8", "*/*", "application/*", "*/json"] {
            let exchange = exchange(response: response, data: bytes("{}")).validate(contentType: [pattern])
            XCTAssertNil(exchange.error, pattern)
        }
    }

    func test18_validationXMLResponseAgainstOctetStreamFails() {
        let exchange = exchange(response: httpResponse(200, contentType: "application/xml"), data: bytes("<a/>"))
            .validate(contentType: ["application/octet-stream"])
        guard case .unacceptableContentType(let acceptable, let responseType)? = validationReason(exchange.error) else { return XCTFail() }
        XCTAssertEqual(acceptable, ["application/octet-stream"])
        XCTAssertEqual(responseType, "application/xml")
    }

    func test19_validation204WithNoBodyAgainstNoTypesPasses() {
        let exchange = exchange(response: httpResponse(204), data: nil).validate(contentType: [String]())
        XCTAssertNil(exchange.error)
    }

    func test20_validationFirstFailureWinsInAttachOrder() {
        let response = httpResponse(200, contentType: "application/xml")
        let statusFirst = exchange(response: response, data: bytes("<a/>"))
            .validate(statusCode: 400..<600).validate(contentType: ["application/json"])
        guard case .unacceptableStatusCode(let code)? = validationReason(statusFirst.error) else { return XCTFail() }
        XCTAssertEqual(code, 200)
        let typeFirst = exchange(response: response, data: bytes("<a/>"))
            .validate(contentType: ["application/json"]).validate(statusCode: 400..<600)
        guard case .unacceptableContentType? = validationReason(typeFirst.error) else { return XCTFail() }
    }

    func test21_validateUsesAcceptHeader() {
        let exchange = exchange(request: getRequest(accept: "application/json"),
                                response: httpResponse(200, contentType: "application/xml"), data: bytes("<a/>")).validate()
        guard case .unacceptableContentType(let acceptable, let responseType)? = validationReason(exchange.error) else { return XCTFail() }
        XCTAssertEqual(acceptable.first, "application/json")
        XCTAssertEqual(responseType, "application/xml")
    }
}
