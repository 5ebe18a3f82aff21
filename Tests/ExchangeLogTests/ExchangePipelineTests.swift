@testable import ExchangeLog
import Foundation
import HTTP1
import Synchronization
import XCTest

/// The pool between the event loops and the writer: nothing accepted is lost or
/// doubled, and overload is counted instead of blocking.
/// A pipeline writing to a fresh directory (the caller removes it).
private func makePipeline(maxPending: Int = 65_536, maxPendingBytes: Int = 256 << 20, workers: Int = 2) throws
    -> (TemporaryDirectory, LogWriter, ExchangePipeline) {
    let dir = try TemporaryDirectory()
    let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false))
    let pipeline = ExchangePipeline(processor: RecordFixture.processor(), writer: writer,
                                    maxPending: maxPending, maxPendingBytes: maxPendingBytes, workers: workers)
    return (dir, writer, pipeline)
}

final class ExchangePipelineTests: XCTestCase {
    func testEveryAcceptedExchangeIsWrittenExactlyOnce() throws {
        let (dir, writer, pipeline) = try makePipeline()
        defer { dir.remove() }
        let group = DispatchGroup()
        for t in 0..<4 {
            group.enter()
            Thread {
                for i in 0..<250 {
                    pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/item?n=\(t * 250 + i)",
                                                                 body: Array(#"{"ok":true}"#.utf8))))
                }
                group.leave()
            }.start()
        }
        group.wait()
        pipeline.drain()
        writer.flushAndStop()
        let lines = try LogTestFiles.lines(dir.path + "/tapwire.jsonl")
        var seen = [Int](repeating: 0, count: 1000)
        for line in lines {
            guard let r = line.range(of: "?n=") else { continue }
            if let n = Int(line[r.upperBound...].prefix { $0.isNumber }) { seen[n] += 1 }
        }
        XCTAssertEqual(seen.filter { $0 != 1 }.count, 0)
        XCTAssertEqual(pipeline.processed, 1000)
        XCTAssertEqual(pipeline.dropped, 0)
        XCTAssertEqual(pipeline.queueDepth, 0)
    }

    /// A worker hands each finished event back to the thread that accepted it (the loop whose
    /// malloc arena holds its memory), which frees it at its next `accept`.
    func testFinishedEventsWaitForTheThreadThatAcceptedThem() throws {
        let (dir, writer, pipeline) = try makePipeline(workers: 1)
        defer { dir.remove() }
        // One long-lived accepting thread, told what to do through a semaphore.
        let go = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let count = Atomic<Int>(0)
        let loop = Thread {
            while true {
                go.wait()
                let n = count.load(ordering: .relaxed)
                if n == 0 { done.signal(); return }
                for i in 0..<n { pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)"))) }
                done.signal()
            }
        }
        loop.start()
        func acceptOnLoop(_ n: Int) {
            count.store(n, ordering: .relaxed)
            go.signal()
            done.wait()
        }
        // A worker counts a batch processed before it hands the batch back: wait for both.
        func waitUntil(_ what: String, _ condition: () -> Bool) {
            XCTAssertTrue(ExchangeLogTests.waitUntil(condition), "\(what): processed \(pipeline.processed), waiting \(pipeline.waitingToBeFreed)")
        }
        acceptOnLoop(10)
        // The last batch waits (an earlier one may have been taken back by the thread's
        // later accepts, while it was still accepting).
        waitUntil("the batch waits for its thread") {
            pipeline.processed == 10 && (1...10).contains(pipeline.waitingToBeFreed.first ?? 0)
        }
        XCTAssertEqual(pipeline.waitingToBeFreed.count, 1)
        acceptOnLoop(1)
        // Taken back (and freed) by that accept; the worker may have finished the new one since.
        XCTAssertLessThanOrEqual(pipeline.waitingToBeFreed.first ?? 0, 1)
        waitUntil("the new one waits") { pipeline.processed == 11 && pipeline.waitingToBeFreed == [1] }
        // Another thread's events wait for that thread, not the first one's.
        pipeline.accept(.http(RecordFixture.exchange()))
        waitUntil("each thread's wait for it") { pipeline.processed == 12 && pipeline.waitingToBeFreed == [1, 1] }
        acceptOnLoop(0)
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(try LogTestFiles.lines(dir.path + "/tapwire.jsonl").count, 12)
    }

    func testOverloadIsCountedLostAndReported() throws {
        let (dir, writer, pipeline) = try makePipeline(maxPending: 0)
        defer { dir.remove() }
        for i in 0..<10 { pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)"))) }
        XCTAssertEqual(pipeline.dropped, 10)
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(writer.stats.lost, 10)
        let lines = try LogTestFiles.lines(dir.path + "/tapwire.jsonl")
        XCTAssertEqual(lines.compactMap { LogTestFiles.lossCount($0) }.reduce(0, +), 10, "\(lines)")
    }

    func testCapturedBytesAreBoundedToo() throws {
        // One exchange fits in an empty queue whatever its size; then the byte bound refuses
        // more until a worker takes the first. With a tiny bound, some must be refused.
        let (dir, writer, pipeline) = try makePipeline(maxPendingBytes: 1)
        defer { dir.remove() }
        let big = [UInt8](repeating: UInt8(ascii: "a"), count: 256 << 10)
        for i in 0..<200 {
            pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)",
                                                         responseHeaders: [("Content-Type", "text/plain")], body: big)))
        }
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertGreaterThan(pipeline.dropped, 0)
        XCTAssertEqual(pipeline.processed + pipeline.dropped, 200)
        XCTAssertEqual(writer.stats.lost, pipeline.dropped)
    }
}

