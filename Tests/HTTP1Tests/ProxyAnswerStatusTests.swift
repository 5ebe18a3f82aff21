import HTTP1
import XCTest

/// The statuses the proxy answers on its own behalf: one mapping each, which the engine's
/// every call site uses, so a refused request and its status line always agree.
final class ProxyAnswerStatusTests: XCTestCase {
    func testARefusedRequestIsAnsweredWithAStatusAndItsOwnReasonPhrase() {
        let cases: [(HTTPParseError.Kind, Int, String)] = [
            (.malformed, 400, "Bad Request"),
            (.headTooLarge, 431, "Request Header Fields Too Large"),
            (.unsupportedTransferCoding, 501, "Not Implemented"),
        ]
        for (kind, status, phrase) in cases {
            let error = HTTPParseError(kind, "why")
            XCTAssertEqual(error.status, status, "\(kind)")
            XCTAssertEqual(error.reasonPhrase, phrase, "\(kind)")
        }
    }

    func testTheParsersOwnErrorsCarryThePhraseOfTheirStatus() throws {
        let huge = Array("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 100))\r\n\r\n".utf8)
        XCTAssertThrowsError(try huge.withUnsafeBytes { try HTTPHeadParser.parseRequestHead($0, maxHeadBytes: 32) }) {
            let error = $0 as? HTTPParseError
            XCTAssertEqual(error?.status, 431)
            XCTAssertEqual(error?.reasonPhrase, "Request Header Fields Too Large")
        }
    }

    func testEveryStatusHasItsStandardPhraseAndStatusLine() {
        let expected: [Int: String] = [200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout",
                                       431: "Request Header Fields Too Large", 501: "Not Implemented", 502: "Bad Gateway",
                                       503: "Service Unavailable", 504: "Gateway Timeout", 508: "Loop Detected"]
        XCTAssertEqual(Set(ProxyStatus.allCases.map(\.code)), Set(expected.keys))
        for status in ProxyStatus.allCases {
            XCTAssertEqual(status.reasonPhrase, expected[status.code])
            XCTAssertEqual(status.statusLine, "HTTP/1.1 \(status.code) \(expected[status.code] ?? "")\r\n")
        }
    }

    func testATransportFailureBeforeAnyResponseIsAnsweredAsAGateway() {
        for code in TransportError.Code.allCases {
            let status = code.statusForClient.code, reason = code.statusForClient.reasonPhrase
            switch code {
            case .upstreamTimeout: XCTAssertEqual([String(status), reason], ["504", "Gateway Timeout"])
            case .loopDetected: XCTAssertEqual([String(status), reason], ["508", "Loop Detected"])
            default: XCTAssertEqual([String(status), reason], ["502", "Bad Gateway"], "\(code)")
            }
        }
    }
}
