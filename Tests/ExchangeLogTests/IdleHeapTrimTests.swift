import ExchangeLog
import Foundation
import Synchronization
import XCTest

/// One trim after each stretch of activity, once a whole period passed without any.
final class IdleHeapTrimTests: XCTestCase {
    func testTrimsOnceAfterEachStretchOfActivity() {
        let trims = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        let trim = IdleHeapTrim { trims.add(1, ordering: .relaxed); done.signal() }
        XCTAssertFalse(trim.tick(activity: 10), "the first tick only sets the reference")
        XCTAssertFalse(trim.tick(activity: 20), "busy")
        XCTAssertFalse(trim.tick(activity: 35), "busy")
        XCTAssertTrue(trim.tick(activity: 35), "a quiet period after activity")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertFalse(trim.tick(activity: 35), "still quiet: no second trim")
        XCTAssertFalse(trim.tick(activity: 35))
        XCTAssertFalse(trim.tick(activity: 36), "busy again")
        XCTAssertTrue(trim.tick(activity: 36))
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(trims.load(ordering: .relaxed), 2)
    }

    func testTheRealTrimRuns() {
        // malloc_trim on this process: it must simply return (no crash, no hang).
        XCTAssertTrue(IdleHeapTrim().tick(activity: 0) == false)
        let trim = IdleHeapTrim()
        _ = trim.tick(activity: 1)
        XCTAssertTrue(trim.tick(activity: 1))
    }
}
