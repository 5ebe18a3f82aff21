import XCTest
@testable import HTTP1

final class HeadParserTests: XCTestCase {
    // MARK: - Valid requests

    func testSimpleGet() {
        let text = "GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n"
        guard let (head, length) = request(text) else { return }
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(head.target, "/index.html?q=1")
        XCTAssertEqual(head.version, .http1_1)
        XCTAssertEqual(head.headers.fields, [.init(name: "Host", value: "example.com"), .init(name: "Accept", value: "*/*")])
        XCTAssertEqual(length, text.utf8.count)
    }

    func testPostWithContentLengthLeavesBodyAfterHead() {
        let text = "POST /submit HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
        guard let (head, length) = request(text) else { return }
        XCTAssertEqual(head.method, "POST")
        XCTAssertEqual(length, text.utf8.count - 5)
        XCTAssertEqual(try head.bodyFraming(), .contentLength(5))
    }

    func testHTTP10WithoutHostIsAccepted() {
        guard let (head, _) = request("GET / HTTP/1.0\r\n\r\n") else { return }
        XCTAssertEqual(head.version, .http1_0)
        XCTAssertTrue(head.headers.isEmpty)
    }

    func testFieldNameCaseAndOrderKept() {
        guard let (head, _) = request("GET / HTTP/1.1\r\nhOsT: a\r\nX-B: 1\r\nx-a: 2\r\nX-B: 3\r\n\r\n") else { return }
        XCTAssertEqual(head.headers.fields.map(\.name), ["hOsT", "X-B", "x-a", "X-B"])
        XCTAssertEqual(head.headers["x-b"], ["1", "3"])
    }

