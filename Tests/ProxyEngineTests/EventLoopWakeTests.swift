import Foundation
@testable import ProxyEngine
import XCTest

/// `EventLoop.execute` wakes its loop through an eventfd, written once per batch of
/// queued work: a closure queued while the loop is taking the inbox must still run.
final class EventLoopWakeTests: XCTestCase {
    func testClosuresFromManyThreadsEachRunOnceOnTheLoop() throws {
        let loop = try EventLoop(index: 9)
        loop.start()
        let perThread = 20_000, threads = 4
        let counter = NSLock()
        var ran = 0
        var offLoop = 0
        let done = DispatchSemaphore(value: 0)
        let loopThread = NSLock()
        var loopThreadID: ObjectIdentifier?
        loop.execute { loopThread.withLock { loopThreadID = ObjectIdentifier(Thread.current) } }
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            for i in 0..<perThread {
                loop.execute {
                    let here = ObjectIdentifier(Thread.current)
                    counter.withLock {
                        ran += 1
                        if here != loopThread.withLock({ loopThreadID }) { offLoop += 1 }
                        if ran == perThread * threads { done.signal() }
                    }
                }
                if i % 1_000 == 0 { sched_yield() }  // let the loop drain mid-stream, racing the producers
            }
        }
        guard done.wait(timeout: .now() + 30) == .success else {
            // Left running: stop() is itself a queued closure and would wait on the same lost wake-up.
            return XCTFail("closures were lost: \(counter.withLock { ran }) of \(perThread * threads) ran")
        }
        XCTAssertEqual(counter.withLock { ran }, perThread * threads)
        XCTAssertEqual(counter.withLock { offLoop }, 0, "a closure ran off the loop thread")
        loop.stop()
        loop.waitUntilStopped()
    }

    /// Work queued before the loop starts runs once it does; work queued from a closure
    /// already on the loop (the wake-up's flag is then still set) runs too.
    func testQueuedBeforeStartAndFromTheLoopItself() throws {
        let loop = try EventLoop(index: 8)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            loop.execute { loop.execute { done.signal() } }
        }
        loop.start()
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "nested or early work never ran")
        loop.stop()
        loop.waitUntilStopped()
    }
}
