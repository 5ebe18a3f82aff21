import XCTest
@testable import ProxyEngine

/// `ConnectPayloadStateMachine` as playbooks: routes and first bytes in, decisions out.
final class ConnectPayloadStateMachineTests: XCTestCase {
    typealias M = ConnectPayloadStateMachine

    func sent(_ m: inout M, _ text: String) -> M.Decision? {
        Array(text.utf8).withUnsafeBytes { m.clientSent($0) }
    }

    func sent(_ m: inout M, bytes: [UInt8]) -> M.Decision? {
        bytes.withUnsafeBytes { m.clientSent($0) }
    }

    func testBlindListsWinOverEverything() {
        XCTAssertEqual(M.route(interceptsTLS: true, keepsBlind: true), .blind)
        XCTAssertEqual(M.route(interceptsTLS: false, keepsBlind: true), .blind)
        XCTAssertEqual(M.route(interceptsTLS: true, keepsBlind: false), .inspect(interceptsTLS: true))
        XCTAssertEqual(M.route(interceptsTLS: false, keepsBlind: false), .inspect(interceptsTLS: false))
    }

    func testAClientHelloIsInterceptedOnlyForInterceptedHosts() {
        var intercepted = M(interceptsTLS: true)
        XCTAssertEqual(sent(&intercepted, bytes: [0x16]), .interceptTLS)
        var other = M(interceptsTLS: false)
        XCTAssertEqual(sent(&other, bytes: [0x16, 0x03, 0x01]), .blindTunnel)
    }

    func testPlainHTTPIsDecodedWhateverTheHost() {
        for intercepts in [true, false] {
            var m = M(interceptsTLS: intercepts)
            XCTAssertEqual(sent(&m, "GET /chat HTTP/1.1\r\n"), .decodeHTTP)
            var absolute = M(interceptsTLS: intercepts)
            XCTAssertEqual(sent(&absolute, "POST http://x/ HTTP/1.1"), .decodeHTTP)
            var options = M(interceptsTLS: intercepts)
            XCTAssertEqual(sent(&options, "OPTIONS * HTTP/1.1"), .decodeHTTP)
        }
    }

    func testAPrefixThatCouldStillBeARequestLineWaits() {
        var m = M(interceptsTLS: false)
        XCTAssertNil(sent(&m, ""))
        XCTAssertNil(sent(&m, "G"))
        XCTAssertNil(sent(&m, "GE"))
        XCTAssertNil(sent(&m, "GET"))
        XCTAssertNil(sent(&m, "GET "))
        XCTAssertEqual(m.state, .waiting(interceptsTLS: false))
        XCTAssertEqual(sent(&m, "GET /"), .decodeHTTP)
    }

    func testOtherProtocolsAreBlind() {
        for text in ["SSH-2.0-OpenSSH_9.6\r\n", "get / HTTP/1.1", " GET /", "GET  /", "\u{0}\u{1}", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"] {
            var m = M(interceptsTLS: true)
            XCTAssertEqual(sent(&m, text), .blindTunnel, text.debugDescription)
        }
        // A method longer than any real one is not waited for.
        var long = M(interceptsTLS: false)
        XCTAssertEqual(sent(&long, String(repeating: "A", count: M.maxMethodBytes + 1)), .blindTunnel)
        XCTAssertLessThanOrEqual(M.maxMethodBytes + 2, M.requestLinePrefixBytes)
    }

    func testTheOriginSpeakingFirstAClosedClientOrTheTimeoutMakeItBlind() {
        var speaks = M(interceptsTLS: false)
        XCTAssertEqual(speaks.upstreamSpokeFirst(), .blindTunnel)
        var ends = M(interceptsTLS: true)
        XCTAssertNil(sent(&ends, "GE"))
        XCTAssertEqual(ends.clientEnded(), .blindTunnel)
        var slow = M(interceptsTLS: false)
        XCTAssertEqual(slow.timedOut(), .blindTunnel)
    }

    func testADecisionIsFinal() {
        var m = M(interceptsTLS: true)
        XCTAssertEqual(sent(&m, "GET / HTTP/1.1"), .decodeHTTP)
        XCTAssertEqual(m.upstreamSpokeFirst(), .decodeHTTP)
        XCTAssertEqual(m.timedOut(), .decodeHTTP)
        XCTAssertEqual(sent(&m, bytes: [0x16]), .decodeHTTP)
        XCTAssertEqual(m.decision, .decodeHTTP)
    }
}
