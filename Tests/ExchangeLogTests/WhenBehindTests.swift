@testable import ExchangeLog
import Foundation
import HTTP1
import Synchronization
import XCTest

/// `log.whenBehind`: `drop` counts what a full queue refuses; `wait` refuses nothing,
/// raises `isBehind` for the engine to hold clients, and lowers it (calling the
/// caught-up handlers) once the queue is down to half.
final class WhenBehindTests: XCTestCase {
    private func makePipeline(maxPending: Int, whenBehind: WhenBehind, queueCapacity: Int = 65_536) throws
        -> (TemporaryDirectory, LogWriter, ExchangePipeline) {
        let dir = try TemporaryDirectory()
        let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false, queueCapacity: queueCapacity))
        let pipeline = ExchangePipeline(processor: RecordFixture.processor(), writer: writer,
                                        maxPending: maxPending, whenBehind: whenBehind, workers: 1)
        return (dir, writer, pipeline)
    }

    private func accept(_ pipeline: ExchangePipeline, _ range: ClosedRange<Int>) {
        for i in range { pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)"))) }
    }

    /// A pipeline whose only worker is held inside its first batch (exchange 0) until
    /// `gate.release`, so what the test accepts next waits in the queue.
    private func stalledPipeline(maxPending: Int, whenBehind: WhenBehind) throws
        -> (TemporaryDirectory, LogWriter, ExchangePipeline, ExchangePipelineSchedulingTests.FirstBatchGate) {
        let (dir, writer, pipeline) = try makePipeline(maxPending: maxPending, whenBehind: whenBehind)
        let gate = ExchangePipelineSchedulingTests.FirstBatchGate(pipeline)
        accept(pipeline, 0...0)
        XCTAssertEqual(gate.stalled.wait(timeout: .now() + 10), .success)
        return (dir, writer, pipeline, gate)
    }

    private func numbers(_ dir: TemporaryDirectory) throws -> [Int] {
        try LogTestFiles.lines(dir.path + "/tapwire.jsonl").compactMap { line -> Int? in
            guard let r = line.range(of: "?n=") else { return nil }
            return Int(line[r.upperBound...].prefix { $0.isNumber })
        }
    }

    func testWaitQueuesPastTheBoundAndSaysItIsBehindUntilItCatchesUp() throws {
        let (dir, writer, pipeline, gate) = try stalledPipeline(maxPending: 4, whenBehind: .wait)
        defer { dir.remove() }
        let caughtUp = Atomic<Int>(0)
        pipeline.onCaughtUp { caughtUp.add(1, ordering: .relaxed) }
        accept(pipeline, 1...3)
        XCTAssertFalse(pipeline.isBehind, "behind before the bound")
        accept(pipeline, 4...10)
        XCTAssertTrue(pipeline.isBehind)
        XCTAssertEqual(pipeline.dropped, 0)
        XCTAssertEqual(caughtUp.load(ordering: .relaxed), 0)

        gate.release.signal()
        XCTAssertTrue(waitUntil { !pipeline.isBehind && caughtUp.load(ordering: .relaxed) == 1 })
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(pipeline.dropped, 0)
        XCTAssertEqual(writer.stats.lost, 0)
        XCTAssertEqual(try numbers(dir), Array(0...10))
        XCTAssertEqual(caughtUp.load(ordering: .relaxed), 1, "one handler call per time behind")
    }

    func testDropCountsWhatTheFullQueueRefusesAndIsNeverBehind() throws {
        let (dir, writer, pipeline, gate) = try stalledPipeline(maxPending: 4, whenBehind: .drop)
        defer { dir.remove() }
        accept(pipeline, 1...10)
        XCTAssertFalse(pipeline.isBehind)
        XCTAssertEqual(pipeline.dropped, 6)
        gate.release.signal()
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(try numbers(dir), Array(0...4))
        XCTAssertEqual(writer.stats.lost, 6)
    }

    func testSwitchingToDropReleasesHeldClientsAtOnce() throws {
        let (dir, writer, pipeline, gate) = try stalledPipeline(maxPending: 4, whenBehind: .wait)
        defer { dir.remove() }
        let caughtUp = Atomic<Int>(0)
        pipeline.onCaughtUp { caughtUp.add(1, ordering: .relaxed) }
        accept(pipeline, 1...6)
        XCTAssertTrue(pipeline.isBehind)
        // SIGHUP with `log.whenBehind: drop` while the worker is still stuck.
        pipeline.apply(maxPending: 4, maxPendingBytes: 256 << 20, whenBehind: .drop)
        XCTAssertFalse(pipeline.isBehind)
        XCTAssertEqual(caughtUp.load(ordering: .relaxed), 1)
        accept(pipeline, 7...7)
        XCTAssertEqual(pipeline.dropped, 1, "drop applies to the next exchange")
        gate.release.signal()
        pipeline.drain()
        writer.flushAndStop()
        XCTAssertEqual(try numbers(dir), Array(0...6))
    }

    func testStoppingLowersBehind() throws {
        let (dir, writer, pipeline, gate) = try stalledPipeline(maxPending: 2, whenBehind: .wait)
        defer { dir.remove() }
        accept(pipeline, 1...4)
        XCTAssertTrue(pipeline.isBehind)
        gate.release.signal()
        pipeline.drain()
        XCTAssertFalse(pipeline.isBehind)
        writer.flushAndStop()
        XCTAssertEqual(try numbers(dir), Array(0...4))
    }

    // MARK: the writer's side

    func testAWaitingSubmitGetsRoomInsteadOfLosingRecords() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let gate = LossAccountingTests.WriteGate()
        let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false, queueCapacity: 4),
                                   faults: gate.injector)
        XCTAssertTrue(writer.submit(LogTestFiles.record(0)))
        XCTAssertEqual(gate.entered.wait(timeout: .now() + 30), .success)
        for n in 1...4 { XCTAssertTrue(writer.submit(LogTestFiles.record(n))) }
        let submit = WaitingSubmit(writer, records: 5...6)
        XCTAssertEqual(submit.returned.wait(timeout: .now() + 0.3), .timedOut, "a waiting submit returned while the queue was full")
        gate.gate.signal()
        XCTAssertEqual(submit.returned.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(submit.accepted.load(ordering: .relaxed), 2)
        writer.flushAndStop()
        XCTAssertEqual(writer.stats.lost, 0)
        XCTAssertEqual(try LogTestFiles.lines(dir.path + "/tapwire.jsonl").compactMap(LogTestFiles.recordNumber), Array(0...6))
    }

    func testABatchLargerThanTheWholeQueueIsQueuedInParts() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false, queueCapacity: 16))
        // A worker's batch of 256 records against a queue of 16 (log.queueCapacity's minimum).
        let batch = RecordBatch(lines: (0..<256).map { LogTestFiles.record($0) })
        XCTAssertEqual(writer.submit(batch, waitingForRoom: true), 256)
        writer.flushAndStop()
        XCTAssertEqual(writer.stats.lost, 0)
        XCTAssertEqual(try LogTestFiles.lines(dir.path + "/tapwire.jsonl").compactMap(LogTestFiles.recordNumber), Array(0..<256))
    }

    /// The writer's last write failed and it is now stuck in the next one: a waiting
    /// submit must not wait for it (the records are counted lost), or a failing disk
    /// would hold traffic.
    func testAWaitingSubmitDoesNotWaitOnAFailingDisk() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let injector = FailThenStall()
        let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false, queueCapacity: 4),
                                   faults: injector.injector)
        XCTAssertTrue(writer.submit(LogTestFiles.record(0)))
        XCTAssertTrue(waitUntil { writer.stats.ioErrors > 0 }, "the first write did not fail")
        XCTAssertTrue(writer.submit(LogTestFiles.record(1)))
        XCTAssertEqual(injector.stalled.wait(timeout: .now() + 10), .success)
        for n in 2...5 { XCTAssertTrue(writer.submit(LogTestFiles.record(n))) }
        let submit = WaitingSubmit(writer, records: 6...7)
        XCTAssertEqual(submit.returned.wait(timeout: .now() + 10), .success, "a waiting submit waited on a failing disk")
        XCTAssertEqual(submit.accepted.load(ordering: .relaxed), 0)
        injector.release.signal()
        writer.flushAndStop()
        XCTAssertGreaterThanOrEqual(writer.stats.lost, 3, "record 0 and the two refused")
    }

    /// A worker's `submit(_:waitingForRoom: true)` of `records` on a thread of its own.
    final class WaitingSubmit: Sendable {
        let returned = DispatchSemaphore(value: 0)
        /// How many were queued; -1 until it returns.
        let accepted = Atomic<Int>(-1)

        init(_ writer: LogWriter, records: ClosedRange<Int>) {
            Thread { [self] in
                accepted.store(writer.submit(RecordBatch(lines: records.map { LogTestFiles.record($0) }), waitingForRoom: true),
                               ordering: .relaxed)
                returned.signal()
            }.start()
        }
    }

    /// Fails the first write with ENOSPC, then holds the writer inside the second one.
    final class FailThenStall: @unchecked Sendable {
        let stalled = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var writes = 0

        var injector: LogFaultInjector {
            { [self] operation, _ in
                guard operation == .write else { return nil }
                let n = lock.withLock { () -> Int in writes += 1; return writes }
                if n == 1 { return ENOSPC }
                if n == 2 { stalled.signal(); release.wait() }
                return nil
            }
        }
    }
}
