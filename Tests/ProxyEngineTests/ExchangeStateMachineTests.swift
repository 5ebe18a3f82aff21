import HTTP1
import XCTest
@testable import ProxyEngine

/// `ExchangeStateMachine` as playbooks: events in, actions out, no sockets.
final class ExchangeStateMachineTests: XCTestCase {
    typealias M = ExchangeStateMachine
    typealias A = M.Action
    let limits = M.Limits(highWaterBytes: 1000, upstreamReadTimeout: 60, clientIdleTimeout: 30)

    func machine(method: String = "GET", body: Bool = false, http10: Bool = false, upgrade: Bool = false,
                 close: Bool = false, clientEnded: Bool = false) -> M {
        M(limits: limits, hasBody: body, isHTTP10: http10, wantsUpgrade: upgrade, clientWantsClose: close,
          clientEndedBeforeStart: clientEnded)
    }

    func ending(error: TransportError? = nil, answer: M.ErrorAnswer? = nil, reusable: Bool = false,
                paused: Bool = false, close: Bool) -> Step {
        .finish(M.Ending(error: error, answer: answer, upstreamReusable: reusable, responseWasPaused: paused, closeClient: close))
    }

    /// An action as a playbook reads it: `.finish` with the ending the machine recorded.
    enum Step: Equatable {
        case act(A)
        case finish(M.Ending)
        static let connect = Step.act(.connect)
        static let pauseClientReading = Step.act(.pauseClientReading)
        static let requestSent = Step.act(.requestSent)
        static let pumpRequest = Step.act(.pumpRequest)
        static let pauseRequestBody = Step.act(.pauseRequestBody)
        static let resumeRequestBody = Step.act(.resumeRequestBody)
        static let noteFirstResponseByte = Step.act(.noteFirstResponseByte)
        static let forwardInterim = Step.act(.forwardInterim)
        static let pumpResponse = Step.act(.pumpResponse)
        static let pauseResponseBody = Step.act(.pauseResponseBody)
        static let resumeResponseBody = Step.act(.resumeResponseBody)
        static let startWebSocket = Step.act(.startWebSocket)
        static let retry = Step.act(.retry)
        static let closeUpstream = Step.act(.closeUpstream)
        static let closeClient = Step.act(.closeClient)
        static func attach(bodyFollows: Bool) -> Step { .act(.attach(bodyFollows: bodyFollows)) }
        static func forwardResponseHead(connection: M.ConnectionField, dechunk: Bool) -> Step {
            .act(.forwardResponseHead(connection: connection, dechunk: dechunk))
        }
    }

    func steps(_ list: ActionList<A>, _ m: M) -> [Step] {
        list.map { action in
            if case .finish = action, let e = m.ending { return .finish(e) }
            return .act(action)
        }
    }

    func head(_ m: inout M, status: Int = 200, framing: BodyFraming? = .contentLength(10),
              draining: Bool = false, last: Bool = false) -> [Step] {
        steps(m.responseHead(status: status, framing: framing, draining: draining, clientSentLast: last), m)
    }

    // MARK: keep-alive

    func testABodylessGETOnANewConnectionEndsKeepingBothConnections() {
        var m = machine()
        XCTAssertEqual(steps(m.begin(pooled: false), m), [.connect], "no body: nothing to hold back")
        XCTAssertTrue(m.isRequestComplete, "whole from its head, even while connecting")
        XCTAssertEqual(steps(m.connected(), m), [.attach(bodyFollows: false)])
        XCTAssertTrue(m.requestSent)
        XCTAssertEqual(m.attempt, M.Attempt(reused: false, retried: false))
        XCTAssertEqual(steps(m.upstreamBytesArrived(), m), [.noteFirstResponseByte])
        XCTAssertEqual(steps(m.upstreamBytesArrived(), m), [], "noted once")
        XCTAssertEqual(head(&m), [.forwardResponseHead(connection: .none, dechunk: false)])
        XCTAssertEqual(steps(m.responseBodyPumped(.partial(queued: 10)), m), [])
        XCTAssertEqual(steps(m.responseBodyPumped(.complete), m), [ending(reusable: true, close: false)])
        XCTAssertTrue(m.isFinished)
        XCTAssertEqual(steps(m.clientFailed(TransportError(.clientAborted, "late")), m), [], "nothing after the end")
    }

