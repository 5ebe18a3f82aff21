import XCTest
@testable import HTTP1

/// `serialized()` gives exact wire bytes, and those bytes parse back to the same head.
final class SerializationTests: XCTestCase {
    func testRequestWireBytes() {
        let head = HTTPRequestHead(method: "PUT", target: "/a?b=c", version: .http1_1,
                                   headers: [("Host", "example.com"), ("Content-Length", "0"), ("X-Empty", "")])
        XCTAssertEqual(String(decoding: head.serialized(), as: UTF8.self),
                       "PUT /a?b=c HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0\r\nX-Empty: \r\n\r\n")
    }

    func testRequestWithoutFields() {
        XCTAssertEqual(String(decoding: HTTPRequestHead(method: "GET", target: "/", version: .http1_0).serialized(), as: UTF8.self),
                       "GET / HTTP/1.0\r\n\r\n")
    }

    func testResponseWireBytes() {
        let head = HTTPResponseHead(status: 404, reason: "Not Found", headers: [("Content-Length", "9")])
        XCTAssertEqual(String(decoding: head.serialized(), as: UTF8.self),
                       "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\n")
        XCTAssertEqual(String(decoding: HTTPResponseHead(status: 204).serialized(), as: UTF8.self),
                       "HTTP/1.1 204 \r\n\r\n")
    }

    func testRequestRoundTrip() {
        let original = HTTPRequestHead(method: "POST", target: "/submit?x=%20y", version: .http1_1,
                                       headers: [("Host", "[::1]:8080"), ("Transfer-Encoding", "gzip, chunked"),
                                                 ("X-Multi", "a, b"), ("x-multi", "c"), ("X-Obs", "café")])
        let bytes = original.serialized()
        guard let (parsed, length) = request(bytes) else { return }
        XCTAssertEqual(parsed, original)
        XCTAssertEqual(length, bytes.count)
        XCTAssertEqual(parsed.serialized(), bytes)
    }

    func testWireRoundTripIsByteExactForCanonicalInput() {
        let wire = "GET /x HTTP/1.0\r\nHost: h\r\nConnection: keep-alive\r\n\r\n"
        XCTAssertEqual(request(wire).map { String(decoding: $0.head.serialized(), as: UTF8.self) }, wire)
    }

    func testResponseRoundTrip() {
        for original in [
            HTTPResponseHead(status: 200, reason: "OK", headers: [("Content-Type", "application/json"), ("Content-Length", "2")]),
            HTTPResponseHead(status: 100, reason: "Continue"),
            HTTPResponseHead(status: 599, reason: "", version: .http1_0, headers: [("Set-Cookie", "a=b; Path=/")]),
        ] {
            let bytes = original.serialized()
            do {
                guard case .complete(let parsed, let length) = try Wire.parseResponse(bytes) else { return XCTFail("incomplete") }
                XCTAssertEqual(parsed, original)
                XCTAssertEqual(length, bytes.count)
            } catch {
                XCTFail("refused: \(error.reason)")
            }
        }
    }
}