    /// Fields added from bytes (an HTTP/2 origin's header callback) and from strings share
    /// one list: order, lookups, and bytes that are not UTF-8 kept as they came.
    func testFieldsAddedFromBytesAndStrings() {
        var headers: HTTPHeaders = [("Content-Type", "text/plain")]
        let name = Array("x-raw".utf8), value: [UInt8] = [0x61, 0xFF, 0x62]
        name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { v in headers.add(name: n, value: v) } }
        headers.add(name: "x-after", value: "1")
        XCTAssertEqual(headers.fields.map(\.name), ["Content-Type", "x-raw", "x-after"])
        XCTAssertEqual(headers.first(name: "X-RAW"), "a\u{FFFD}b")
        var raw: [[UInt8]] = []
        headers.forEachField { _, v in raw.append(Array(v)) }
        XCTAssertEqual(raw, [Array("text/plain".utf8), value, Array("1".utf8)])
    }

    func testOWSAroundValueTrimmedButInnerSpaceKept() {
        guard let (head, _) = request("GET / HTTP/1.1\r\nHost:h\r\nX: \t a  b \t\r\nY:\r\nZ:   \r\n\r\n") else { return }
        XCTAssertEqual(head.headers.first(name: "x"), "a  b")
        XCTAssertEqual(head.headers.first(name: "y"), "")
        XCTAssertEqual(head.headers.first(name: "z"), "")
        XCTAssertEqual(head.headers.first(name: "host"), "h")
    }

    func testObsTextAllowedInValue() {
        let bytes = Wire.bytes("GET / HTTP/1.1\r\nHost: h\r\nX: caf") + [0xC3, 0xA9] + Wire.bytes("\r\n\r\n")
        guard let (head, _) = request(bytes) else { return }
        XCTAssertEqual(head.headers.first(name: "x"), "café")
    }

    func testNonUTF8ValueIsForwardedAsSentAndReadWithReplacement() {
        // Latin-1 "café": obs-text that is not UTF-8. The wire form keeps the byte; as a
        // string it reads with U+FFFD (what the log record shows).
        let bytes = Wire.bytes("GET / HTTP/1.1\r\nHost: h\r\nX: caf") + [0xE9] + Wire.bytes("\r\n\r\n")
        guard let (head, _) = request(bytes) else { return }
        XCTAssertEqual(head.headers.first(name: "x"), "caf\u{FFFD}")
        XCTAssertEqual(head.serialized(), bytes)
        var seen: [[UInt8]] = []
        head.headers.forEachField { _, value in seen.append(Array(value)) }
        XCTAssertEqual(seen, [Array("h".utf8), Array("caf".utf8) + [0xE9]])
    }

    func testLeadingEmptyLinesSkippedAndCounted() {
        let text = "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"
        guard let (head, length) = request(text) else { return }
        XCTAssertEqual(head.method, "GET")
        XCTAssertEqual(length, text.utf8.count)
    }

    func testPipelinedRequestsFoundByHeadLength() {
        let first = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
        let second = "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"
        let all = Wire.bytes(first + second)
        guard let (head1, length1) = request(all) else { return }
        XCTAssertEqual(head1.target, "/a")
        XCTAssertEqual(length1, first.utf8.count)
        guard let (head2, length2) = request(Array(all[length1...])) else { return }
        XCTAssertEqual(head2.target, "/b")
        XCTAssertEqual(length2, second.utf8.count)
    }

    func testAbsoluteFormAndAuthorityFormTargets() {
        XCTAssertEqual(request("GET http://example.com/x?y HTTP/1.1\r\nHost: example.com\r\n\r\n")?.head.target,
                       "http://example.com/x?y")
        XCTAssertEqual(request("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")?.head.target,
                       "example.com:443")
        XCTAssertEqual(request("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")?.head.target, "*")
    }

    func testExtensionMethodTokenAccepted() {
        XCTAssertEqual(request("M-SEARCH * HTTP/1.1\r\nHost: h\r\n\r\n")?.head.method, "M-SEARCH")
    }

    // MARK: - Incomplete and limits

    func testIncompleteUntilEmptyLine() {
        assertIncomplete("")
        assertIncomplete("GET / HTTP/1.1")
        assertIncomplete("GET / HTTP/1.1\r")
        assertIncomplete("GET / HTTP/1.1\r\nHost: h\r\n")
        assertIncomplete("GET / HTTP/1.1\r\nHost: h\r\n\r")
        assertIncomplete("\r\n")
    }

    func testEveryPrefixOfAValidHeadIsIncomplete() {
        let bytes = Wire.bytes("\r\nPOST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n")
        for n in 0..<bytes.count {
            XCTAssertNoThrow(try {
                guard case .incomplete = try Wire.parseRequest(Array(bytes[..<n])) else {
                    return XCTFail("prefix \(n) not incomplete")
                }
            }())
        }
        XCTAssertEqual(request(bytes)?.length, bytes.count)
    }

    func testHeadTooLargeWithoutCompleteHead() {
        let text = "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "a", count: 100)
        assertRequestRefused(text, .headTooLarge, status: 431, max: 64)
    }

    func testHeadTooLargeEvenWhenComplete() {
        let text = "GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "a", count: 100) + "\r\n\r\n"
        assertRequestRefused(text, .headTooLarge, status: 431, max: 64)
    }

    func testHeadOfExactlyTheLimitIsAccepted() throws {
        let text = "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
        guard case .complete(_, let length) = try Wire.parseRequest(Wire.bytes(text), max: text.utf8.count) else {
            return XCTFail("not complete")
        }
        XCTAssertEqual(length, text.utf8.count)
        assertRequestRefused(text, .headTooLarge, status: 431, max: text.utf8.count - 1)
    }

    func testEndlessEmptyLinesHitTheLimit() {
        assertRequestRefused(String(repeating: "\r\n", count: 100), .headTooLarge, status: 431, max: 64)
    }

    func testIncompleteAtLimitIsNotTooLarge() {
        assertIncomplete("GET / HTTP/1.1\r\nHost: h", max: 23)
    }

    // MARK: - Request-line refusals

    func testRequestLineRefusals() {
        assertRequestRefused("GET  / HTTP/1.1\r\nHost: h\r\n\r\n")          // double SP
        assertRequestRefused("GET /  HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1 \r\nHost: h\r\n\r\n")         // trailing SP
        assertRequestRefused(" GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET /\tx HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET / x HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("G(T / HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused(" / HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET HTTP/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET /\r\nHost: h\r\n\r\n")                     // HTTP/0.9 style
        assertRequestRefused("GET / http/1.1\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1x\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET / HTTP/11\r\nHost: h\r\n\r\n")
    }

    func testControlAndNonASCIIBytesInTargetRefused() {
        assertRequestRefused(Wire.bytes("GET /a") + [0x00] + Wire.bytes("b HTTP/1.1\r\nHost: h\r\n\r\n"), .malformed, status: 400)
        assertRequestRefused(Wire.bytes("GET /a") + [0x7F] + Wire.bytes(" HTTP/1.1\r\nHost: h\r\n\r\n"), .malformed, status: 400)
        assertRequestRefused(Wire.bytes("GET /a") + [0xC3, 0xA9] + Wire.bytes(" HTTP/1.1\r\nHost: h\r\n\r\n"), .malformed, status: 400)
    }

    func testOtherVersionsRefused() {
        assertRequestRefused("GET / HTTP/1.2\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET / HTTP/2.0\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET / HTTP/0.9\r\nHost: h\r\n\r\n")
        assertRequestRefused("GET / HTTP/3.0\r\nHost: h\r\n\r\n")
    }

    func testHTTP2PrefaceRefused() {
        assertRequestRefused("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    }

    func testBareLFLineEndingsRefused() {
        assertRequestRefused("GET / HTTP/1.1\nHost: h\n\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\n\n")
        assertRequestRefused("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
    }

    func testBareLFRefusedBeforeHeadIsComplete() {
        assertRequestRefused("GET / HTTP/1.1\nHost: h")
    }

    func testBareCRRefused() {
        assertRequestRefused("GET / HTTP/1.1\rHost: h\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\n\r\r\n")
    }

    // MARK: - Field refusals

    func testWhitespaceBeforeColonRefused() {
        assertRequestRefused("GET / HTTP/1.1\r\nHost : h\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\nContent-Length\t: 0\r\n\r\n")
    }

    func testObsFoldRefused() {
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\n Host: h\r\n\r\n")
    }

    func testNULInFieldRefused() {
        assertRequestRefused(Wire.bytes("GET / HTTP/1.1\r\nHost: h\r\nX: a") + [0] + Wire.bytes("b\r\n\r\n"), .malformed, status: 400)
        assertRequestRefused(Wire.bytes("GET / HTTP/1.1\r\nHost: h\r\nX") + [0] + Wire.bytes(": b\r\n\r\n"), .malformed, status: 400)
    }

    func testOtherControlCharactersInValueRefused() {
        assertRequestRefused(Wire.bytes("GET / HTTP/1.1\r\nHost: h\r\nX: a") + [0x01] + Wire.bytes("\r\n\r\n"), .malformed, status: 400)
        assertRequestRefused(Wire.bytes("GET / HTTP/1.1\r\nHost: h\r\nX: a") + [0x7F] + Wire.bytes("\r\n\r\n"), .malformed, status: 400)
    }

    func testEmptyFieldNameRefused() {
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n")
    }

    func testNonTokenFieldNameRefused() {
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\nX(Y): v\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\nX/Y: v\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n")
        assertRequestRefused(Wire.bytes("GET / HTTP/1.1\r\nHost: h\r\nX") + [0xC3, 0xA9] + Wire.bytes(": v\r\n\r\n"), .malformed, status: 400)
    }

    // MARK: - Host

    func testMissingHostInHTTP11Refused() {
        assertRequestRefused("GET / HTTP/1.1\r\nAccept: */*\r\n\r\n")
    }

    func testMultipleHostRefused() {
        assertRequestRefused("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n")
    }

    func testInvalidHostValueRefused() {
        assertRequestRefused("GET / HTTP/1.1\r\nHost: a b\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n")
        assertRequestRefused("GET / HTTP/1.1\r\nHost: u@h\r\n\r\n")
    }

    func testHostVariantsAccepted() {
        XCTAssertNotNil(request("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"))
        XCTAssertNotNil(request("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
        XCTAssertNotNil(request("GET / HTTP/1.1\r\nHost:\r\n\r\n"))   // RFC 9112 §3.2: empty when no authority
    }

    // MARK: - Responses

    func testStatusLine() {
        guard let (head, length) = response("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n") else { return }
        XCTAssertEqual(head.status, 404)
        XCTAssertEqual(head.reason, "Not Found")
        XCTAssertEqual(head.version, .http1_1)
        XCTAssertEqual(head.headers.first(name: "content-length"), "0")
        XCTAssertEqual(length, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8.count)
    }

    func testEmptyReasonWithAndWithoutSpace() {
        XCTAssertEqual(response("HTTP/1.1 200 \r\n\r\n")?.head.reason, "")
        // Accepted leniently: the line is unambiguous and real servers send it.
        XCTAssertEqual(response("HTTP/1.1 200\r\n\r\n")?.head.status, 200)
    }

    func testHTTP10ResponseAndObsTextReason() {
        guard let (head, _) = response("HTTP/1.0 200 OK  fine\r\n\r\n") else { return }
        XCTAssertEqual(head.version, .http1_0)
        XCTAssertEqual(head.reason, "OK  fine")
    }

    func testContinueThenFinalResponseInOneBuffer() {
        let text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        guard let (interim, length) = response(text) else { return }
        XCTAssertEqual(interim.status, 100)
        XCTAssertEqual(length, 25)
        XCTAssertEqual(try interim.bodyFraming(requestMethod: "POST"), BodyFraming.none)
        guard let (final, _) = response(String(decoding: Wire.bytes(text)[length...], as: UTF8.self)) else { return }
        XCTAssertEqual(final.status, 200)
    }

    func testOtherInterimResponses() {
        XCTAssertEqual(response("HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")?.head.status, 103)
        XCTAssertEqual(response("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")?.head.status, 101)
    }

    func testStatusLineRefusals() {
        assertResponseRefused("HTTP/1.1 20 OK\r\n\r\n")
        assertResponseRefused("HTTP/1.1 2000 OK\r\n\r\n")
        assertResponseRefused("HTTP/1.1 099 OK\r\n\r\n")
        assertResponseRefused("HTTP/1.1  200 OK\r\n\r\n")
        assertResponseRefused("HTTP/1.1 2x0 OK\r\n\r\n")
        assertResponseRefused("HTTP/1.2 200 OK\r\n\r\n")
        assertResponseRefused("HTTP/2 200 OK\r\n\r\n")
        assertResponseRefused("http/1.1 200 OK\r\n\r\n")
        assertResponseRefused("ICY 200 OK\r\n\r\n")
        assertResponseRefused("\r\nHTTP/1.1 200 OK\r\n\r\n")
        assertResponseRefused("HTTP/1.1 200 OK\nContent-Length: 0\n\n")
    }

    func testControlCharacterInReasonRefused() {
        assertResponseRefused("HTTP/1.1 200 O\u{1}K\r\n\r\n")
    }

    func testResponseFieldRulesMatchRequests() {
        assertResponseRefused("HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n")
        assertResponseRefused("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n")
        assertResponseRefused("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 100) + "\r\n\r\n", .headTooLarge, max: 64)
    }
}
