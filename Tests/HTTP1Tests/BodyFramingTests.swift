import XCTest
@testable import HTTP1

/// Framing decisions (RFC 9112 §6) from heads parsed off the wire.
final class BodyFramingTests: XCTestCase {
    private func requestFraming(_ fields: String, version: String = "HTTP/1.1",
                                file: StaticString = #filePath, line: UInt = #line) -> Result<BodyFraming, HTTPParseError>? {
        guard let (head, _) = request("POST /p \(version)\r\nHost: h\r\n\(fields)\r\n", file: file, line: line) else { return nil }
        do { return .success(try head.bodyFraming()) } catch { return .failure(error) }
    }

    private func assertRequestFraming(_ fields: String, _ expected: BodyFraming, version: String = "HTTP/1.1",
                                      file: StaticString = #filePath, line: UInt = #line) {
        switch requestFraming(fields, version: version, file: file, line: line) {
        case .success(let framing): XCTAssertEqual(framing, expected, file: file, line: line)
        case .failure(let error): XCTFail("refused: \(error.reason)", file: file, line: line)
        case nil: break
        }
    }

    private func assertRequestFramingRefused(_ fields: String, _ kind: HTTPParseError.Kind, status: Int,
                                             version: String = "HTTP/1.1",
                                             file: StaticString = #filePath, line: UInt = #line) {
        switch requestFraming(fields, version: version, file: file, line: line) {
        case .success(let framing): XCTFail("accepted as \(framing)", file: file, line: line)
        case .failure(let error):
            XCTAssertEqual(error.kind, kind, error.reason, file: file, line: line)
            XCTAssertEqual(error.status, status, file: file, line: line)
        case nil: break
        }
    }

    private func responseFraming(_ head: String, method: String = "GET",
                                 file: StaticString = #filePath, line: UInt = #line) -> Result<BodyFraming, HTTPParseError>? {
        guard let (parsed, _) = response(head, file: file, line: line) else { return nil }
        do { return .success(try parsed.bodyFraming(requestMethod: method)) } catch { return .failure(error) }
    }

    private func assertResponseFraming(_ head: String, method: String = "GET", _ expected: BodyFraming,
                                       file: StaticString = #filePath, line: UInt = #line) {
        switch responseFraming(head, method: method, file: file, line: line) {
        case .success(let framing): XCTAssertEqual(framing, expected, file: file, line: line)
        case .failure(let error): XCTFail("refused: \(error.reason)", file: file, line: line)
        case nil: break
        }
    }

    private func assertResponseFramingRefused(_ head: String, method: String = "GET",
                                              file: StaticString = #filePath, line: UInt = #line) {
        switch responseFraming(head, method: method, file: file, line: line) {
        case .success(let framing): XCTFail("accepted as \(framing)", file: file, line: line)
        case .failure(let error): XCTAssertEqual(error.kind, .malformed, error.reason, file: file, line: line)
        case nil: break
        }
    }

    // MARK: - Requests: accepted

    func testNoBodyWithoutFramingFields() {
        assertRequestFraming("", .none)
    }

    func testContentLength() {
        assertRequestFraming("Content-Length: 5\r\n", .contentLength(5))
        assertRequestFraming("Content-Length: 0\r\n", .contentLength(0))
        assertRequestFraming("Content-Length: 007\r\n", .contentLength(7))
        assertRequestFraming("Content-Length: 18446744073709551615\r\n", .contentLength(UInt64.max))
    }

    func testIdenticalDuplicateContentLengthsAccepted() {
        assertRequestFraming("Content-Length: 5\r\nContent-Length: 5\r\n", .contentLength(5))
        assertRequestFraming("Content-Length: 5, 5\r\n", .contentLength(5))
        assertRequestFraming("Content-Length: 5,5 , 5\r\n", .contentLength(5))
    }

    func testChunked() {
        assertRequestFraming("Transfer-Encoding: chunked\r\n", .chunked)
        assertRequestFraming("Transfer-Encoding: CHUNKED\r\n", .chunked)
        assertRequestFraming("transfer-encoding: Chunked\r\n", .chunked)
    }

    func testKnownCodingsBeforeChunked() {
        assertRequestFraming("Transfer-Encoding: gzip, chunked\r\n", .chunked)
        assertRequestFraming("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", .chunked)
        assertRequestFraming("Transfer-Encoding: x-gzip, deflate, compress, x-compress, chunked\r\n", .chunked)
        assertRequestFraming("Transfer-Encoding: ,gzip,, chunked ,\r\n", .chunked)
    }

    // MARK: - Requests: refused

    func testTransferEncodingWithContentLengthRefused() {
        assertRequestFramingRefused("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 0\r\nTransfer-Encoding: chunked\r\n", .malformed, status: 400)
    }

    func testDifferingContentLengthsRefused() {
        assertRequestFramingRefused("Content-Length: 5\r\nContent-Length: 6\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 5, 6\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 5\r\nContent-Length: 5, 6\r\n", .malformed, status: 400)
    }

    func testContentLengthSyntaxRefused() {
        assertRequestFramingRefused("Content-Length: +5\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: -5\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 5 5\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 0x10\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: a\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 1.0\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length:\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 5,\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 1e3\r\n", .malformed, status: 400)
    }

    func testContentLengthOverflowRefused() {
        assertRequestFramingRefused("Content-Length: 18446744073709551616\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Content-Length: 99999999999999999999999\r\n", .malformed, status: 400)
    }

    func testChunkedNotLastRefused() {
        assertRequestFramingRefused("Transfer-Encoding: chunked, gzip\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n", .malformed, status: 400)
    }

