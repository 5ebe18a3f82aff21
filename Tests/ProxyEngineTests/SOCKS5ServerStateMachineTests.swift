import HTTP1
import XCTest
@testable import ProxyEngine

/// `SOCKS5ServerStateMachine` as playbooks: client bytes in, replies and decisions out.
final class SOCKS5ServerStateMachineTests: XCTestCase {
    typealias M = SOCKS5ServerStateMachine

    static let connectDomain: [UInt8] = [5, 1, 0, 3, 11] + Array("example.com".utf8) + [0x01, 0xBB]

    func testNoAuthenticationThenConnectByName() {
        var m = M(credentials: nil)
        let greeting = m.received([5, 1, 0])
        XCTAssertEqual(greeting.consumed, 3)
        XCTAssertEqual(Array(greeting.actions), [.reply([5, 0])])
        let request = m.received(Self.connectDomain)
        XCTAssertEqual(request.consumed, Self.connectDomain.count)
        let target = HTTPAuthority(scheme: "", host: "example.com", port: 443)
        XCTAssertEqual(Array(request.actions), [.connect(target)])
        XCTAssertEqual(m.state, .connecting(target))
        XCTAssertEqual(m.connectSucceeded(), [5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(m.state, .done)
        // Final: nothing more is parsed or answered.
        XCTAssertEqual(m.received([5, 1, 0]).consumed, 0)
        XCTAssertEqual(m.connectFailed(.upstreamConnectFailed), [])
    }

    func testMessagesArrivingInPiecesAreParsedWhenWhole() {
        var m = M(credentials: nil)
        let all: [UInt8] = [5, 2, 2, 0] + [5, 1, 0, 1, 127, 0, 0, 1, 0x1F, 0x90]
        var buffered: [UInt8] = []
        var actions: [M.Action] = []
        for byte in all {
            buffered.append(byte)
            let r = m.received(buffered)
            buffered.removeFirst(r.consumed)
            actions += Array(r.actions)
        }
        XCTAssertEqual(actions, [.reply([5, 0]), .connect(HTTPAuthority(scheme: "", host: "127.0.0.1", port: 8080))])
        XCTAssertEqual(buffered, [])
    }

    func testAGreetingAndRequestSentTogetherAreBothParsed() {
        var m = M(credentials: nil)
        let r = m.received([5, 1, 0] + Self.connectDomain + [0x16])
        XCTAssertEqual(r.consumed, 3 + Self.connectDomain.count, "the byte after the request is the tunnel's, left in the input")
        XCTAssertEqual(Array(r.actions), [.reply([5, 0]), .connect(HTTPAuthority(scheme: "", host: "example.com", port: 443))])
    }

    func testIPv6TargetIsWrittenAsRFC5952Text() {
        var m = M(credentials: nil)
        _ = m.received([5, 1, 0])
        let r = m.received([5, 1, 0, 4] + [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1] + [0, 80])
        XCTAssertEqual(Array(r.actions), [.connect(HTTPAuthority(scheme: "", host: "::1", port: 80))])
        XCTAssertEqual(M.ipv6Text([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]), "2001:db8::1:0:0:1")
        XCTAssertEqual(M.ipv6Text([0xfe, 0x80] + [UInt8](repeating: 0, count: 13) + [5]), "fe80::5")
    }

    func testUsernamePasswordAcceptedAndRefused() {
        let users = SOCKS5Credentials(["ada": "s3cret"])
        var m = M(credentials: users)
        XCTAssertEqual(Array(m.received([5, 2, 0, 2]).actions), [.reply([5, 2])])
        let auth: [UInt8] = [1, 3] + Array("ada".utf8) + [6] + Array("s3cret".utf8)
        XCTAssertEqual(Array(m.received(auth).actions), [.reply([1, 0])])
        XCTAssertEqual(m.state, .awaitingRequest)

        var wrong = M(credentials: users)
        _ = wrong.received([5, 1, 2])
        let bad: [UInt8] = [1, 3] + Array("ada".utf8) + [6] + Array("s3creT".utf8)
        XCTAssertEqual(Array(wrong.received(bad).actions), [.reply([1, 1]), .close(reason: "wrong SOCKS5 username or password")])
        XCTAssertEqual(wrong.state, .failed)

        var unknown = M(credentials: users)
        _ = unknown.received([5, 1, 2])
        XCTAssertEqual(Array(unknown.received([1, 2] + Array("bo".utf8) + [6] + Array("s3cret".utf8)).actions).first, .reply([1, 1]))
    }

    func testNoAcceptableMethodIsRefused() {
        // Credentials required, the client offers only "none".
        var m = M(credentials: SOCKS5Credentials(["a": "b"]))
        let r = m.received([5, 1, 0])
        XCTAssertEqual(Array(r.actions).first, .reply([5, 0xFF]))
        XCTAssertEqual(m.state, .failed)
        // No credentials, the client offers only username/password.
        var n = M(credentials: nil)
        XCTAssertEqual(Array(n.received([5, 1, 2]).actions).first, .reply([5, 0xFF]))
    }

    func testBindAndUDPAssociateAndUnknownAddressTypesGetTheirReplies() {
        for (command, reply) in [(UInt8(2), M.Reply.commandNotSupported), (3, .commandNotSupported), (9, .commandNotSupported)] {
            var m = M(credentials: nil)
            _ = m.received([5, 1, 0])
            let r = m.received([5, command, 0, 1, 10, 0, 0, 1, 0, 80])
            XCTAssertEqual(Array(r.actions).first, .reply(M.reply(reply)), "command \(command)")
            XCTAssertEqual(m.state, .failed)
        }
        var m = M(credentials: nil)
        _ = m.received([5, 1, 0])
        XCTAssertEqual(Array(m.received([5, 1, 0, 7, 1, 2, 3]).actions).first, .reply(M.reply(.addressTypeNotSupported)))
    }

    func testNotSOCKS5ClosesWithoutAReply() {
        var m = M(credentials: nil)
        let r = m.received(Array("GET / HTTP/1.1\r\n".utf8))
        guard case .close = Array(r.actions).first else { return XCTFail("\(Array(r.actions))") }
        XCTAssertEqual(r.actions.count, 1)
        XCTAssertEqual(m.state, .failed)
    }

    func testAnEmptyHostNameIsRefused() {
        var m = M(credentials: nil)
        _ = m.received([5, 1, 0])
        XCTAssertEqual(Array(m.received([5, 1, 0, 3, 0, 0, 80]).actions).first, .reply(M.reply(.generalFailure)))
    }

    func testConnectFailuresMapToReplyCodes() {
        XCTAssertEqual(M.Reply(failure: .upstreamDNSFailed), .hostUnreachable)
        XCTAssertEqual(M.Reply(failure: .upstreamConnectFailed), .connectionRefused)
        XCTAssertEqual(M.Reply(failure: .loopDetected), .notAllowed)
        var m = M(credentials: nil)
        _ = m.received([5, 1, 0])
        _ = m.received(Self.connectDomain)
        XCTAssertEqual(m.connectFailed(.upstreamConnectFailed), [5, 5, 0, 1, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(m.state, .failed)
    }
}
