import HTTP1
import XCTest
@testable import ProxyEngine

/// `UpstreamConnectionStateMachine` as playbooks: events in, actions out, no sockets.
final class UpstreamConnectionStateMachineTests: XCTestCase {
    typealias M = UpstreamConnectionStateMachine
    let plain = HTTPAuthority(scheme: "http", host: "origin.test", port: 80)
    let https = HTTPAuthority(scheme: "https", host: "origin.test", port: 443)
    let a1 = SocketAddress(parsing: "127.0.0.1:80")!
    let a2 = SocketAddress(parsing: "[::1]:80")!

    /// An action as a playbook reads it: the address tried, the error connecting ended with.
    enum Step: Equatable {
        case act(M.Action)
        case tryAddress(SocketAddress)
        case finishConnect(TransportError?)
        static let armConnectDeadline = Step.act(.armConnectDeadline)
        static let resolve = Step.act(.resolve)
        static let startTLS = Step.act(.startTLS)
        static let closeIdle = Step.act(.closeIdle)
        static func reportPhase(_ p: M.ConnectPhase) -> Step { .act(.reportPhase(p)) }
        static func armIdleTimer(after s: Double) -> Step { .act(.armIdleTimer(after: s)) }
    }

    func steps(_ list: ActionList<M.Action>, _ m: M) -> [Step] {
        list.map { action in
            switch action {
            case .tryAddress: return m.addressToTry.map { .tryAddress($0) } ?? .act(action)
            case .finishConnect: return .finishConnect(m.connectError)
            default: return .act(action)
            }
        }
    }

    func connected(_ authority: HTTPAuthority? = nil) -> M {
        var m = M(authority: authority ?? plain)
        _ = m.connect()
        _ = m.resolved(.success([a1]), lookedUp: true, ownListener: nil)
        _ = m.tcpConnected()
        return m
    }

    func testConnectResolvesThenTriesEachAddressInTurn() {
        var m = M(authority: plain)
        XCTAssertEqual(steps(m.connect(), m), [.armConnectDeadline, .resolve])
        XCTAssertEqual(steps(m.connect(), m), [], "connect starts once")
        XCTAssertEqual(steps(m.resolved(.success([a1, a2]), lookedUp: true, ownListener: nil), m),
                       [.reportPhase(.resolved(lookedUp: true)), .tryAddress(a1)])
        XCTAssertEqual(steps(m.attemptFailed("Connection refused"), m), [.tryAddress(a2)])
        XCTAssertTrue(m.isConnecting)
        XCTAssertEqual(steps(m.tcpConnected(), m), [.finishConnect(nil)])
        XCTAssertEqual(m.state, .lent(idleTimerRunning: false))
        XCTAssertFalse(m.isConnecting)
    }

    func testEveryAddressFailingNamesTheLastFailure() {
        var m = M(authority: plain)
        _ = m.connect()
        _ = m.resolved(.success([a1, a2]), lookedUp: false, ownListener: nil)
        _ = m.attemptFailed("Network is unreachable")
        XCTAssertEqual(steps(m.attemptFailed("Connection refused"), m),
                       [.finishConnect(TransportError(.upstreamConnectFailed, "cannot connect to origin.test:80: Connection refused"))])
        XCTAssertTrue(m.isClosed)
        XCTAssertEqual(m.state, .connectFailed(TransportError(.upstreamConnectFailed,
                                                              "cannot connect to origin.test:80: Connection refused")),
                       "the error is the final state's")
        XCTAssertEqual(steps(m.connectDeadlinePassed(), m), [], "a finished connect ignores its deadline")
        XCTAssertEqual(steps(m.eventWhileIdle(), m), [], "nor does a late event close it again")
        XCTAssertFalse(m.close(), "already closed")
    }

    func testAResolverFailureAndAnOwnListenerFailBeforeAnyAddressIsTried() {
        var m = M(authority: plain)
        _ = m.connect()
        let dns = TransportError(.upstreamDNSFailed, "cannot resolve origin.test")
        XCTAssertEqual(steps(m.resolved(.failure(dns), lookedUp: true, ownListener: nil), m),
                       [.reportPhase(.resolved(lookedUp: true)), .finishConnect(dns)])

        var own = M(authority: plain)
        _ = own.connect()
        XCTAssertEqual(steps(own.resolved(.success([a2, a1]), lookedUp: false, ownListener: a1), own),
                       [.reportPhase(.resolved(lookedUp: false)),
                        .finishConnect(TransportError(.loopDetected, "origin.test:80 is this proxy's own listener (127.0.0.1:80)"))])
    }

