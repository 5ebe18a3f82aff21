import HTTP1
import XCTest
@testable import ProxyEngine

/// `HTTP2StreamStateMachine` as playbooks: events in, decisions out, no sockets.
final class HTTP2StreamStateMachineTests: XCTestCase {
    typealias M = HTTP2StreamStateMachine

    func testARequestWithABodyStartsOnceAndEndsOnce() {
        var m = M()
        XCTAssertFalse(m.headersDone)
        XCTAssertFalse(m.requestEnded(), "no body before the head")
        XCTAssertTrue(m.headersComplete(endStream: false))
        XCTAssertEqual(m.request, .body)
        XCTAssertFalse(m.headersComplete(endStream: false), "an exchange starts only once (trailers are not a head)")
        XCTAssertTrue(m.requestEnded())
        XCTAssertFalse(m.requestEnded(), "the last chunk is added once")
        XCTAssertEqual(m.request, .ended)
    }

    func testABodylessRequestEndsWithItsHead() {
        var m = M()
        XCTAssertTrue(m.headersComplete(endStream: true))
        XCTAssertEqual(m.request, .ended)
        XCTAssertFalse(m.requestEnded())
    }

    func testTheResponseStartsOnceAndItsEndIsKept() {
        var m = M()
        _ = m.headersComplete(endStream: true)
        m.responseEnded()
        XCTAssertFalse(m.responseIsEnded, "no end before a start")
        XCTAssertTrue(m.startResponse())
        XCTAssertFalse(m.startResponse(), "an error answer after a forwarded head must become a reset")
        XCTAssertTrue(m.responseStarted)
        m.responseEnded()
        XCTAssertTrue(m.responseIsEnded)
    }

    func testAnAnswerBeforeTheWholeRequestDeclinesTheRest() {
        var m = M()
        _ = m.headersComplete(endStream: false)
        _ = m.startResponse()
        XCTAssertFalse(m.declinesRestOfRequest, "the answer is not whole yet")
        m.responseEnded()
        XCTAssertTrue(m.declinesRestOfRequest)
        _ = m.closed()
        XCTAssertFalse(m.declinesRestOfRequest, "a closed stream sends nothing")
        var whole = M()
        _ = whole.headersComplete(endStream: false)
        _ = whole.requestEnded()
        _ = whole.startResponse()
        whole.responseEnded()
        XCTAssertFalse(whole.declinesRestOfRequest, "the request had ended: a normal close")
    }

    func testAClosedStreamSendsNothingAndReportsItsCloseOnce() {
        var m = M()
        _ = m.headersComplete(endStream: false)
        XCTAssertTrue(m.closed())
        XCTAssertFalse(m.closed(), "the reset and the exchange's failure happen once")
        XCTAssertFalse(m.isOpen)
        XCTAssertFalse(m.startResponse())
        var late = M()
        _ = late.closed()
        XCTAssertFalse(late.headersComplete(endStream: true), "no exchange for a stream already reset")
    }

    func testPausingHoldsTheWindowUntilResumed() {
        var m = M()
        m.pauseReading()
        XCTAssertTrue(m.readingPaused)
        m.resumeReading()
        XCTAssertFalse(m.readingPaused)
    }
}

/// `FrameRateLimit`: a burst, then a refill rate, on an injected clock.
final class FrameRateLimitTests: XCTestCase {
    func testTheBurstPassesThenTheRateGoverns() {
        var limit = FrameRateLimit(burst: 3, perSecond: 2)
        XCTAssertEqual((0..<3).map { _ in limit.admit(now: 10) }, [true, true, true])
        XCTAssertFalse(limit.admit(now: 10))
        XCTAssertTrue(limit.admit(now: 10.5), "half a second refills one")
        XCTAssertFalse(limit.admit(now: 10.5))
        // A long quiet refills only up to the burst.
        XCTAssertEqual((0..<4).map { _ in limit.admit(now: 100) }, [true, true, true, false])
    }

    func testAClockGoingBackwardsRefillsNothing() {
        var limit = FrameRateLimit(burst: 1, perSecond: 1000)
        XCTAssertTrue(limit.admit(now: 5))
        XCTAssertFalse(limit.admit(now: 4))
        XCTAssertFalse(limit.admit(now: 5))
    }

    func testZeroPerSecondIsABudgetForTheConnectionsLife() {
        var limit = FrameRateLimit(burst: 2, perSecond: 0)
        XCTAssertEqual([limit.admit(now: 0), limit.admit(now: 1), limit.admit(now: 1000)], [true, true, false])
    }
}

/// `HTTP2RequestHead`: an HTTP/2 field list as the HTTP/1.1 head forwarded upstream.
final class HTTP2RequestHeadTests: XCTestCase {
    private func fields(_ extra: [(String, String)] = [], method: String = "GET", path: String = "/p?q=1") -> [(name: String, value: String)] {
        [(":method", method), (":scheme", "https"), (":authority", "example.test:8443"), (":path", path)] + extra
    }

    func testPseudoFieldsBecomeHostAndTargetAndCookiesAreJoined() throws {
        let made = try HTTP2RequestHead.make(fields: fields([("cookie", "a=1"), ("accept", "*/*"), ("cookie", "b=2")]),
                                             endStream: true).get()
        XCTAssertEqual(made.head.method, "GET")
        XCTAssertEqual(made.head.target, "/p?q=1")
        XCTAssertEqual(made.path, "/p?q=1")
        XCTAssertEqual(made.head.version.description, "HTTP/2")
        XCTAssertEqual(made.head.headers.fields.map { "\($0.name): \($0.value)" },
                       ["host: example.test:8443", "accept: */*", "cookie: a=1; b=2"])
        XCTAssertEqual(made.framing, BodyFraming.none)
    }

    func testABodyIsForwardedWithItsLengthOrChunked() throws {
        let sized = try HTTP2RequestHead.make(fields: fields([("content-length", "12")], method: "POST"), endStream: false).get()
        XCTAssertEqual(sized.framing, .contentLength(12))
        XCTAssertFalse(sized.head.headers.contains(name: "transfer-encoding"))
        let unsized = try HTTP2RequestHead.make(fields: fields(method: "POST"), endStream: false).get()
        XCTAssertEqual(unsized.framing, .chunked)
        XCTAssertEqual(unsized.head.headers.first(name: "transfer-encoding"), "chunked")
    }

    func testWhatCannotBeForwardedIsRefusedWithAReason() {
        XCTAssertThrowsError(try HTTP2RequestHead.make(fields: [(":method", "CONNECT"), (":authority", "a:1")], endStream: false).get())
        XCTAssertThrowsError(try HTTP2RequestHead.make(fields: fields(path: "http://absolute/"), endStream: true).get())
        XCTAssertThrowsError(try HTTP2RequestHead.make(fields: fields([(":protocol", "websocket")]), endStream: true).get())
        XCTAssertThrowsError(try HTTP2RequestHead.make(fields: fields([("content-length", "x")], method: "POST"), endStream: false).get())
        XCTAssertNoThrow(try HTTP2RequestHead.make(fields: fields(method: "OPTIONS", path: "*"), endStream: true).get())
    }
}
