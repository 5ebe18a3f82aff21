import HTTP1
import XCTest
@testable import ProxyEngine

/// `TunnelStateMachine` as playbooks: events in, actions out, no sockets.
final class TunnelStateMachineTests: XCTestCase {
    typealias M = TunnelStateMachine
    let high = 1000

    func machine() -> M { M(highWaterBytes: high, idleTimeout: 10, now: 0) }

    func testBytesEitherWayAreCountedAndNeedNoAction() {
        var m = machine()
        XCTAssertEqual(Array(m.forwarded(from: .client, count: 5, destinationQueued: 0, now: 1)), [])
        XCTAssertEqual(Array(m.forwarded(from: .upstream, count: 7, destinationQueued: 7, now: 1)), [])
        XCTAssertEqual(Array(m.forwarded(from: .client, count: 0, destinationQueued: 0, now: 1)), [])
        XCTAssertEqual(m.bytesFromClient, 5)
        XCTAssertEqual(m.bytesFromUpstream, 7)
        XCTAssertEqual(m.state, .open(fromClient: .flowing, fromUpstream: .flowing))
    }

    func testBackpressurePausesTheSourceAndTheDrainResumesIt() {
        var m = machine()
        XCTAssertEqual(Array(m.forwarded(from: .upstream, count: 1500, destinationQueued: 1500, now: 1)), [.pauseReading(.upstream)])
        XCTAssertEqual(m.direction(from: .upstream), .paused)
        // The other direction is not affected.
        XCTAssertEqual(Array(m.forwarded(from: .client, count: 10, destinationQueued: 0, now: 1)), [])
        // The client's output drains to half: the upstream is read again and its buffer moved.
        XCTAssertEqual(Array(m.outputDrained(.client, queued: 400)),
                       [.resetWatermark(.client), .resumeReading(.upstream), .forward(from: .upstream)])
        XCTAssertEqual(m.direction(from: .upstream), .flowing)
        // A drain with nothing paused does nothing.
        XCTAssertEqual(Array(m.outputDrained(.client, queued: 0)), [])
    }

    func testHalfCloseShutsThePartnersWriteOnceItsOutputIsEmptyThenEndsWhenBothAreShut() {
        var m = machine()
        _ = m.forwarded(from: .client, count: 100, destinationQueued: 0, now: 1)
        // The client's EOF with nothing queued for the upstream: its write side shuts at once.
        XCTAssertEqual(Array(m.peerClosed(.client, destinationQueued: 0)), [.shutdownWrite(.upstream)])
        XCTAssertEqual(m.state, .open(fromClient: .shut, fromUpstream: .flowing))
        // The answer keeps flowing the other way.
        XCTAssertEqual(Array(m.forwarded(from: .upstream, count: 50, destinationQueued: 50, now: 2)), [])
        // The upstream closes with 50 bytes still queued for the client: it waits for the drain.
        XCTAssertEqual(Array(m.peerClosed(.upstream, destinationQueued: 50)), [])
        XCTAssertEqual(m.direction(from: .upstream), .draining(watermarkRaised: false))
        XCTAssertEqual(Array(m.outputDrained(.client, queued: 0)),
                       [.shutdownWrite(.client), .end(closedBy: .client, resetBy: nil)])
        XCTAssertFalse(m.isOpen)
        XCTAssertEqual(m.bytesFromClient, 100)
        XCTAssertEqual(m.bytesFromUpstream, 50)
    }

    func testTheSideThatClosedFirstIsRecorded() {
        var m = machine()
        XCTAssertEqual(Array(m.peerClosed(.upstream, destinationQueued: 0)), [.shutdownWrite(.client)])
        XCTAssertEqual(Array(m.peerClosed(.client, destinationQueued: 0)),
                       [.shutdownWrite(.upstream), .end(closedBy: .upstream, resetBy: nil)])
    }

    func testAnEOFWhilePausedDrainsAtHalfThenShutsAtEmpty() {
        var m = machine()
        _ = m.forwarded(from: .upstream, count: 2000, destinationQueued: 2000, now: 1)
        XCTAssertEqual(Array(m.peerClosed(.upstream, destinationQueued: 2000)), [])
        XCTAssertEqual(m.direction(from: .upstream), .draining(watermarkRaised: true))
        // At half: the watermark goes back to empty and what the upstream read before its EOF moves.
        XCTAssertEqual(Array(m.outputDrained(.client, queued: 500)), [.resetWatermark(.client), .forward(from: .upstream)])
        // No reading resumes after an EOF; the moved bytes are reported, then the drain at empty shuts.
        XCTAssertEqual(Array(m.forwarded(from: .upstream, count: 0, destinationQueued: 500, now: 2)), [])
        XCTAssertEqual(Array(m.outputDrained(.client, queued: 0)), [.shutdownWrite(.client)])
        XCTAssertEqual(m.state, .open(fromClient: .flowing, fromUpstream: .shut))
    }

    func testAResetEndsAtOnceWithTheSidesErrorCode() {
        var m = machine()
        XCTAssertEqual(Array(m.peerFailed(.client, reset: true)),
                       [.end(closedBy: .client, resetBy: .client)])
        // Nothing happens after the end.
        XCTAssertEqual(Array(m.forwarded(from: .upstream, count: 10, destinationQueued: 0, now: 1)), [])
        XCTAssertEqual(Array(m.peerClosed(.upstream, destinationQueued: 0)), [])
        XCTAssertEqual(Array(m.idleTimerFired(now: 100)), [])
        XCTAssertEqual(Array(m.shutdown()), [])

        var u = machine()
        _ = u.peerClosed(.client, destinationQueued: 10)
        XCTAssertEqual(Array(u.peerFailed(.upstream, reset: true)),
                       [.end(closedBy: .client, resetBy: .upstream)],
                       "closedBy names the side that closed first")
    }