/// A napping worker that cannot run does not stop logging: a backlog wakes the helpers.
final class ExchangePipelineSchedulingTests: XCTestCase {
    /// Holds the (only) worker inside its first batch until `release`; `largest` is the
    /// biggest batch taken after it.
    final class FirstBatchGate: Sendable {
        let stalled = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let once = Atomic<Bool>(false)
        let largest = Atomic<Int>(0)

        init(_ pipeline: ExchangePipeline) {
            pipeline.batchHook = { [self] _, count in
                if !once.exchange(true, ordering: .relaxed) { stalled.signal(); release.wait() } else {
                    _ = largest.max(count, ordering: .relaxed)
                }
            }
        }
    }

    func testHelpersLogWhileTheNappingWorkerCannotRun() throws {
        let (dir, writer, pipeline) = try makePipeline(maxPending: 64, workers: 2)
        defer { dir.remove() }
        XCTAssertEqual(pipeline.helperBacklog, 16)
        let stalled = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let once = Atomic<Bool>(false)
        pipeline.batchHook = { napper, _ in
            // The napping worker's first batch stands for a thread that gets no CPU.
            if napper && !once.exchange(true, ordering: .relaxed) { stalled.signal(); release.wait() }
        }
        pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=0")))
        XCTAssertEqual(stalled.wait(timeout: .now() + 10), .success)
        for i in 1...40 { pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)"))) }
        // The helper works only while a backlog (16) waits, so it leaves at most 15 for the
        // napper, however its batches interleave with the accepts: it may wake when 27 wait,
        // take them all, and sleep with 13 left.
        let atLeast = 40 - (pipeline.helperBacklog - 1)
        _ = waitUntil { pipeline.processed >= atLeast }
        XCTAssertGreaterThanOrEqual(pipeline.processed, atLeast, "the helper wrote the backlog")
        release.signal()
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(pipeline.processed, 41)
        XCTAssertEqual(pipeline.dropped, 0)
        XCTAssertEqual(try LogTestFiles.lines(dir.path + "/tapwire.jsonl").count, 41)
    }

