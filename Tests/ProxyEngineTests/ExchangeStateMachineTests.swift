import HTTP1
import XCTest
@testable import ProxyEngine

/// `ExchangeStateMachine` as playbooks: events in, actions out, no sockets.
final class ExchangeStateMachineTests: XCTestCase {
    typealias M = ExchangeStateMachine
    typealias A = M.Action
    let limits = M.Limits(highWaterBytes: 1000, upstreamReadTimeout: 60, clientIdleTimeout: 30)

    func machine(method: String = "GET", body: Bool = false, http10: Bool = false, upgrade: Bool = false,
                 close: Bool = false) -> M {
        M(limits: limits, hasBody: body, method: method, isHTTP10: http10, wantsUpgrade: upgrade, clientWantsClose: close)
    }

    func ending(error: TransportError? = nil, answer: M.ErrorAnswer? = nil, reusable: Bool = false,
                paused: Bool = false, close: Bool) -> A {
        .finish(M.Ending(error: error, answer: answer, upstreamReusable: reusable, responseWasPaused: paused, closeClient: close))
    }

    func head(_ m: inout M, status: Int = 200, framing: BodyFraming? = .contentLength(10),
              draining: Bool = false, last: Bool = false) -> [A] {
        Array(m.responseHead(status: status, framing: framing, draining: draining, clientSentLast: last))
    }

    // MARK: keep-alive

    func testABodylessGETOnANewConnectionEndsKeepingBothConnections() {
        var m = machine()
        XCTAssertEqual(Array(m.begin(pooled: false)), [.connect], "no body: nothing to hold back")
        XCTAssertTrue(m.isRequestComplete, "whole from its head, even while connecting")
        XCTAssertEqual(Array(m.connected()), [.attach(bodyFollows: false)])
        XCTAssertTrue(m.requestSent)
        XCTAssertEqual(m.attempt, M.Attempt(reused: false, retried: false))
        XCTAssertEqual(Array(m.upstreamBytesArrived()), [.noteFirstResponseByte])
        XCTAssertEqual(Array(m.upstreamBytesArrived()), [], "noted once")
        XCTAssertEqual(head(&m), [.forwardResponseHead(connection: nil, dechunk: false)])
        XCTAssertEqual(Array(m.responseBodyPumped(.partial(queued: 10))), [])
        XCTAssertEqual(Array(m.responseBodyPumped(.complete)), [ending(reusable: true, close: false)])
        XCTAssertTrue(m.isFinished)
        XCTAssertEqual(Array(m.clientFailed(TransportError(.clientAborted, "late"))), [], "nothing after the end")
    }

    func testAPooledConnectionIsUsedAtOnce() {
        var m = machine()
        XCTAssertEqual(Array(m.begin(pooled: true)), [.attach(bodyFollows: false)])
        XCTAssertEqual(m.attempt, M.Attempt(reused: true, retried: false))
    }

    func testTheClientConnectionClosesWhenAskedOrWhenTheAnswerCannotBeFramed() {
        var asked = machine(close: true)
        _ = asked.begin(pooled: true)
        XCTAssertEqual(head(&asked), [.forwardResponseHead(connection: "close", dechunk: false)])
        XCTAssertEqual(Array(asked.responseBodyPumped(.complete)), [ending(reusable: true, close: true)],
                       "the upstream may still be pooled")

        var delimited = machine()
        _ = delimited.begin(pooled: true)
        XCTAssertEqual(head(&delimited, framing: .closeDelimited), [.forwardResponseHead(connection: "close", dechunk: false)])
        // The body ends with the origin's close.
        XCTAssertEqual(Array(delimited.upstreamClosed(reset: false, cleanEndOfBody: true)),
                       [.closeUpstream, ending(close: true)])
    }

