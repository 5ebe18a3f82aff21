import HTTP1
import XCTest
@testable import ProxyEngine

/// `ClientSessionStateMachine` as playbooks: events in, actions out, no sockets.
final class ClientSessionStateMachineTests: XCTestCase {
    typealias M = ClientSessionStateMachine
    let origin = HTTPAuthority(scheme: "http", host: "origin.test", port: 443)

    func machine() -> M { M(clientIdleTimeout: 5) }

    func head(_ text: String = "GET http://origin.test/ HTTP/1.1\r\nHost: origin.test\r\n\r\n") -> HTTPRequestHead {
        let bytes = Array(text.utf8)
        let result = try? bytes.withUnsafeBytes { try HTTPHeadParser.parseRequestHead($0, maxHeadBytes: 65536) }
        guard case .complete(let h, _)? = result else { fatalError("test head does not parse") }
        return h
    }

    /// Actions without payloads, by name, for compact playbooks.
    func names(_ actions: ActionList<M.Action>) -> [String] {
        actions.map { action -> String in
            switch action {
            case .pauseReading: return "pauseReading"
            case .deliverToExchange: return "deliverToExchange"
            case .parseHeads: return "parseHeads"
            case .inspectFirstByte: return "inspectFirstByte"
            case .respondRequestTimeout: return "respond408"
            case .recordInterceptionFailure(let why): return "record:\(why)"
            case .startBlindTunnel: return "startBlindTunnel"
            case .failExchange(let code): return "failExchange:\(code)"
            case .answerBufferedThenClose: return "answerBufferedThenClose"
            case .answerBufferedThenCloseNextTurn: return "answerBufferedThenClose(nextTurn)"
            case .parseHeadsNextTurn: return "parseHeads(nextTurn)"
            case .resumeReading: return "resumeReading"
            case .armHeadTimer: return "armHeadTimer"
            case .closeAfterFlush: return "closeAfterFlush"
            case .refuseHeldForShutdown: return "refuse503"
            case .close: return "close"
            }
        }
    }

    func event(_ m: inout M, eof: Bool = false, error: Bool = false, timeout: Bool = false, connected: Bool = false,
               complete: Bool = false, buffered: Bool = false) -> [String] {
        names(m.socketEvent(eof: eof, error: error, timeout: timeout, connected: connected,
                            exchangeRequestComplete: complete, inputBuffered: buffered))
    }

    // MARK: keep-alive and pipelining