    func testTheConnectDeadlineEndsResolvingConnectingOrHandshaking() {
        let timedOut = Step.finishConnect(TransportError(.upstreamTimeout, "connecting to origin.test:80 timed out"))
        var resolving = M(authority: plain)
        _ = resolving.connect()
        XCTAssertEqual(steps(resolving.connectDeadlinePassed(), resolving), [timedOut])
        XCTAssertEqual(steps(resolving.resolved(.success([a1]), lookedUp: true, ownListener: nil), resolving), [],
                       "a late answer is ignored")

        var connecting = M(authority: plain)
        _ = connecting.connect()
        _ = connecting.resolved(.success([a1]), lookedUp: true, ownListener: nil)
        XCTAssertEqual(steps(connecting.connectDeadlinePassed(), connecting), [timedOut])
        XCTAssertEqual(steps(connecting.tcpConnected(), connecting), [])
    }

    func testHTTPSHandshakesAfterTCPAndATLSFailureIsNotRetriedElsewhere() {
        var m = M(authority: https)
        _ = m.connect()
        _ = m.resolved(.success([a1, a2]), lookedUp: true, ownListener: nil)
        XCTAssertEqual(steps(m.tcpConnected(), m), [.reportPhase(.tcpConnected), .startTLS])
        XCTAssertEqual(m.state, .handshaking)
        XCTAssertEqual(steps(m.attemptFailed("late"), m), [], "no other address once TCP is up")
        XCTAssertEqual(steps(m.tlsFailed("TLS with origin.test:443 failed: certificate verify failed"), m),
                       [.finishConnect(TransportError(.tlsFailed, "TLS with origin.test:443 failed: certificate verify failed"))])

        var ok = M(authority: https)
        _ = ok.connect()
        _ = ok.resolved(.success([a1]), lookedUp: true, ownListener: nil)
        _ = ok.tcpConnected()
        XCTAssertEqual(steps(ok.tlsConnected(), ok), [.finishConnect(nil)])
        XCTAssertEqual(ok.state, .lent(idleTimerRunning: false))
        XCTAssertNil(ok.connectError)
    }

    func testThePoolArmsOneIdleTimerAndItWaitsOutALaterDeadline() {
        var m = connected()
        XCTAssertEqual(steps(m.pooled(now: 0, idleTimeout: 60), m), [.armIdleTimer(after: 60)])
        m.taken()
        XCTAssertEqual(m.state, .lent(idleTimerRunning: true), "taking it does not cancel the timer")
        // Back in the pool while the timer still runs: no second timer.
        XCTAssertEqual(steps(m.pooled(now: 10, idleTimeout: 60), m), [])
        // The timer set at 0 fires at 60: the deadline is now 70.
        XCTAssertEqual(steps(m.idleTimerFired(now: 60), m), [.armIdleTimer(after: 10)])
        XCTAssertEqual(steps(m.idleTimerFired(now: 70), m), [.closeIdle])
        XCTAssertTrue(m.isClosed)
    }

    func testATimerFiringWhileLentDoesNothingAndTheNextReturnArmsIt() {
        var m = connected()
        _ = m.pooled(now: 0, idleTimeout: 5)
        m.taken()
        XCTAssertEqual(steps(m.idleTimerFired(now: 5), m), [])
        XCTAssertEqual(m.state, .lent(idleTimerRunning: false))
        XCTAssertEqual(steps(m.pooled(now: 6, idleTimeout: 5), m), [.armIdleTimer(after: 5)])
    }

    func testBytesOrAnEOFOnAnIdleConnectionDropIt() {
        var m = connected()
        _ = m.pooled(now: 0, idleTimeout: 60)
        XCTAssertEqual(steps(m.eventWhileIdle(), m), [.closeIdle])
        XCTAssertEqual(steps(m.eventWhileIdle(), m), [])
        XCTAssertEqual(steps(m.pooled(now: 1, idleTimeout: 60), m), [], "a closed connection is never pooled")
    }

    func testCloseIsFinal() {
        var m = connected()
        XCTAssertTrue(m.close())
        XCTAssertFalse(m.close())
        m.taken()
        XCTAssertTrue(m.isClosed)
        XCTAssertEqual(steps(m.idleTimerFired(now: 100), m), [])
    }
}