    func testHTTP10ClientsGetKeepAliveSpelledOutAndChunkedAnswersDechunked() {
        var m = machine(http10: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(head(&m), [.forwardResponseHead(connection: "keep-alive", dechunk: false)])

        var chunked = machine(http10: true)
        _ = chunked.begin(pooled: true)
        XCTAssertEqual(head(&chunked, framing: .chunked), [.forwardResponseHead(connection: "close", dechunk: true)])
        XCTAssertTrue(chunked.isDechunking)
    }

    func testHEADAnd204And304AnswersWithoutABodyCompleteAtTheirHead() {
        // The framing (from HTTP1's rules) says no body; the pump then reports completion at once.
        for status in [200, 204, 304] {
            var m = machine(method: status == 200 ? "HEAD" : "GET")
            _ = m.begin(pooled: true)
            XCTAssertEqual(head(&m, status: status, framing: BodyFraming.none), [.forwardResponseHead(connection: nil, dechunk: false)])
            XCTAssertEqual(Array(m.responseBodyPumped(.complete)), [ending(reusable: true, close: false)], "\(status)")
        }
    }

    func testDrainingOrALastRequestClosesTheClientAfterTheAnswer() {
        var draining = machine()
        _ = draining.begin(pooled: true)
        XCTAssertEqual(head(&draining, draining: true), [.forwardResponseHead(connection: "close", dechunk: false)])
        var last = machine()
        _ = last.begin(pooled: true)
        XCTAssertEqual(head(&last, last: true), [.forwardResponseHead(connection: "close", dechunk: false)])
    }

    // MARK: interim answers and upgrades

    func testInterimAnswersGoToTheClientExceptToHTTP10() {
        var m = machine(method: "POST", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(head(&m, status: 100, framing: nil), [.forwardInterim])
        XCTAssertTrue(m.isAwaitingResponseHead, "still waiting for the final answer")
        XCTAssertEqual(Array(m.requestBodyPumped(.complete, clientInputEmpty: true)), [.requestSent])
        XCTAssertEqual(head(&m), [.forwardResponseHead(connection: nil, dechunk: false)])

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
                       [ending(error: error, answer: .init(status: 502, reason: "Bad Gateway", detail: error.message), close: false)])
    }

    // MARK: request bodies, 100-continue, half-close

    func testARequestBodyWaitsUnreadWhileConnectingThenStreams() {
        var m = machine(method: "POST", body: true)
        XCTAssertEqual(Array(m.begin(pooled: false)), [.pauseClientReading, .connect])
        XCTAssertFalse(m.isRequestComplete)
        XCTAssertEqual(Array(m.clientReadable()), [], "nothing is pumped before an upstream is attached")
        XCTAssertEqual(Array(m.connected()), [.attach(bodyFollows: true)])
        XCTAssertTrue(m.isSendingRequest)
        XCTAssertEqual(Array(m.clientReadable()), [.pumpRequest])
        XCTAssertEqual(Array(m.requestBodyPumped(.partial(queued: 10), clientInputEmpty: true)), [])
        XCTAssertEqual(Array(m.requestBodyPumped(.complete, clientInputEmpty: true)), [.requestSent])
        XCTAssertTrue(m.isRequestComplete)
        XCTAssertEqual(Array(m.clientReadable()), [], "pipelined bytes wait for the next exchange")
    }

    func testAnAnswerBeforeTheWholeBodyClosesTheClientAfterIt() {
        var m = machine(method: "POST", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(head(&m, status: 413), [.forwardResponseHead(connection: "close", dechunk: false)])
        XCTAssertEqual(Array(m.responseBodyPumped(.complete)), [ending(close: true)], "not reusable: the request was not sent whole")
    }

    func testAMalformedBodyIsAnsweredBeforeTheAnswerBeganElseClosed() {
        var m = machine(method: "POST", body: true)
        _ = m.begin(pooled: true)
        let error = TransportError(.malformedRequest, "bad chunk size")
        XCTAssertEqual(Array(m.requestBodyPumped(.malformed(HTTPParseError(.malformed, "bad chunk size")), clientInputEmpty: false)),
                       [ending(error: error, answer: .init(status: 400, reason: "Bad Request", detail: "bad chunk size"), close: true)])

        var late = machine(method: "POST", body: true)
        _ = late.begin(pooled: true)
        _ = head(&late)
        XCTAssertEqual(Array(late.requestBodyPumped(.malformed(HTTPParseError(.malformed, "bad chunk size")), clientInputEmpty: false)),
                       [ending(error: error, close: true)])
    }

    func testAHalfCloseWhileHeldForwardsWhatIsBufferedThenJudgesIt() {
        // The whole body was buffered: it goes through and the exchange completes.
        var whole = machine(method: "POST", body: true)
        XCTAssertEqual(Array(whole.clientEndedWhileHeld()), [], "not attached yet")
        _ = whole.begin(pooled: false)
        _ = whole.connected()
        XCTAssertEqual(Array(whole.requestBodyPumped(.complete, clientInputEmpty: true)), [.requestSent])

        // The body was cut short by the half-close: nothing more is coming.
        var cut = machine(method: "POST", body: true)
        _ = cut.begin(pooled: false)
        _ = cut.connected()
        XCTAssertEqual(Array(cut.clientEndedWhileHeld()), [.pumpRequest])
        let aborted = TransportError(.clientAborted, "the client closed the connection mid-exchange")
        XCTAssertEqual(Array(cut.requestBodyPumped(.partial(queued: 5), clientInputEmpty: true)),
                       [ending(error: aborted, close: true)])
    }

    // MARK: backpressure and stalls

    func testARequestBodyPausesAtTheHighMarkAndResumesOnTheDrain() {
        var m = machine(method: "PUT", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(Array(m.requestBodyPumped(.partial(queued: 1000), clientInputEmpty: false)), [.pauseRequestBody])
        XCTAssertEqual(m.state, .exchanging(.init(reused: true, retried: false), .sending(paused: true), .awaitingHead(bytesSeen: false)))
        XCTAssertEqual(Array(m.upstreamDrained()), [.resumeRequestBody, .pumpRequest])
        XCTAssertEqual(Array(m.upstreamDrained()), [], "nothing paused")
    }

    func testAnOriginThatTakesNoneOfTheBodyStallsTheExchange() {
        var m = machine(method: "PUT", body: true)
        _ = m.begin(pooled: true)
        XCTAssertEqual(Array(m.stallTimerFired()), [], "nothing paused: a stale timer does nothing")
        _ = m.requestBodyPumped(.partial(queued: 5000), clientInputEmpty: false)
        let error = TransportError(.upstreamTimeout, "the origin took none of the request body for 60.0 s")
        XCTAssertEqual(Array(m.stallTimerFired()), [ending(error: error, close: true), .closeClient])
    }

    func testAnAnswerPausesForASlowClientAndAClientThatReadsNothingStalls() {
        var m = machine()
        _ = m.begin(pooled: true)
        _ = head(&m, framing: .contentLength(1 << 20))
        XCTAssertEqual(Array(m.responseBodyPumped(.partial(queued: 999))), [])
        XCTAssertEqual(Array(m.responseBodyPumped(.partial(queued: 1000))), [.pauseResponseBody])
        XCTAssertEqual(Array(m.clientDrained()), [.resumeResponseBody, .pumpResponse])
        XCTAssertEqual(Array(m.clientDrained()), [])
        _ = m.responseBodyPumped(.partial(queued: 4000))
        let error = TransportError(.clientTimeout, "the client took none of the answer for 30.0 s")
        XCTAssertEqual(Array(m.stallTimerFired()), [ending(error: error, paused: true, close: true), .closeClient])
    }

    // MARK: timeouts and failures

    func testConnectFailuresAreAnsweredWithTheirStatus() {
        for (error, status, reason) in [
            (TransportError(.upstreamTimeout, "connecting to a:80 timed out"), 504, "Gateway Timeout"),
            (TransportError(.loopDetected, "a:80 is this proxy's own listener"), 508, "Loop Detected"),
            (TransportError(.upstreamConnectFailed, "cannot connect"), 502, "Bad Gateway"),
        ] {
            var m = machine()
            _ = m.begin(pooled: false)
            XCTAssertEqual(Array(m.connectFailed(error)),
                           [ending(error: error, answer: .init(status: status, reason: reason, detail: error.message), close: true)],
                           "the request was never sent: the client connection closes")
            XCTAssertEqual(Array(m.connected()), [], "a late connection is ignored")
        }
    }

    func testAnOriginSilentPastTheReadTimeoutIsAnswered504BeforeTheHeadElseCut() {
        let error = TransportError(.upstreamTimeout, "the origin sent nothing for 60.0 s")
        var before = machine()
        _ = before.begin(pooled: true)
        XCTAssertEqual(Array(before.upstreamTimedOut()),
                       [ending(error: error, answer: .init(status: 504, reason: "Gateway Timeout", detail: error.message), close: false)])
        var after = machine()
        _ = after.begin(pooled: true)
        _ = head(&after)
        XCTAssertEqual(Array(after.upstreamTimedOut()), [ending(error: error, close: true)])
    }

    func testAClientResetOrTheDrainDeadlineEndsTheExchange() {
        var m = machine()
        _ = m.begin(pooled: false)
        let cut = TransportError(.shuttingDown, "Tapwire shut down")
        XCTAssertEqual(Array(m.clientFailed(cut)), [ending(error: cut, close: true)])
    }

    func testAnOriginClosingMidBodyIsAReset() {
        var m = machine()
        _ = m.begin(pooled: true)
        _ = head(&m)
        m.upstreamEndedNoted()
        XCTAssertEqual(Array(m.upstreamClosed(reset: false, cleanEndOfBody: false)),
                       [.closeUpstream, ending(error: TransportError(.upstreamReset,
                            "the origin closed the connection before the body was complete"), close: true)])
    }

    func testAnOriginThatEndedIsNeverPooledEvenWhenTheAnswerCompletes() {
        var m = machine()
        _ = m.begin(pooled: true)
        _ = head(&m)
        m.upstreamEndedNoted()
        XCTAssertEqual(Array(m.responseBodyPumped(.complete)), [ending(close: false)])
    }

    // MARK: retry on a dropped pooled connection

    func testADroppedPooledConnectionIsRetriedOnceForABodylessIdempotentRequest() {
        var m = machine()
        _ = m.begin(pooled: true)
        XCTAssertEqual(Array(m.upstreamClosed(reset: false, cleanEndOfBody: false)), [.retry])
        XCTAssertEqual(m.state, .connecting(.init(reused: false, retried: true)))
        XCTAssertEqual(Array(m.connected()), [.attach(bodyFollows: false)])
        // The new connection fails the same way: answered, not retried again.
        let error = TransportError(.upstreamReset, "the origin closed the connection without answering")
        XCTAssertEqual(Array(m.upstreamClosed(reset: true, cleanEndOfBody: false)),
                       [ending(error: error, answer: .init(status: 502, reason: "Bad Gateway", detail: error.message), close: false)])
    }

    func testNoRetryForANewConnectionABodyANonIdempotentMethodOrAfterBytes() {
        var fresh = machine()
        _ = fresh.begin(pooled: false)
        _ = fresh.connected()
        XCTAssertNotEqual(Array(fresh.upstreamClosed(reset: false, cleanEndOfBody: false)), [.retry])

        var post = machine(method: "POST")
        _ = post.begin(pooled: true)
        XCTAssertNotEqual(Array(post.upstreamClosed(reset: false, cleanEndOfBody: false)), [.retry])

        var withBody = machine(method: "PUT", body: true)
        _ = withBody.begin(pooled: true)
        XCTAssertNotEqual(Array(withBody.upstreamClosed(reset: false, cleanEndOfBody: false)), [.retry])

        var seen = machine()
        _ = seen.begin(pooled: true)
        _ = seen.upstreamBytesArrived()
        let error = TransportError(.malformedResponse, "the origin closed the connection inside the response head")
        XCTAssertEqual(Array(seen.upstreamClosed(reset: false, cleanEndOfBody: false)),
                       [ending(error: error, answer: .init(status: 502, reason: "Bad Gateway", detail: error.message), close: false)])
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
        XCTAssertEqual(Array(gone.clientFailed(aborted)), [ending(error: aborted, close: true)])
        XCTAssertFalse(gone.tunnelConnectFinished())
    }
}