    func testAPooledConnectionIsUsedAtOnce() {
        var m = machine()
        XCTAssertEqual(steps(m.begin(pooled: true), m), [.attach(bodyFollows: false)])
        XCTAssertEqual(m.attempt, M.Attempt(reused: true, retried: false))
    }

    func testTheClientConnectionClosesWhenAskedOrWhenTheAnswerCannotBeFramed() {
        var asked = machine(close: true)
        _ = asked.begin(pooled: true)
        XCTAssertEqual(head(&asked), [.forwardResponseHead(connection: .close, dechunk: false)])
        XCTAssertEqual(steps(asked.responseBodyPumped(.complete), asked), [ending(reusable: true, close: true)],
                       "the upstream may still be pooled")

        var delimited = machine()
        _ = delimited.begin(pooled: true)
        XCTAssertEqual(head(&delimited, framing: .closeDelimited), [.forwardResponseHead(connection: .close, dechunk: false)])
        // The body ends with the origin's close.
        XCTAssertEqual(steps(delimited.upstreamClosed(reset: false, cleanEndOfBody: true, idempotent: true), delimited),
                       [.closeUpstream, ending(close: true)])
    }

    func testHTTP10ClientsGetKeepAliveSpelledOutAndChunkedAnswersDechunked() {
        var m = machine(http10: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(head(&m), [.forwardResponseHead(connection: .keepAlive, dechunk: false)])

        var chunked = machine(http10: true)
        _ = chunked.begin(pooled: true)
        XCTAssertEqual(head(&chunked, framing: .chunked), [.forwardResponseHead(connection: .close, dechunk: true)])
        XCTAssertTrue(chunked.isDechunking)
    }

    func testHEADAnd204And304AnswersWithoutABodyCompleteAtTheirHead() {
        // The framing (from HTTP1's rules) says no body; the pump then reports completion at once.
        for status in [200, 204, 304] {
            var m = machine(method: status == 200 ? "HEAD" : "GET")
            _ = m.begin(pooled: true)
            XCTAssertEqual(head(&m, status: status, framing: BodyFraming.none), [.forwardResponseHead(connection: .none, dechunk: false)])
            XCTAssertEqual(steps(m.responseBodyPumped(.complete), m), [ending(reusable: true, close: false)], "\(status)")
        }
    }

    func testDrainingOrALastRequestClosesTheClientAfterTheAnswer() {
        var draining = machine()
        _ = draining.begin(pooled: true)
        XCTAssertEqual(head(&draining, draining: true), [.forwardResponseHead(connection: .close, dechunk: false)])
        var last = machine()
        _ = last.begin(pooled: true)
        XCTAssertEqual(head(&last, last: true), [.forwardResponseHead(connection: .close, dechunk: false)])
    }

    // MARK: interim answers and upgrades

    func testInterimAnswersGoToTheClientExceptToHTTP10() {
        var m = machine(method: "POST", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(head(&m, status: 100, framing: nil), [.forwardInterim])
        XCTAssertTrue(m.isAwaitingResponseHead, "still waiting for the final answer")
        XCTAssertEqual(steps(m.requestBodyPumped(.complete, clientInputEmpty: true), m), [.requestSent])
        XCTAssertEqual(head(&m), [.forwardResponseHead(connection: .none, dechunk: false)])

        var old = machine(method: "POST", body: true, http10: true)
        _ = old.begin(pooled: true)
        XCTAssertEqual(head(&old, status: 100, framing: nil), [], "an HTTP/1.0 client would take it for the answer")
    }

    func testA101IsAcceptedOnlyWhenAsked() {
        var asked = machine(upgrade: true)
        _ = asked.begin(pooled: false)
        _ = asked.connected()
        XCTAssertEqual(head(&asked, status: 101, framing: nil), [.startWebSocket])
        XCTAssertTrue(asked.isFinished)

        var unasked = machine()
        _ = unasked.begin(pooled: true)
        let error = TransportError(.malformedResponse, "the origin switched protocols without being asked")
        XCTAssertEqual(head(&unasked, status: 101, framing: nil),
                       [ending(error: error, answer: .init(status: .badGateway, detail: error.message), close: false)])
    }

    // MARK: request bodies, 100-continue, half-close

    func testARequestBodyWaitsUnreadWhileConnectingThenStreams() {
        var m = machine(method: "POST", body: true)
        XCTAssertEqual(steps(m.begin(pooled: false), m), [.pauseClientReading, .connect])
        XCTAssertFalse(m.isRequestComplete)
        XCTAssertEqual(steps(m.clientReadable(), m), [], "nothing is pumped before an upstream is attached")
        XCTAssertEqual(steps(m.connected(), m), [.attach(bodyFollows: true)])
        XCTAssertTrue(m.isSendingRequest)
        XCTAssertEqual(steps(m.clientReadable(), m), [.pumpRequest])
        XCTAssertEqual(steps(m.requestBodyPumped(.partial(queued: 10), clientInputEmpty: true), m), [])
        XCTAssertEqual(steps(m.requestBodyPumped(.complete, clientInputEmpty: true), m), [.requestSent])
        XCTAssertTrue(m.isRequestComplete)
        XCTAssertEqual(steps(m.clientReadable(), m), [], "pipelined bytes wait for the next exchange")
    }

    func testAnAnswerBeforeTheWholeBodyClosesTheClientAfterIt() {
        var m = machine(method: "POST", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(head(&m, status: 413), [.forwardResponseHead(connection: .close, dechunk: false)])
        XCTAssertEqual(steps(m.responseBodyPumped(.complete), m), [ending(close: true)], "not reusable: the request was not sent whole")
    }

    func testAMalformedBodyIsAnsweredBeforeTheAnswerBeganElseClosed() {
        var m = machine(method: "POST", body: true)
        _ = m.begin(pooled: true)
        let error = TransportError(.malformedRequest, "bad chunk size")
        XCTAssertEqual(steps(m.requestBodyPumped(.malformed(HTTPParseError(.malformed, "bad chunk size")), clientInputEmpty: false), m),
                       [ending(error: error, answer: .init(status: .badRequest, detail: "bad chunk size"), close: true)])

        var late = machine(method: "POST", body: true)
        _ = late.begin(pooled: true)
        _ = head(&late)
        XCTAssertEqual(steps(late.requestBodyPumped(.malformed(HTTPParseError(.malformed, "bad chunk size")), clientInputEmpty: false), late),
                       [ending(error: error, close: true)])
    }

    func testAHalfCloseWhileHeldForwardsWhatIsBufferedThenJudgesIt() {
        // The whole body was buffered: it goes through and the exchange completes.
        var whole = machine(method: "POST", body: true, clientEnded: true)
        XCTAssertEqual(steps(whole.begin(pooled: false), whole), [.pauseClientReading, .connect], "not attached yet")
        _ = whole.connected()
        XCTAssertEqual(steps(whole.requestBodyPumped(.complete, clientInputEmpty: true), whole), [.requestSent])

        // The body was cut short by the half-close: nothing more is coming.
        var cut = machine(method: "POST", body: true, clientEnded: true)
        _ = cut.begin(pooled: false)
        _ = cut.connected()
        let aborted = TransportError(.clientAborted, "the client closed the connection mid-exchange")
        XCTAssertEqual(steps(cut.requestBodyPumped(.partial(queued: 5), clientInputEmpty: true), cut),
                       [ending(error: aborted, close: true)])

        // A client that did not half-close may still send the rest.
        var open = machine(method: "POST", body: true)
        _ = open.begin(pooled: true)
        XCTAssertEqual(steps(open.requestBodyPumped(.partial(queued: 5), clientInputEmpty: true), open), [])
    }

    // MARK: backpressure and stalls

    func testARequestBodyPausesAtTheHighMarkAndResumesOnTheDrain() {
        var m = machine(method: "PUT", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(steps(m.requestBodyPumped(.partial(queued: 1000), clientInputEmpty: false), m), [.pauseRequestBody])
        XCTAssertEqual(m.state, .exchanging(.init(reused: true, retried: false), .sending, .awaitingHead(bytesSeen: false), .request))
        XCTAssertEqual(steps(m.upstreamDrained(), m), [.resumeRequestBody, .pumpRequest])
        XCTAssertEqual(steps(m.upstreamDrained(), m), [], "nothing paused")
    }

    func testARequestBodyThatCompletesWhilePausedLeavesNothingToTime() {
        var m = machine(method: "PUT", body: true)
        _ = m.begin(pooled: true)
        _ = m.requestBodyPumped(.partial(queued: 5000), clientInputEmpty: false)
        XCTAssertEqual(m.stalledSide, .request)
        XCTAssertEqual(steps(m.requestBodyPumped(.complete, clientInputEmpty: true), m), [.requestSent])
        XCTAssertNil(m.stalledSide, "a sent request cannot be paused")
        XCTAssertEqual(steps(m.upstreamDrained(), m), [])
        XCTAssertEqual(steps(m.stallTimerFired(), m), [], "the timer armed for it does nothing")
    }

    func testAnOriginThatTakesNoneOfTheBodyStallsTheExchange() {
        var m = machine(method: "PUT", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(steps(m.stallTimerFired(), m), [], "nothing paused: a stale timer does nothing")
        _ = m.requestBodyPumped(.partial(queued: 5000), clientInputEmpty: false)
        let error = TransportError(.upstreamTimeout, "the origin took none of the request body for 60.0 s")
        XCTAssertEqual(steps(m.stallTimerFired(), m), [ending(error: error, close: true), .closeClient])
    }

    func testTheStallTimerKeepsRunningForTheDirectionStillPaused() {
        // An early answer: the origin stops taking the body and answers, the client reads slowly.
        var m = machine(method: "PUT", body: true)
        _ = m.begin(pooled: true)
        _ = m.requestBodyPumped(.partial(queued: 5000), clientInputEmpty: false)
        XCTAssertEqual(m.stalledSide, .request)
        _ = head(&m, framing: .contentLength(1 << 20))
        _ = m.responseBodyPumped(.partial(queued: 5000))
        XCTAssertEqual(m.stalledSide, .response)
        // The client drains: the request is still paused, so its stall must go on and be reported.
        XCTAssertEqual(steps(m.clientDrained(), m), [.act(.resumeResponseBody), .act(.pumpResponse)])
        XCTAssertEqual(m.stalledSide, .request, "the driver re-arms the timer for the request")
        let fired = Array(m.stallTimerFired())
        XCTAssertEqual(fired.last, .closeClient)
        XCTAssertEqual(m.ending?.error?.code, .upstreamTimeout, "the request's stall is the one reported")
        XCTAssertEqual(steps(m.upstreamDrained(), m), [], "the exchange has ended")

        // And the other way round: the origin drains while the client is still paused.
        var n = machine(method: "PUT", body: true)
        _ = n.begin(pooled: true)
        _ = head(&n, framing: .contentLength(1 << 20))
        _ = n.responseBodyPumped(.partial(queued: 5000))
        _ = n.requestBodyPumped(.partial(queued: 5000), clientInputEmpty: false)
        XCTAssertEqual(steps(n.upstreamDrained(), n), [.act(.resumeRequestBody), .act(.pumpRequest)])
        XCTAssertEqual(n.stalledSide, .response)
        _ = n.stallTimerFired()
        XCTAssertEqual(n.ending?.error?.code, .clientTimeout)
    }

    func testAnAnswerPausesForASlowClientAndAClientThatReadsNothingStalls() {
        var m = machine()
        _ = m.begin(pooled: true)
        _ = head(&m, framing: .contentLength(1 << 20))
        XCTAssertEqual(steps(m.responseBodyPumped(.partial(queued: 999)), m), [])
        XCTAssertEqual(steps(m.responseBodyPumped(.partial(queued: 1000)), m), [.pauseResponseBody])
        XCTAssertEqual(steps(m.clientDrained(), m), [.resumeResponseBody, .pumpResponse])
        XCTAssertEqual(steps(m.clientDrained(), m), [])
        _ = m.responseBodyPumped(.partial(queued: 4000))
        let error = TransportError(.clientTimeout, "the client took none of the answer for 30.0 s")
        XCTAssertEqual(steps(m.stallTimerFired(), m), [ending(error: error, paused: true, close: true), .closeClient])
    }

    // MARK: timeouts and failures

    func testConnectFailuresAreAnsweredWithTheirStatus() {
        for (error, status) in [
            (TransportError(.upstreamTimeout, "connecting to a:80 timed out"), ProxyStatus.gatewayTimeout),
            (TransportError(.loopDetected, "a:80 is this proxy's own listener"), .loopDetected),
            (TransportError(.upstreamConnectFailed, "cannot connect"), .badGateway),
        ] {
            var m = machine()
            _ = m.begin(pooled: false)
            XCTAssertEqual(steps(m.connectFailed(error), m),
                           [ending(error: error, answer: .init(status: status, detail: error.message), close: true)],
                           "the request was never sent: the client connection closes")
            XCTAssertEqual(steps(m.connected(), m), [], "a late connection is ignored")
        }
    }

    func testAnOriginSilentPastTheReadTimeoutIsAnswered504BeforeTheHeadElseCut() {
        let error = TransportError(.upstreamTimeout, "the origin sent nothing for 60.0 s")
        var before = machine()
        _ = before.begin(pooled: true)
        XCTAssertEqual(steps(before.upstreamTimedOut(), before),
                       [ending(error: error, answer: .init(status: .gatewayTimeout, detail: error.message), close: false)])
        var after = machine()
        _ = after.begin(pooled: true)
        _ = head(&after)
        XCTAssertEqual(steps(after.upstreamTimedOut(), after), [ending(error: error, close: true)])
    }

    func testAClientResetOrTheDrainDeadlineEndsTheExchange() {
        var m = machine()
        _ = m.begin(pooled: false)
        let cut = TransportError(.shuttingDown, "Tapwire shut down")
        XCTAssertEqual(steps(m.clientFailed(cut), m), [ending(error: cut, close: true)])
    }

    func testAnOriginClosingMidBodyIsAReset() {
        var m = machine()
        _ = m.begin(pooled: true)
        _ = head(&m)
        m.upstreamEnded()
        XCTAssertEqual(steps(m.upstreamClosed(reset: false, cleanEndOfBody: false, idempotent: true), m),
                       [.closeUpstream, ending(error: TransportError(.upstreamReset,
                            "the origin closed the connection before the body was complete"), close: true)])
    }

    func testAnOriginThatEndedIsNeverPooledEvenWhenTheAnswerCompletes() {
        var m = machine()
        _ = m.begin(pooled: true)
        _ = head(&m)
        m.upstreamEnded()
        XCTAssertEqual(steps(m.responseBodyPumped(.complete), m), [ending(close: false)])
    }

    // MARK: the end state and the pool

    func testTheEndStateCarriesTheOutcomeAndWhetherTheConnectionWasPooled() {
        var m = machine()
        _ = m.begin(pooled: true)
        _ = head(&m)
        _ = m.responseBodyPumped(.complete)
        let outcome = M.Outcome(upstreamReusable: true, responseWasPaused: false, closeClient: false)
        XCTAssertEqual(m.state, .finished(outcome, connectionReused: true))
        XCTAssertTrue(m.connectionReused)
        XCTAssertNil(m.failure)

        var failed = machine()
        _ = failed.begin(pooled: false)
        let error = TransportError(.upstreamConnectFailed, "refused")
        _ = failed.connectFailed(error)
        guard case .failed(let o, let reused, let failure) = failed.state else { return XCTFail("\(failed.state)") }
        XCTAssertFalse(o.upstreamReusable)
        XCTAssertFalse(reused)
        XCTAssertEqual(failure.error, error)
        XCTAssertEqual(failure.answer?.status, .badGateway)
    }

    func testAWholeCleanExchangeReturnsItsUpstreamToThePoolUnlessTheDriverSeesAReasonNot() {
        func finished() -> M {
            var m = machine()
            _ = m.begin(pooled: false)
            _ = m.connected()
            _ = head(&m)
            _ = m.responseBodyPumped(.complete)
            return m
        }
        var m = finished()
        XCTAssertEqual(steps(m.releaseUpstream(responseAllowsReuse: true, responseComplete: true, connectionIdle: true, draining: false), m),
                       [.act(.returnToPool)])
        for (allows, complete, idle, draining) in [(false, true, true, false), (true, false, true, false),
                                                   (true, true, false, false), (true, true, true, true)] {
            var m = finished()
            XCTAssertEqual(steps(m.releaseUpstream(responseAllowsReuse: allows, responseComplete: complete,
                                                   connectionIdle: idle, draining: draining), m), [.closeUpstream],
                           "wantsClose/incomplete/busy/draining: \(allows) \(complete) \(idle) \(draining)")
        }
        // A failed exchange never pools.
        var failed = machine()
        _ = failed.begin(pooled: false)
        _ = failed.connected()
        _ = failed.upstreamTimedOut()
        XCTAssertEqual(steps(failed.releaseUpstream(responseAllowsReuse: true, responseComplete: true, connectionIdle: true, draining: false), failed),
                       [.closeUpstream])
    }

    // MARK: retry on a dropped pooled connection

    func testADroppedPooledConnectionIsRetriedOnceForABodylessIdempotentRequest() {
        var m = machine()
        _ = m.begin(pooled: true)
        XCTAssertEqual(steps(m.upstreamClosed(reset: false, cleanEndOfBody: false, idempotent: true), m), [.retry])
        XCTAssertEqual(m.state, .connecting(.init(reused: false, retried: true)))
        XCTAssertEqual(steps(m.connected(), m), [.attach(bodyFollows: false)])
        // The new connection fails the same way: answered, not retried again.
        let error = TransportError(.upstreamReset, "the origin closed the connection without answering")
        XCTAssertEqual(steps(m.upstreamClosed(reset: true, cleanEndOfBody: false, idempotent: true), m),
                       [ending(error: error, answer: .init(status: .badGateway, detail: error.message), close: false)])
    }

    func testARetriedConnectionThatAnswersWholeGoesBackToThePool() {
        var m = machine()
        _ = m.begin(pooled: true)
        m.upstreamEnded()
        XCTAssertEqual(steps(m.upstreamClosed(reset: false, cleanEndOfBody: false, idempotent: true), m), [.retry])
        // The origin's close was the dropped connection's, not the new one's.
        XCTAssertEqual(m.attempt?.upstreamEnded, false)
        _ = m.connected()
        _ = m.upstreamBytesArrived()
        _ = head(&m)
        XCTAssertEqual(steps(m.responseBodyPumped(.complete), m), [ending(reusable: true, close: false)])
        XCTAssertFalse(m.connectionReused, "the record says the answer came on a new connection")
        XCTAssertEqual(steps(m.releaseUpstream(responseAllowsReuse: true, responseComplete: true, connectionIdle: true,
                                               draining: false), m), [.act(.returnToPool)])
    }

    func testNoRetryForANewConnectionABodyANonIdempotentMethodOrAfterBytes() {
        let error = TransportError(.upstreamReset, "the origin closed the connection without answering")
        let answer = M.ErrorAnswer(status: .badGateway, detail: error.message)

        var fresh = machine()
        _ = fresh.begin(pooled: false)
        _ = fresh.connected()
        XCTAssertEqual(steps(fresh.upstreamClosed(reset: false, cleanEndOfBody: false, idempotent: true), fresh),
                       [ending(error: error, answer: answer, close: false)], "a new connection is not retried")

        var post = machine(method: "POST")
        _ = post.begin(pooled: true)
        XCTAssertEqual(steps(post.upstreamClosed(reset: false, cleanEndOfBody: false, idempotent: M.isIdempotent("POST")), post),
                       [ending(error: error, answer: answer, close: false)], "POST may not be sent twice")

        var withBody = machine(method: "PUT", body: true)
        _ = withBody.begin(pooled: true)
        XCTAssertEqual(steps(withBody.upstreamClosed(reset: false, cleanEndOfBody: false, idempotent: true), withBody),
                       [ending(error: error, answer: answer, close: true)],
                       "a body partly sent is not sent again, and the client connection closes (its body is unread)")

        var seen = machine()
        _ = seen.begin(pooled: true)
        _ = seen.upstreamBytesArrived()
        let malformed = TransportError(.malformedResponse, "the origin closed the connection inside the response head")
        XCTAssertEqual(steps(seen.upstreamClosed(reset: false, cleanEndOfBody: false, idempotent: true), seen),
                       [ending(error: malformed, answer: .init(status: .badGateway, detail: malformed.message), close: false)],
                       "bytes of an answer arrived: not retried")
    }

    func testIdempotentMethods() {
        XCTAssertEqual(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "POST", "PATCH", "CONNECT"].map(M.isIdempotent),
                       [true, true, true, true, true, true, false, false, false])
    }

    // MARK: CONNECT

    func testATunnelConnectFinishesOnceUnlessTheClientWentFirst() {
        var m = machine(method: "CONNECT")
        m.beginTunnel()
        XCTAssertTrue(m.tunnelConnectFinished())
        XCTAssertFalse(m.tunnelConnectFinished())

        var gone = machine(method: "CONNECT")
        gone.beginTunnel()
        let aborted = TransportError(.clientAborted, "the client closed the connection mid-exchange")
        XCTAssertEqual(steps(gone.clientFailed(aborted), gone), [ending(error: aborted, close: true)])
        XCTAssertFalse(gone.tunnelConnectFinished())
    }
}
