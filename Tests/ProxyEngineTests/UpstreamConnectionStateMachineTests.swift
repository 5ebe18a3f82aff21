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

    func connected(_ authority: HTTPAuthority? = nil) -> M {
        var m = M(authority: authority ?? plain)
        _ = m.connect()
        _ = m.resolved(.success([a1]), lookedUp: true, ownListener: nil)
        _ = m.tcpConnected()
        return m
    }

    func testConnectResolvesThenTriesEachAddressInTurn() {
        var m = M(authority: plain)
        XCTAssertEqual(Array(m.connect()), [.armConnectDeadline, .resolve])
        XCTAssertEqual(Array(m.connect()), [], "connect starts once")
        XCTAssertEqual(Array(m.resolved(.success([a1, a2]), lookedUp: true, ownListener: nil)),
                       [.reportPhase(.resolved(lookedUp: true)), .tryAddress(a1)])
        XCTAssertEqual(Array(m.attemptFailed("Connection refused")), [.tryAddress(a2)])
        XCTAssertTrue(m.isConnecting)
        XCTAssertEqual(Array(m.tcpConnected()), [.finishConnect(nil)])
        XCTAssertEqual(m.state, .lent)
        XCTAssertFalse(m.isConnecting)
    }

    func testEveryAddressFailingNamesTheLastFailure() {
        var m = M(authority: plain)
        _ = m.connect()
        _ = m.resolved(.success([a1, a2]), lookedUp: false, ownListener: nil)
        _ = m.attemptFailed("Network is unreachable")
        XCTAssertEqual(Array(m.attemptFailed("Connection refused")),
                       [.finishConnect(TransportError(.upstreamConnectFailed, "cannot connect to origin.test:80: Connection refused"))])
        XCTAssertTrue(m.isClosed)
        XCTAssertEqual(Array(m.connectDeadlinePassed()), [], "a finished connect ignores its deadline")
        XCTAssertFalse(m.close(), "already closed")
    }

    func testAResolverFailureAndAnOwnListenerFailBeforeAnyAddressIsTried() {
        var m = M(authority: plain)
        _ = m.connect()
        let dns = TransportError(.upstreamDNSFailed, "cannot resolve origin.test")
        XCTAssertEqual(Array(m.resolved(.failure(dns), lookedUp: true, ownListener: nil)),
                       [.reportPhase(.resolved(lookedUp: true)), .finishConnect(dns)])

        var own = M(authority: plain)
        _ = own.connect()
        XCTAssertEqual(Array(own.resolved(.success([a2, a1]), lookedUp: false, ownListener: a1)),
                       [.reportPhase(.resolved(lookedUp: false)),
                        .finishConnect(TransportError(.loopDetected, "origin.test:80 is this proxy's own listener (127.0.0.1:80)"))])
    }

    func testTheConnectDeadlineEndsResolvingConnectingOrHandshaking() {
        let timedOut = M.Action.finishConnect(TransportError(.upstreamTimeout, "connecting to origin.test:80 timed out"))
        var resolving = M(authority: plain)
        _ = resolving.connect()
        XCTAssertEqual(Array(resolving.connectDeadlinePassed()), [timedOut])
        XCTAssertEqual(Array(resolving.resolved(.success([a1]), lookedUp: true, ownListener: nil)), [],
                       "a late answer is ignored")

        var connecting = M(authority: plain)
        _ = connecting.connect()
        _ = connecting.resolved(.success([a1]), lookedUp: true, ownListener: nil)
        XCTAssertEqual(Array(connecting.connectDeadlinePassed()), [timedOut])
        XCTAssertEqual(Array(connecting.tcpConnected()), [])
    }

    func testHTTPSHandshakesAfterTCPAndATLSFailureIsNotRetriedElsewhere() {
        var m = M(authority: https)
        _ = m.connect()
        _ = m.resolved(.success([a1, a2]), lookedUp: true, ownListener: nil)
        XCTAssertEqual(Array(m.tcpConnected()), [.reportPhase(.tcpConnected), .startTLS])
        XCTAssertEqual(m.state, .handshaking)
        XCTAssertEqual(Array(m.attemptFailed("late")), [], "no other address once TCP is up")
        XCTAssertEqual(Array(m.tlsFailed("TLS with origin.test:443 failed: certificate verify failed")),
                       [.finishConnect(TransportError(.tlsFailed, "TLS with origin.test:443 failed: certificate verify failed"))])

        var ok = M(authority: https)
        _ = ok.connect()
        _ = ok.resolved(.success([a1]), lookedUp: true, ownListener: nil)
        _ = ok.tcpConnected()
        XCTAssertEqual(Array(ok.tlsConnected()), [.finishConnect(nil)])
        XCTAssertEqual(ok.state, .lent)
    }

    func testThePoolArmsOneIdleTimerAndItWaitsOutALaterDeadline() {
        var m = connected()
        XCTAssertEqual(Array(m.pooled(now: 0, idleTimeout: 60)), [.armIdleTimer(after: 60)])
        m.taken()
        XCTAssertEqual(m.state, .lent)
        // Back in the pool while the timer still runs: no second timer.
        XCTAssertEqual(Array(m.pooled(now: 10, idleTimeout: 60)), [])
        // The timer set at 0 fires at 60: the deadline is now 70.
        XCTAssertEqual(Array(m.idleTimerFired(now: 60)), [.armIdleTimer(after: 10)])
        XCTAssertEqual(Array(m.idleTimerFired(now: 70)), [.closeIdle])
        XCTAssertTrue(m.isClosed)
    }

    func testATimerFiringWhileLentDoesNothingAndTheNextReturnArmsIt() {
        var m = connected()
        _ = m.pooled(now: 0, idleTimeout: 5)
        m.taken()
        XCTAssertEqual(Array(m.idleTimerFired(now: 5)), [])
        XCTAssertEqual(m.state, .lent)
        XCTAssertEqual(Array(m.pooled(now: 6, idleTimeout: 5)), [.armIdleTimer(after: 5)])
    }

    func testBytesOrAnEOFOnAnIdleConnectionDropIt() {
        var m = connected()
        _ = m.pooled(now: 0, idleTimeout: 60)
        XCTAssertEqual(Array(m.eventWhileIdle()), [.closeIdle])
        XCTAssertEqual(Array(m.eventWhileIdle()), [])
        XCTAssertEqual(Array(m.pooled(now: 1, idleTimeout: 60)), [], "a closed connection is never pooled")
    }

    func testCloseIsFinal() {
        var m = connected()
        XCTAssertTrue(m.close())
        XCTAssertFalse(m.close())
        m.taken()
        XCTAssertTrue(m.isClosed)
        XCTAssertEqual(Array(m.idleTimerFired(now: 100)), [])
    }
}