    func testHeadsAreReadOnlyBetweenExchanges() {
        var m = machine()
        XCTAssertEqual(names(m.readable(buffered: 100, maxHeaderBytes: 1000)), ["parseHeads"])
        m.exchangeStarted()
        XCTAssertFalse(m.canReadHead)
        XCTAssertTrue(m.hasExchange)
        // Pipelined bytes go to the exchange, which leaves what is not its body in the input.
        XCTAssertEqual(names(m.readable(buffered: 5000, maxHeaderBytes: 1000)), ["deliverToExchange"])
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["armHeadTimer"],
                       "reading was not paused")
        XCTAssertTrue(m.canReadHead, "keep-alive: the next head is read")
        XCTAssertFalse(m.hasExchange)
    }

    func testKeepAliveGoesOnToTheNextPipelinedHead() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: true)),
                       ["armHeadTimer", "parseHeads(nextTurn)"])
        XCTAssertTrue(m.canReadHead)
        // The pipelined head starts the next exchange, which ends the same way.
        m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["armHeadTimer"])
    }

    func testANonKeepAliveAnswerClosesAfterTheFlush() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: false, draining: false, inputBuffered: true)), ["closeAfterFlush"],
                       "pipelined bytes after a closing answer are not read")
        XCTAssertFalse(m.hasExchange)
    }

    func testDrainingClosesAnIdleConnectionButLetsAnExchangeFinish() {
        var idle = machine()
        XCTAssertEqual(names(idle.drain()), ["closeAfterFlush"])

        var busy = machine()
        busy.exchangeStarted()
        XCTAssertEqual(names(busy.drain()), [], "the exchange in flight finishes first")
        XCTAssertEqual(names(busy.exchangeFinished(keepAlive: true, draining: true, inputBuffered: true)), ["closeAfterFlush"],
                       "then the connection closes, keep-alive or not")

        var held = machine()
        held.hold(head())
        XCTAssertEqual(names(held.drain()), ["refuse503"])
        XCTAssertFalse(held.isHeld)
        XCTAssertNil(held.release(), "the refused request is not started later")
    }

    func testAHalfClosedClientGetsItsAnswersThenTheClose() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, complete: true), [], "the answer is still sent")
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["closeAfterFlush"])

        var pipelined = machine()
        pipelined.exchangeStarted()
        XCTAssertEqual(event(&pipelined, eof: true, complete: true), [])
        XCTAssertEqual(names(pipelined.exchangeFinished(keepAlive: true, draining: false, inputBuffered: true)),
                       ["answerBufferedThenClose(nextTurn)"])
        // The buffered bytes held a whole request: it is answered, then the same again.
        pipelined.exchangeStarted()
        XCTAssertEqual(names(pipelined.bufferedHeadsParsed()), [], "a request was started from them")
        XCTAssertEqual(names(pipelined.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["closeAfterFlush"])

        var partial = machine()
        XCTAssertEqual(event(&partial, eof: true, buffered: true), ["answerBufferedThenClose"])
        XCTAssertEqual(names(partial.bufferedHeadsParsed()), ["closeAfterFlush"], "no whole request was left")
    }

    func testPipelinedBytesPastAHeadsWorthPauseReadingOnceTheRequestIsWhole() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: false, buffered: 5000, maxHeaderBytes: 1000)), [],
                       "the bytes are still the body")
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: true, buffered: 1000, maxHeaderBytes: 1000)), [])
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: true, buffered: 1001, maxHeaderBytes: 1000)), ["pauseReading"])
        _ = m.close()
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: true, buffered: 5000, maxHeaderBytes: 1000)), [], "closed")
    }

    func testBackpressurePausesReadingOnceAndTheEndOfTheExchangeResumesIt() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertTrue(m.pauseReading())
        XCTAssertFalse(m.pauseReading(), "already off")
        XCTAssertTrue(m.resumeReading())
        XCTAssertFalse(m.resumeReading(), "already on")
        XCTAssertTrue(m.pauseReading())
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)),
                       ["resumeReading", "armHeadTimer"])
        XCTAssertFalse(m.readingPaused)
    }

    // MARK: timeouts

    func testTheHeadTimerAnswers408AfterPartOfAHeadElseCloses() {
        var m = machine()
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: true)), ["respond408"])
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: false)), ["close"])
        m.exchangeStarted()
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: true)), [], "not while an exchange runs")
    }

    func testAReadTimeoutFailsTheExchangeAndCloses() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(event(&m, timeout: true), ["failExchange:clientTimeout", "close"])
        var idle = machine()
        XCTAssertEqual(event(&idle, timeout: true), ["close"])
    }

    // MARK: half-close

    func testAHalfCloseKeepsTheConnectionForTheAnswerToAWholeRequest() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, complete: true), [])
        XCTAssertTrue(m.inputEnded)
        XCTAssertTrue(m.hasExchange)
    }

    func testAHalfCloseMidBodyAbortsTheExchange() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, complete: false), ["failExchange:clientAborted", "close"])
    }

    func testAHalfCloseBetweenRequestsAnswersWhatIsBufferedOrCloses() {
        var buffered = machine()
        XCTAssertEqual(event(&buffered, eof: true, buffered: true), ["answerBufferedThenClose"])
        var empty = machine()
        XCTAssertEqual(event(&empty, eof: true), ["close"])
        var closing = machine()
        XCTAssertTrue(closing.closeAfterFlush())
        XCTAssertEqual(event(&closing, eof: true), [], "the answers still go out")
    }

    func testAResetClosesAtOnce() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, error: true, complete: true), ["failExchange:clientAborted", "close"])
    }

    // MARK: holding while the log is behind

    func testAHeldRequestReadsAHeadsWorthAndIsAnsweredAfterAHalfClose() {
        var m = machine()
        let h = head()
        m.hold(h)
        XCTAssertTrue(m.isHeld)
        XCTAssertFalse(m.canReadHead)
        XCTAssertEqual(names(m.readable(buffered: 500, maxHeaderBytes: 1000)), [])
        XCTAssertEqual(names(m.readable(buffered: 1001, maxHeaderBytes: 1000)), ["pauseReading"])
        XCTAssertEqual(event(&m, eof: true, buffered: true), [], "answered after the release")
        XCTAssertEqual(m.release()?.target, h.target)
        XCTAssertTrue(m.inputEnded)
        XCTAssertNil(m.release(), "released once")
    }

    func testClosingWhileHeldDropsTheRequest() {
        var m = machine()
        m.hold(head())
        let leftovers = m.close()
        XCTAssertEqual(leftovers?.held, true)
        XCTAssertEqual(leftovers?.exchange, false)
        XCTAssertNil(m.close(), "closed once")
        XCTAssertEqual(names(m.readable(buffered: 10, maxHeaderBytes: 1000)), [])
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: true)), [])
    }

    // MARK: closing

    func testAnExchangeThatFailsKeepsItsPlaceUntilTheClose() {
        var m = machine()
        m.exchangeStarted()
        XCTAssertTrue(m.closeAfterFlush())
        XCTAssertTrue(m.hasExchange, "counted busy until the answer is out")
        XCTAssertFalse(m.canReadHead)
        XCTAssertEqual(names(m.readable(buffered: 10, maxHeaderBytes: 1000)), ["deliverToExchange"])
        XCTAssertEqual(m.close()?.exchange, true)
        XCTAssertFalse(m.closeAfterFlush(), "nothing after the close")
    }

    func testAHandOverEndsTheSession() {
        var m = machine()
        m.exchangeStarted()
        m.handedOver()
        XCTAssertTrue(m.isClosed)
        XCTAssertNil(m.close(), "the socket is the tunnel's")
    }

    // MARK: interception

    func testAClientHelloStartsTLSAndRequestsGoToTheInterceptedOrigin() throws {
        var m = machine()
        let ssl = try XCTUnwrap(OpaquePointer(bitPattern: 0x1000))
        XCTAssertEqual(names(m.awaitClientHello(.init(head: head("CONNECT origin.test:443 HTTP/1.1\r\nHost: origin.test\r\n\r\n"),
                                                      authority: origin, ssl: ssl, upstream: nil,
                                                      payload: .init(interceptsTLS: true)), inputBuffered: false)), ["armHeadTimer"])
        XCTAssertFalse(m.canReadHead)
        XCTAssertEqual(names(m.readable(buffered: 1, maxHeaderBytes: 1000)), ["inspectFirstByte"])
        XCTAssertEqual(m.firstByteArrived()?.ssl, ssl)
        XCTAssertEqual(names(m.tlsStarted(origin)), ["armHeadTimer"], "the handshake has clientIdleTimeout")
        XCTAssertEqual(m.interceptedAuthority, origin)
        XCTAssertEqual(event(&m, connected: true), [], "the handshake completed")
        XCTAssertEqual(m.security, .established(origin))
        XCTAssertEqual(event(&m, connected: true), [])
    }

    func testAFailedOrStalledHandshakeIsRecordedAndCloses() {
        var failed = machine()
        _ = failed.tlsStarted(origin)
        XCTAssertEqual(event(&failed, eof: true, error: true), ["record:handshakeFailed", "close"])
        XCTAssertEqual(failed.interceptionAuthority, origin, "the record names the origin")
        var stalled = machine()
        _ = stalled.tlsStarted(origin)
        XCTAssertEqual(names(stalled.headTimerFired(inputBuffered: true)), ["record:notCompleted", "close"])
    }

    func testAClientGoneOrSilentBeforeItsClientHelloIsRecordedAndItsTLSObjectFreed() throws {
        let ssl = try XCTUnwrap(OpaquePointer(bitPattern: 0x2000))
        var gone = machine()
        XCTAssertEqual(names(gone.awaitClientHello(.init(head: head(), authority: origin, ssl: ssl, upstream: nil,
                                                      payload: .init(interceptsTLS: true)), inputBuffered: true)),
                       ["armHeadTimer", "inspectFirstByte"], "a ClientHello sent with the CONNECT is looked at now")
        XCTAssertEqual(gone.firstByteArrived()?.ssl, ssl)
        gone = machine()
        _ = gone.awaitClientHello(.init(head: head(), authority: origin, ssl: ssl, upstream: nil,
                                                      payload: .init(interceptsTLS: true)), inputBuffered: false)
        XCTAssertEqual(event(&gone, eof: true), ["record:closedBeforeHello", "close"])
        XCTAssertEqual(gone.interceptionAuthority, origin)
        XCTAssertEqual(gone.close()?.ssl, ssl, "the close frees it")

        var silent = machine()
        _ = silent.awaitClientHello(.init(head: head(), authority: origin, ssl: ssl, upstream: nil,
                                                      payload: .init(interceptsTLS: true)), inputBuffered: false)
        XCTAssertEqual(names(silent.headTimerFired(inputBuffered: false)), ["record:nothingSent", "close"])
    }

    // MARK: the first bytes after a CONNECT whose upstream is connected

    func parked(_ m: inout M) throws -> HandedOverSocket {
        let upstream = HandedOverSocket(bev: try XCTUnwrap(OpaquePointer(bitPattern: 0x3000)), pendingErrno: 0)
        m.exchangeStarted()
        XCTAssertEqual(names(m.awaitClientHello(.init(head: head(), authority: origin, ssl: nil, upstream: upstream,
                                                      payload: .init(interceptsTLS: false)), inputBuffered: false)),
                       ["armHeadTimer"], "from the finished CONNECT exchange")
        XCTAssertFalse(m.hasExchange)
        XCTAssertNil(m.interceptionAuthority, "no TLS: nothing to record as an interception failure")
        return upstream
    }

    func testAWaitingUpstreamThatSpeaksFirstOrASilentOrClosedClientMakeItBlind() throws {
        var speaks = machine()
        _ = try parked(&speaks)
        XCTAssertEqual(names(speaks.upstreamSpokeFirst()), ["startBlindTunnel"])
        XCTAssertEqual(speaks.firstByteArrived()?.upstream?.bev, OpaquePointer(bitPattern: 0x3000))
        XCTAssertEqual(names(speaks.upstreamSpokeFirst()), [], "once")

        var silent = machine()
        _ = try parked(&silent)
        XCTAssertEqual(names(silent.headTimerFired(inputBuffered: false)), ["startBlindTunnel"])
        var closed = machine()
        _ = try parked(&closed)
        XCTAssertEqual(event(&closed, eof: true), ["startBlindTunnel"], "the tunnel passes the close on and records it")
        var reset = machine()
        _ = try parked(&reset)
        XCTAssertEqual(event(&reset, eof: true, error: true), ["startBlindTunnel"])
    }

    func testPlainHTTPThroughAConnectIsParsedHereAndGoesToItsOrigin() throws {
        var m = machine()
        _ = try parked(&m)
        XCTAssertEqual(names(m.readable(buffered: 5, maxHeaderBytes: 1000)), ["inspectFirstByte"])
        XCTAssertNotNil(m.firstByteArrived())
        let plain = HTTPAuthority(scheme: "http", host: "origin.test", port: 443)
        XCTAssertEqual(names(m.plainHTTPStarted(plain)), ["armHeadTimer", "parseHeads"])
        XCTAssertTrue(m.canReadHead)
        XCTAssertTrue(m.isIntercepting, "origin-form requests go to the CONNECT's origin")
        XCTAssertEqual(m.interceptedAuthority, plain)
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: false)), ["close"], "no TLS failure to record")
    }

    func testClosingOrDrainingWhileWaitingFreesWhatTheWaitOwns() throws {
        var closing = machine()
        let upstream = try parked(&closing)
        XCTAssertEqual(closing.close()?.upstream?.bev, upstream.bev)
        var draining = machine()
        _ = try parked(&draining)
        XCTAssertEqual(names(draining.drain()), ["startBlindTunnel"], "the shutdown ends the tunnel and records it")
        let ssl = try XCTUnwrap(OpaquePointer(bitPattern: 0x2000))
        var intercepted = machine()
        _ = intercepted.awaitClientHello(.init(head: head(), authority: origin, ssl: ssl, upstream: nil, payload: .init(interceptsTLS: true)),
                                         inputBuffered: false)
        XCTAssertEqual(names(intercepted.drain()), ["close"], "close, not closeAfterFlush, which would lose the TLS object")
        XCTAssertEqual(intercepted.close()?.ssl, ssl)
    }
}