    func testBatchesOfLargeCapturesStayNearAMegabyte() throws {
        let (dir, writer, pipeline) = try makePipeline(workers: 1)
        defer { dir.remove() }
        let gate = FirstBatchGate(pipeline)
        let body = [UInt8](repeating: UInt8(ascii: "a"), count: 256 << 10)
        pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=0")))
        XCTAssertEqual(gate.stalled.wait(timeout: .now() + 10), .success)
        // 40 captures of 256 KiB wait while the only worker is held: ~10 MiB in all.
        for i in 1...40 {
            pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)",
                                                         responseHeaders: [("Content-Type", "text/plain")], body: body)))
        }
        gate.release.signal()
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(pipeline.processed, 41)
        // 1 MiB over 256 KiB (plus 512 B of head allowance each): at most four per batch.
        XCTAssertEqual(gate.largest.load(ordering: .relaxed), 4)
    }

    /// A worker takes its batch reversed and pops it: the lines must still come out in the
    /// order the exchanges were accepted.
    func testABatchIsWrittenInAcceptOrder() throws {
        let (dir, writer, pipeline) = try makePipeline(workers: 1)
        defer { dir.remove() }
        let gate = FirstBatchGate(pipeline)
        pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=0")))
        XCTAssertEqual(gate.stalled.wait(timeout: .now() + 10), .success)
        for i in 1...30 { pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)"))) }
        gate.release.signal()
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertGreaterThan(gate.largest.load(ordering: .relaxed), 1, "no batch held more than one exchange")
        let order = try LogTestFiles.lines(dir.path + "/tapwire.jsonl").compactMap { line -> Int? in
            guard let r = line.range(of: "?n=") else { return nil }
            return Int(line[r.upperBound...].prefix { $0.isNumber })
        }
        XCTAssertEqual(order, Array(0...30))
    }

    func testIdleHelpersWaitEvenWithATinyByteBound() throws {
        // A quarter of a byte bound under 4 is 0: an empty queue must still not count as a
        // backlog, or a helper spins taking empty batches.
        let (dir, writer, pipeline) = try makePipeline(maxPendingBytes: 3, workers: 2)
        defer { dir.remove() }
        let empty = Atomic<Int>(0)
        pipeline.batchHook = { _, count in if count == 0 { empty.add(1, ordering: .relaxed) } }
        pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/one")))
        // Time is the point: a spinning helper shows only while the pipeline sits idle.
        usleep(200_000)
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(pipeline.processed, 1)
        XCTAssertEqual(empty.load(ordering: .relaxed), 0)
    }
}

/// The first backlog (an eighth of a decode bound waiting) is reported once: the engine
/// lowers the event loops' priority then (`log.loopNice`), not before.
final class ExchangePipelineBacklogTests: XCTestCase {
    func testAnEighthOfTheQueueWaitingIsReportedOnce() throws {
        let (dir, writer, pipeline) = try makePipeline(maxPending: 64, workers: 1)
        defer { dir.remove() }
        let reports = Atomic<Int>(0)
        pipeline.onFirstBacklog { reports.add(1, ordering: .relaxed) }
        func waitUntilProcessed(_ count: Int) {
            _ = waitUntil { pipeline.processed >= count }
            XCTAssertEqual(pipeline.processed, count)
        }
        // Short of the mark: one at a time, each taken before the next arrives.
        for i in 0..<20 {
            pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)")))
            waitUntilProcessed(i + 1)
        }
        XCTAssertEqual(reports.load(ordering: .relaxed), 0, "never more than one waited")
        // Eight (64 / 8) waiting while the only worker is held.
        let gate = ExchangePipelineSchedulingTests.FirstBatchGate(pipeline)
        pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=held")))
        XCTAssertEqual(gate.stalled.wait(timeout: .now() + 10), .success)
        for i in 0..<8 { pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?m=\(i)"))) }
        gate.release.signal()
        waitUntilProcessed(29)
        XCTAssertEqual(reports.load(ordering: .relaxed), 1)
        // Once only, however often it falls behind again.
        let again = ExchangePipelineSchedulingTests.FirstBatchGate(pipeline)
        pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=held2")))
        XCTAssertEqual(again.stalled.wait(timeout: .now() + 10), .success)
        for i in 0..<16 { pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?k=\(i)"))) }
        again.release.signal()
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(reports.load(ordering: .relaxed), 1)
        XCTAssertEqual(pipeline.processed, 46)
        XCTAssertEqual(pipeline.dropped, 0)
    }

    func testAFullWriterQueueIsABacklogToo() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let stall = DispatchSemaphore(value: 0)
        let stalling = Atomic<Bool>(true)
        // The writer's first write blocks, so its queue (8 records) fills behind it.
        let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false, queueCapacity: 8),
                                   faults: { operation, _ in
                                       if operation == .write && stalling.load(ordering: .relaxed) { stall.wait() }
                                       return nil
                                   })
        let pipeline = ExchangePipeline(processor: RecordFixture.processor(), writer: writer, workers: 1)
        let reports = Atomic<Int>(0)
        pipeline.onFirstBacklog { reports.add(1, ordering: .relaxed) }
        let deadline = Date(timeIntervalSinceNow: 10)
        var i = 0
        while reports.load(ordering: .relaxed) == 0 && Date() < deadline {
            pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)")))
            i += 1
            // One at a time: each handed to the writer before the next comes.
            _ = waitUntil { pipeline.processed >= i || reports.load(ordering: .relaxed) > 0 }
        }
        XCTAssertEqual(reports.load(ordering: .relaxed), 1, "after \(i) exchanges")
        stalling.store(false, ordering: .relaxed)
        stall.signal()
        pipeline.drain()
        writer.flushAndStop()
    }
}
