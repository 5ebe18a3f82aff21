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
            case .cancelHeadTimer: return "cancelHeadTimer"
            case .registerHeld: return "registerHeld"
            case .unregisterHeld: return "unregisterHeld"
            case .closeAfterFlush: return "closeAfterFlush"
            case .refuseHeldForShutdown: return "refuse503"
            case .leaveLoop: return "leaveLoop"
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
        XCTAssertEqual(names(m.exchangeStarted()), [], "the head timer runs on, ignored (no timer call per exchange)")
        XCTAssertTrue(m.isExchanging)
        XCTAssertEqual(names(m.exchangeStarted()), [], "one exchange at a time")
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
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: true)),
                       ["armHeadTimer", "parseHeads(nextTurn)"])
        XCTAssertTrue(m.canReadHead)
        // The pipelined head starts the next exchange, which ends the same way.
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["armHeadTimer"])
    }

    func testANonKeepAliveAnswerClosesAfterTheFlush() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: false, draining: false, inputBuffered: true)), ["closeAfterFlush"],
                       "pipelined bytes after a closing answer are not read")
        XCTAssertFalse(m.hasExchange)
    }

    func testDrainingClosesAnIdleConnectionButLetsAnExchangeFinish() {
        var idle = machine()
        XCTAssertEqual(names(idle.drain()), ["closeAfterFlush"])

        var busy = machine()
        _ = busy.exchangeStarted()
        XCTAssertEqual(names(busy.drain()), [], "the exchange in flight finishes first")
        XCTAssertEqual(names(busy.exchangeFinished(keepAlive: true, draining: true, inputBuffered: true)), ["closeAfterFlush"],
                       "then the connection closes, keep-alive or not")

        var held = machine()
        _ = held.hold(head())
        XCTAssertEqual(names(held.drain()), ["unregisterHeld", "refuse503"])
        XCTAssertFalse(held.isHeld)
        XCTAssertNil(held.release(), "the refused request is not started later")
    }

    func testAHalfClosedClientGetsItsAnswersThenTheClose() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, complete: true), [], "the answer is still sent")
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["closeAfterFlush"])

        var pipelined = machine()
        _ = pipelined.exchangeStarted()
        XCTAssertEqual(event(&pipelined, eof: true, complete: true), [])
        XCTAssertEqual(names(pipelined.exchangeFinished(keepAlive: true, draining: false, inputBuffered: true)),
                       ["answerBufferedThenClose(nextTurn)"])
        // The buffered bytes held a whole request: it is answered, then the same again.
        _ = pipelined.exchangeStarted()
        XCTAssertEqual(names(pipelined.bufferedHeadsParsed()), [], "a request was started from them")
        XCTAssertEqual(names(pipelined.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["closeAfterFlush"])

        var partial = machine()
        XCTAssertEqual(event(&partial, eof: true, buffered: true), ["answerBufferedThenClose"])
        XCTAssertEqual(names(partial.bufferedHeadsParsed()), ["closeAfterFlush"], "no whole request was left")
    }

    func testPipelinedBytesPastAHeadsWorthPauseReadingOnceTheRequestIsWhole() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: false, buffered: 5000, maxHeaderBytes: 1000)), [],
                       "the bytes are still the body")
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: true, buffered: 1000, maxHeaderBytes: 1000)), [])
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: true, buffered: 1001, maxHeaderBytes: 1000)), ["pauseReading"])
        _ = m.close()
        XCTAssertEqual(names(m.exchangeTookInput(requestComplete: true, buffered: 5000, maxHeaderBytes: 1000)), [], "closed")
    }

    func testBackpressurePausesReadingOnceAndTheEndOfTheExchangeResumesIt() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.pauseReadingRequested()), ["pauseReading"])
        XCTAssertEqual(names(m.pauseReadingRequested()), [], "already off")
        XCTAssertTrue(m.readingPaused)
        XCTAssertEqual(names(m.resumeReadingRequested()), ["resumeReading"])
        XCTAssertEqual(names(m.resumeReadingRequested()), [], "already on")
        XCTAssertEqual(names(m.pauseReadingRequested()), ["pauseReading"])
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)),
                       ["resumeReading", "armHeadTimer"])
        XCTAssertFalse(m.readingPaused)
    }

    func testReadingPausesOnlyForARequestAndStaysOffWhileClosing() {
        var m = machine()
        XCTAssertEqual(names(m.pauseReadingRequested()), [], "between requests reading stays on")
        XCTAssertFalse(m.readingPaused)
        _ = m.exchangeStarted()
        _ = m.pauseReadingRequested()
        XCTAssertEqual(names(m.closeAfterFlush()), ["closeAfterFlush"])
        XCTAssertFalse(m.readingPaused, "closing reads nothing: there is no pause to undo")
        XCTAssertEqual(names(m.resumeReadingRequested()), [], "the exchange cannot turn reading back on")
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: true)), [],
                       "nor can its end")
    }

    func testAPausedExchangeThatEndsForAClosingAnswerDoesNotResume() {
        var m = machine()
        _ = m.exchangeStarted()
        _ = m.pauseReadingRequested()
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: false, draining: false, inputBuffered: true)), ["closeAfterFlush"])
        XCTAssertTrue(m.isClosingAfterFlush)
        XCTAssertFalse(m.hasExchange)
    }

    // MARK: timeouts

    func testTheHeadTimerAnswers408AfterPartOfAHeadElseCloses() {
        var m = machine()
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: true)), ["respond408"])
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: false)), ["close"])
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: true)), [], "not while an exchange runs")
        // The exchange's end arms it again for the next head.
        XCTAssertEqual(names(m.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)), ["armHeadTimer"])
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: true)), ["respond408"])

        // After a half-close the buffered requests are answered within the turn (or the next):
        // a timer left running from before does nothing meanwhile.
        var ended = machine()
        _ = ended.exchangeStarted()
        _ = event(&ended, eof: true, complete: true)
        XCTAssertEqual(names(ended.exchangeFinished(keepAlive: true, draining: false, inputBuffered: true)),
                       ["answerBufferedThenClose(nextTurn)"])
        XCTAssertEqual(names(ended.headTimerFired(inputBuffered: true)), [])
    }

    func testTheHeadTimerAnswersNothingAfterAClosingAnswer() {
        // A malformed head is answered 400 and the connection closes once that is written.
        var m = machine()
        XCTAssertEqual(names(m.readable(buffered: 100, maxHeaderBytes: 1000)), ["parseHeads"])
        XCTAssertEqual(names(m.closeAfterFlush()), ["closeAfterFlush"])
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: true)), [], "no 408 after the 400")
        XCTAssertEqual(names(m.headTimerFired(inputBuffered: false)), [], "the flush poll ends a client that does not read")
        XCTAssertTrue(m.isClosingAfterFlush)
    }

    func testTheHotPhaseIsOneWord() {
        XCTAssertLessThanOrEqual(MemoryLayout<M.Phase>.size, MemoryLayout<Int>.size)
    }

    func testAReadTimeoutFailsTheExchangeAndCloses() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(event(&m, timeout: true), ["failExchange:clientTimeout", "close"])
        var idle = machine()
        XCTAssertEqual(event(&idle, timeout: true), ["close"])
    }

    // MARK: half-close

    func testAHalfCloseKeepsTheConnectionForTheAnswerToAWholeRequest() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, complete: true), [])
        XCTAssertTrue(m.inputEnded)
        XCTAssertTrue(m.hasExchange)
    }

    func testAHalfCloseMidBodyAbortsTheExchange() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, complete: false), ["failExchange:clientAborted", "close"])
    }

    func testAHalfCloseBetweenRequestsAnswersWhatIsBufferedOrCloses() {
        var buffered = machine()
        XCTAssertEqual(event(&buffered, eof: true, buffered: true), ["answerBufferedThenClose"])
        var empty = machine()
        XCTAssertEqual(event(&empty, eof: true), ["close"])
        var closing = machine()
        XCTAssertEqual(names(closing.closeAfterFlush()), ["closeAfterFlush"])
        XCTAssertEqual(event(&closing, eof: true), [], "the answers still go out")
    }

    func testAResetClosesAtOnce() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(event(&m, eof: true, error: true, complete: true), ["failExchange:clientAborted", "close"])
    }

    // MARK: holding while the log is behind

    func testAHeldRequestReadsAHeadsWorthAndIsAnsweredAfterAHalfClose() {
        var m = machine()
        let h = head()
        XCTAssertEqual(names(m.hold(h)), ["cancelHeadTimer", "registerHeld"])
        XCTAssertEqual(names(m.hold(h)), [], "one request at a time")
        XCTAssertTrue(m.isHeld)
        XCTAssertFalse(m.canReadHead)
        XCTAssertEqual(names(m.readable(buffered: 500, maxHeaderBytes: 1000)), [])
        XCTAssertEqual(names(m.readable(buffered: 1001, maxHeaderBytes: 1000)), ["pauseReading"])
        XCTAssertEqual(names(m.readable(buffered: 2000, maxHeaderBytes: 1000)), [], "paused once")
        XCTAssertTrue(m.readingPaused)
        XCTAssertEqual(event(&m, eof: true, buffered: true), [], "answered after the release")
        XCTAssertTrue(m.inputEnded)
        let released = m.release()
        XCTAssertEqual(released?.head.target, h.target)
        XCTAssertEqual(released.map { names($0.actions) }, ["unregisterHeld", "resumeReading"])
        XCTAssertTrue(m.inputEnded, "the exchange is told the client half-closed")
        XCTAssertFalse(m.readingPaused)
        XCTAssertNil(m.release(), "released once")
        // The request was answered at once (say, refused): what is buffered is answered, then the close.
        XCTAssertEqual(names(m.heldRequestStarted()), ["answerBufferedThenClose"])
    }

    func testAReleasedRequestGoesOnAsAnExchangeOrAsTheNextHead() {
        var started = machine()
        _ = started.hold(head())
        XCTAssertEqual(started.release().map { names($0.actions) }, ["unregisterHeld"], "reading was never paused")
        XCTAssertEqual(names(started.exchangeStarted()), [])
        XCTAssertFalse(started.inputEnded)
        XCTAssertEqual(names(started.heldRequestStarted()), [], "the exchange reads on")

        var answered = machine()
        _ = answered.hold(head())
        _ = answered.release()
        XCTAssertEqual(names(answered.heldRequestStarted()), ["parseHeads"], "the next head, as after an exchange")

        var halfClosed = machine()
        _ = halfClosed.hold(head())
        _ = event(&halfClosed, eof: true)
        _ = halfClosed.release()
        _ = halfClosed.exchangeStarted()
        XCTAssertTrue(halfClosed.inputEnded, "carried into the exchange")
        XCTAssertEqual(names(halfClosed.exchangeFinished(keepAlive: true, draining: false, inputBuffered: false)),
                       ["closeAfterFlush"], "its answer was the last")
    }

    func testClosingWhileHeldDropsTheRequest() {
        var m = machine()
        _ = m.hold(head())
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
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.closeAfterFlush()), ["closeAfterFlush"])
        XCTAssertEqual(names(m.closeAfterFlush()), [], "closing already")
        XCTAssertTrue(m.hasExchange, "counted busy until the answer is out")
        XCTAssertFalse(m.canReadHead)
        XCTAssertEqual(names(m.readable(buffered: 10, maxHeaderBytes: 1000)), ["deliverToExchange"])
        XCTAssertEqual(m.close()?.exchange, true)
        XCTAssertEqual(names(m.closeAfterFlush()), [], "nothing after the close")
    }

    func testAHandOverEndsTheSession() {
        var m = machine()
        _ = m.exchangeStarted()
        XCTAssertEqual(names(m.handedOver()), ["leaveLoop"])
        XCTAssertTrue(m.isClosed)
        XCTAssertNil(m.close(), "the socket is the tunnel's")
        XCTAssertEqual(names(m.handedOver()), [], "once")
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
