import HTTP1
import XCTest
@testable import ProxyEngine

/// `UpstreamConnectionStateMachine` through a parent proxy, as playbooks.
final class UpstreamThroughParentStateMachineTests: XCTestCase {
    typealias M = UpstreamConnectionStateMachine
    let plain = HTTPAuthority(scheme: "http", host: "origin.test", port: 80)
    let https = HTTPAuthority(scheme: "https", host: "origin.test", port: 443)
    let tunnel = HTTPAuthority(scheme: "", host: "origin.test", port: 22)
    let squid = ParentProxy(kind: .http, host: "squid.corp", port: 3128)
    let secureSquid = ParentProxy(kind: .https, host: "squid.corp", port: 3129)
    let socks = ParentProxy(kind: .socks5, host: "socks.corp", port: 1080)
    let a1 = SocketAddress(parsing: "127.0.0.1:3128")!

    func actions(_ list: ActionList<M.Action>) -> [M.Action] { Array(list) }

    func resolved(_ authority: HTTPAuthority, _ parent: ParentProxy) -> M {
        var m = M(authority: authority, parent: parent)
        _ = m.connect()
        _ = m.resolved(.success([a1]), lookedUp: true, ownListener: nil)
        return m
    }

    func testTheParentIsDialledAndPlainHTTPToAnHTTPParentNeedsNoHandshake() {
        XCTAssertEqual(M(authority: plain, parent: squid).dialed, HTTPAuthority(scheme: "http", host: "squid.corp", port: 3128))
        var m = resolved(plain, squid)
        XCTAssertFalse(m.tunnelsThroughParent)
        XCTAssertEqual(actions(m.tcpConnected()), [.finishConnect])
        XCTAssertNil(m.connectError)
        XCTAssertEqual(m.state, .lent(idleTimerRunning: false))
    }

    func testHTTPSThroughAnHTTPParentTunnelsThenSpeaksTLSWithTheOrigin() {
        var m = resolved(https, squid)
        XCTAssertEqual(actions(m.tcpConnected()), [.reportPhase(.tcpConnected), .negotiate])
        XCTAssertEqual(m.state, .negotiating)
        XCTAssertTrue(m.isConnecting)
        XCTAssertEqual(actions(m.parentTunnelOpened()), [.startTLS])
        XCTAssertEqual(actions(m.tlsConnected()), [.finishConnect])
        XCTAssertNil(m.connectError)
    }

    func testAnHTTPSParentGetsTLSFirstAndItsFailureIsTheParents() {
        var m = resolved(tunnel, secureSquid)
        XCTAssertEqual(actions(m.tcpConnected()), [.reportPhase(.tcpConnected), .startParentTLS])
        XCTAssertEqual(actions(m.tlsConnected()), [.negotiate])
        XCTAssertEqual(actions(m.parentTunnelOpened()), [.finishConnect], "a blind tunnel needs no TLS with the origin")
        var plainThrough = resolved(plain, secureSquid)
        _ = plainThrough.tcpConnected()
        XCTAssertEqual(actions(plainThrough.tlsConnected()), [.finishConnect], "absolute-form inside TLS with the parent")
        var failing = resolved(https, secureSquid)
        _ = failing.tcpConnected()
        XCTAssertEqual(actions(failing.tlsFailed("TLS with the parent proxy failed: certificate verify failed")), [.finishConnect])
        XCTAssertEqual(failing.connectError?.code, .upstreamProxyFailed)
    }

    func testSOCKS5AlwaysNegotiatesAndItsFailureEndsConnecting() {
        var m = resolved(plain, socks)
        XCTAssertTrue(m.tunnelsThroughParent)
        XCTAssertEqual(actions(m.tcpConnected()), [.reportPhase(.tcpConnected), .negotiate])
        let refused = TransportError(.upstreamProxyAuthFailed, "refused")
        XCTAssertEqual(actions(m.parentHandshakeFailed(refused)), [.finishConnect])
        XCTAssertEqual(m.connectError, refused)
        XCTAssertEqual(actions(m.parentTunnelOpened()), [], "nothing after the end")
        XCTAssertTrue(m.isClosed)
    }

    func testAnUnreachableParentIsUpstreamProxyFailed() {
        var down = resolved(plain, squid)
        XCTAssertEqual(actions(down.attemptFailed("Connection refused")), [.finishConnect])
        XCTAssertEqual(down.connectError, TransportError(.upstreamProxyFailed,
            "cannot connect to the parent proxy http://squid.corp:3128: Connection refused"))
        var unresolved = M(authority: plain, parent: squid)
        _ = unresolved.connect()
        _ = unresolved.resolved(.failure(TransportError(.upstreamDNSFailed, "cannot resolve squid.corp: no such name")),
                                lookedUp: true, ownListener: nil)
        XCTAssertEqual(unresolved.connectError?.code, .upstreamProxyFailed)
        var slow = resolved(https, squid)
        _ = slow.tcpConnected()
        XCTAssertEqual(actions(slow.connectDeadlinePassed()), [.finishConnect])
        XCTAssertEqual(slow.connectError, TransportError(.upstreamTimeout,
            "connecting to origin.test:443 through the parent proxy http://squid.corp:3128 timed out"))
    }

    /// A 407 from an HTTP parent to a plain request ends the exchange as a 502, once, and
    /// the connection (its answer unread) is not pooled.
    func testAParentsRefusalOfAPlainRequestEndsTheExchangeWith502() {
        var m = ExchangeStateMachine(limits: .init(highWaterBytes: 1000, upstreamReadTimeout: 60, clientIdleTimeout: 30),
                                     hasBody: false, isHTTP10: false, wantsUpgrade: false, clientWantsClose: false)
        _ = m.begin(pooled: false)
        _ = m.connected()
        _ = m.upstreamBytesArrived()
        let error = TransportError(.upstreamProxyAuthFailed, "the parent proxy http://squid.corp:3128 refused the credentials")
        XCTAssertFalse(Array(m.parentRefused(error)).isEmpty)
        XCTAssertTrue(m.isFinished)
        XCTAssertEqual(m.ending?.error, error)
        XCTAssertEqual(m.ending?.answer, .init(status: .badGateway, detail: error.message))
        XCTAssertEqual(m.ending?.upstreamReusable, false)
        XCTAssertTrue(Array(m.parentRefused(error)).isEmpty, "ends once")
    }
}