    func testIdleTimeoutCountsFromTheLastByteEitherWay() {
        var m = machine()
        XCTAssertEqual(Array(m.idleTimerFired(now: 9)), [])
        _ = m.forwarded(from: .upstream, count: 1, destinationQueued: 0, now: 9)
        XCTAssertEqual(Array(m.idleTimerFired(now: 18)), [], "activity at 9 moves the deadline to 19")
        // A pause is not activity.
        _ = m.forwarded(from: .client, count: 0, destinationQueued: 5000, now: 18.5)
        XCTAssertEqual(Array(m.idleTimerFired(now: 19)), [.end(closedBy: .timeout, resetBy: nil)])
    }

    func testALogBehindHoldsBothSidesUntilItCatchesUp() {
        var m = machine()
        _ = m.forwarded(from: .client, count: 10, destinationQueued: 0, now: 1)
        XCTAssertEqual(Array(m.logBehind()), [.holdReading(.client), .holdReading(.upstream), .registerHeld])
        XCTAssertTrue(m.isHeldForLog)
        // Once held, a second report changes nothing.
        XCTAssertEqual(Array(m.logBehind()), [])
        // Held for longer than the idle timeout: not the peers' silence, so no end.
        XCTAssertEqual(Array(m.idleTimerFired(now: 100)), [])
        XCTAssertEqual(Array(m.logCaughtUp(now: 100)),
                       [.resumeReading(.client), .forward(from: .client), .resumeReading(.upstream), .forward(from: .upstream)])
        XCTAssertFalse(m.isHeldForLog)
        // The idle time counts from the release.
        XCTAssertEqual(Array(m.idleTimerFired(now: 105)), [])
        XCTAssertEqual(Array(m.idleTimerFired(now: 110)), [.end(closedBy: .timeout, resetBy: nil)])
        XCTAssertEqual(Array(m.logCaughtUp(now: 111)), [], "nothing after the end")
    }

    func testAPausedSideStaysUnreadUntilBothTheDrainAndTheLogAllowIt() {
        var m = machine()
        _ = m.forwarded(from: .upstream, count: 1500, destinationQueued: 1500, now: 1)
        // The upstream is already paused by its partner's output: only the client is held.
        XCTAssertEqual(Array(m.logBehind()), [.holdReading(.client), .registerHeld])
        // The drain lowers the watermark but does not read while the log holds the tunnel.
        XCTAssertEqual(Array(m.outputDrained(.client, queued: 400)), [.resetWatermark(.client)])
        XCTAssertEqual(m.direction(from: .upstream), .flowing)
        XCTAssertEqual(Array(m.logCaughtUp(now: 2)),
                       [.resumeReading(.client), .forward(from: .client), .resumeReading(.upstream), .forward(from: .upstream)])
        // And the other way: released while still paused, the drain resumes it later.
        _ = m.forwarded(from: .upstream, count: 1500, destinationQueued: 1500, now: 3)
        _ = m.logBehind()
        XCTAssertEqual(Array(m.logCaughtUp(now: 4)), [.resumeReading(.client), .forward(from: .client)])
        XCTAssertEqual(Array(m.outputDrained(.client, queued: 0)),
                       [.resetWatermark(.client), .resumeReading(.upstream), .forward(from: .upstream)])
    }

    func testAHeldTunnelStillEndsAtShutdownOrOnAnError() {
        var m = machine()
        _ = m.logBehind()
        XCTAssertEqual(Array(m.shutdown()), [.end(closedBy: .shutdown, resetBy: nil)])
        var n = machine()
        _ = n.logBehind()
        XCTAssertEqual(Array(n.peerFailed(.upstream, reset: true)), [.end(closedBy: .upstream, resetBy: .upstream)])
    }

    func testShutdownEndsAnOpenTunnel() {
        var m = machine()
        _ = m.peerClosed(.client, destinationQueued: 3)
        XCTAssertEqual(Array(m.shutdown()), [.end(closedBy: .shutdown, resetBy: nil)])
    }
}

/// The inline list every machine returns.
final class ActionListTests: XCTestCase {
    func testKeepsOrderUpToFourAndIteratesOnce() {
        var list = ActionList<Int>()
        XCTAssertTrue(list.isEmpty)
        for i in 1...4 { list.append(i) }
        XCTAssertEqual(Array(list), [1, 2, 3, 4])
        XCTAssertEqual(list.count, 4)
        var other = ActionList(7)
        other.append(contentsOf: ActionList(8, 9))
        XCTAssertEqual(Array(other), [7, 8, 9])
        XCTAssertEqual(other.count, 3)
    }

    func testAFifthActionIsReportedAndTakesTheLastSlotInsteadOfCrashing() {
        var reports = 0
        let report = ActionListOverflow.report
        ActionListOverflow.report = { reports += 1 }
        defer { ActionListOverflow.report = report }
        var list = ActionList<Int>()
        for i in 1...6 { list.append(i) }
        XCTAssertEqual(reports, 2, "each overflow is reported (a debug build stops at the first)")
        XCTAssertEqual(Array(list), [1, 2, 3, 6], "the newest, ending action is kept")
        XCTAssertEqual(list.count, 4)
    }
}