    func testChunkedTwiceRefused() {
        assertRequestFramingRefused("Transfer-Encoding: chunked, chunked\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", .malformed, status: 400)
    }

    func testChunkedThenIdentityRefused() {
        assertRequestFramingRefused("Transfer-Encoding: chunked, identity\r\n", .malformed, status: 400)
    }

    func testFinalCodingNotChunkedRefused() {
        assertRequestFramingRefused("Transfer-Encoding: gzip\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: deflate\r\n", .malformed, status: 400)
    }

    func testUnknownCodingIsNotImplemented() {
        assertRequestFramingRefused("Transfer-Encoding: xchunked\r\n", .unsupportedTransferCoding, status: 501)
        assertRequestFramingRefused("Transfer-Encoding: identity\r\n", .unsupportedTransferCoding, status: 501)
        assertRequestFramingRefused("Transfer-Encoding: br, chunked\r\n", .unsupportedTransferCoding, status: 501)
        assertRequestFramingRefused("Transfer-Encoding: chunkedx\r\n", .unsupportedTransferCoding, status: 501)
    }

    func testMalformedTransferEncodingValueRefused() {
        assertRequestFramingRefused("Transfer-Encoding:\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: ,\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: \"chunked\"\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: chunked;q=1\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: chun ked\r\n", .malformed, status: 400)
    }

    /// U+212A KELVIN SIGN lowercases to "k": read as "chunked" here, it reached the origin as
    /// an unknown coding, so the two could disagree on where the body ends.
    func testNonASCIICodingIsRefusedNotFoldedToChunked() {
        assertRequestFramingRefused("Transfer-Encoding: chun\u{212A}ed\r\n", .malformed, status: 400)
        assertRequestFramingRefused("Transfer-Encoding: gzip, \u{212A}chunked\r\n", .malformed, status: 400)
        assertResponseFramingRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chun\u{212A}ed\r\n\r\n")
    }

    func testTransferEncodingInHTTP10Refused() {
        assertRequestFramingRefused("Transfer-Encoding: chunked\r\n", .malformed, status: 400, version: "HTTP/1.0")
    }

    func testContentLengthInHTTP10Accepted() {
        assertRequestFraming("Content-Length: 3\r\n", .contentLength(3), version: "HTTP/1.0")
    }

    // MARK: - Responses

    func testResponsesWithoutBody() {
        assertResponseFraming("HTTP/1.1 100 Continue\r\n\r\n", .none)
        assertResponseFraming("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", .none)
        assertResponseFraming("HTTP/1.1 103 Early Hints\r\n\r\n", .none)
        assertResponseFraming("HTTP/1.1 204 No Content\r\n\r\n", .none)
        assertResponseFraming("HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\n\r\n", .none)
        assertResponseFraming("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", method: "HEAD", .none)
        assertResponseFraming("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", method: "HEAD", .none)
        assertResponseFraming("HTTP/1.1 200 Connection established\r\n\r\n", method: "CONNECT", .none)
    }

    func testFailedConnectHasBody() {
        assertResponseFraming("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 3\r\n\r\n",
                              method: "CONNECT", .contentLength(3))
    }

    func testResponseContentLength() {
        assertResponseFraming("HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n", .contentLength(42))
        assertResponseFraming("HTTP/1.1 200 OK\r\nContent-Length: 42, 42\r\n\r\n", .contentLength(42))
    }

    func testResponseChunked() {
        assertResponseFraming("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", .chunked)
        assertResponseFraming("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", .chunked)
    }

    func testResponseTransferEncodingNotEndingInChunkedIsCloseDelimited() {
        assertResponseFraming("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", .closeDelimited)
        assertResponseFraming("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", .closeDelimited)
    }

    func testResponseWithoutFramingIsCloseDelimited() {
        assertResponseFraming("HTTP/1.1 200 OK\r\n\r\n", .closeDelimited)
        assertResponseFraming("HTTP/1.0 200 OK\r\n\r\n", .closeDelimited)
    }

    func testResponseFramingRefusals() {
        assertResponseFramingRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n")
        assertResponseFramingRefused("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")
        assertResponseFramingRefused("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n")
        assertResponseFramingRefused("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n")
        assertResponseFramingRefused("HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n")
        assertResponseFramingRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n")
        assertResponseFramingRefused("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    }

    /// The one-pass presence check behind both framings: names matched case-insensitively,
    /// look-alikes of the same length not taken for them.
    func testFramingFieldsPresent() {
        let cases: [(HTTPHeaders, Bool, Bool)] = [
            ([], false, false),
            ([("content-LENGTH", "1")], false, true),
            ([("TRANSFER-encoding", "chunked")], true, false),
            ([("Transfer-Encodinx", "chunked"), ("Content-Lengtx", "1"), ("Content-Length2", "1")], false, false),
            ([("Host", "h"), ("Transfer-Encoding", "chunked"), ("Content-Length", "3")], true, true),
        ]
        for (headers, te, cl) in cases {
            let found = headers.framingFieldsPresent()
            XCTAssertEqual(found.transferEncoding, te, "\(headers.fields)")
            XCTAssertEqual(found.contentLength, cl, "\(headers.fields)")
        }
        // A look-alike is no Content-Length: the response is close-delimited.
        let head = HTTPResponseHead(status: 200, reason: "OK", headers: [("Content-Lengtx", "5")])
        XCTAssertEqual(try head.bodyFraming(requestMethod: "GET"), .closeDelimited)
    }
}
