import Foundation
import XCTest
@testable import ExchangeLog

final class LossAccountingTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Holds the writer inside its first write() until the test opens the gate.
    final class WriteGate: @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var held = false

        var injector: LogFaultInjector {
            { [self] operation, _ in
                guard operation == .write else { return nil }
                let first = lock.withLock { () -> Bool in
                    defer { held = true }
                    return !held
                }
                if first {
                    entered.signal()
                    gate.wait()
                }
                return nil
            }
        }
    }

    func testQueueOverflowRefusesWithoutBlockingAndReportsTheCountBeforeTheNextRecords() throws {
        let gate = WriteGate()
        let clock = ManualClock(1_796_206_272.5)
        let settings = LogSettings(directory: directory.path, compress: false, queueCapacity: 4)
        let writer = try LogWriter(settings: settings, clock: clock.clock, faults: gate.injector)

        XCTAssertTrue(writer.submit(LogTestFiles.record(0)))
        XCTAssertEqual(gate.entered.wait(timeout: .now() + 30), .success)
        for n in 1...4 { XCTAssertTrue(writer.submit(LogTestFiles.record(n))) }
        for n in 5...7 { XCTAssertFalse(writer.submit(LogTestFiles.record(n))) }
        XCTAssertEqual(writer.stats.lost, 3)
        XCTAssertEqual(writer.stats.queueDepth, 5, "4 queued and the one whose write is stalled")
        gate.gate.signal()
        writer.flushAndStop()

        let lines = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(lines.count, 6)
        XCTAssertEqual(LogTestFiles.recordNumber(lines[0]), 0)
        XCTAssertEqual(String(lines[1]),
                       #"{"kind":"loss","lost":3,"time":"2026-12-02T10:11:12.500000Z","reason":"queue full"}"#)
        XCTAssertEqual(lines.dropFirst(2).compactMap(LogTestFiles.recordNumber), [1, 2, 3, 4])
        let stats = writer.stats
        XCTAssertEqual(stats.written, 5)
        XCTAssertEqual(stats.lost, 3)
    }

    func testFailedWritesAreCountedAndReportedOnceWritingWorksAgain() throws {
        let faults = FaultSwitch()
        let settings = LogSettings(directory: directory.path, compress: false)
        let writer = try LogWriter(settings: settings, faults: faults.injector)
        writer.submit(LogTestFiles.record(0))
        writer.flush()

        faults.fail([.write, .open, .mkdir], with: ENOSPC)
        for n in 1...10 { XCTAssertTrue(writer.submit(LogTestFiles.record(n)), "submit must not fail on I/O errors") }
        writer.flush()
        var stats = writer.stats
        XCTAssertEqual(stats.lost, 10)
        XCTAssertEqual(stats.written, 1)
        XCTAssertGreaterThanOrEqual(stats.ioErrors, 1)
        XCTAssertEqual(stats.lastError?.contains("No space left on device"), true, stats.lastError ?? "nil")
        XCTAssertEqual(stats.lostSinceLastReport, 10)

        faults.clear()
        writer.submit(LogTestFiles.record(11))
        writer.submit(LogTestFiles.record(12))
        writer.flushAndStop()

        let lines = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(lines.count, 4)
        XCTAssertEqual(LogTestFiles.recordNumber(lines[0]), 0)
        XCTAssertEqual(LogTestFiles.lossCount(lines[1]), 10)
        // Later batches may fail earlier, at mkdir/open; the first failure was the write.
        XCTAssertTrue(lines[1].contains(#""reason":"write failed: ENOSPC"#), String(lines[1]))
        XCTAssertEqual(lines.dropFirst(2).compactMap(LogTestFiles.recordNumber), [11, 12])
        stats = writer.stats
        XCTAssertEqual(stats.written, 3)
        XCTAssertEqual(stats.lost, 10)
        XCTAssertEqual(stats.lostSinceLastReport, 0)
    }

    func testLossRecordIsWrittenEvenWhenNoFurtherRecordsArrive() throws {
        let faults = FaultSwitch()
        let writer = try LogWriter(settings: LogSettings(directory: directory.path, compress: false),
                                   faults: faults.injector)
        faults.fail([.write], with: EIO)
        writer.submit(LogTestFiles.record(1))
        writer.flush()
        faults.clear()
        writer.flushAndStop()
        let lines = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(lines.count, 1)
        XCTAssertEqual(lines.first.flatMap(LogTestFiles.lossCount), 1)
        XCTAssertEqual(lines.first?.hasSuffix(#""reason":"write failed: EIO"}"#), true)
    }

    func testSubmitAfterStopIsRefusedAndCounted() throws {
        let writer = try LogWriter(settings: LogSettings(directory: directory.path, compress: false))
        writer.flushAndStop()
        XCTAssertFalse(writer.submit(LogTestFiles.record(1)))
        XCTAssertEqual(writer.stats.lost, 1)
    }

    func testStartupFailsLoudlyWhenTheDirectoryCannotBeCreated() throws {
        let blocker = directory.path + "/file"
        XCTAssertTrue(FileManager.default.createFile(atPath: blocker, contents: Data()))
        XCTAssertThrowsError(try LogWriter(settings: LogSettings(directory: blocker + "/logs"))) { error in
            XCTAssertEqual((error as? LogIOError)?.code, ENOTDIR)
        }
    }

    func testApplyMovesToANewDirectoryBetweenBatches() throws {
        let writer = try LogWriter(settings: LogSettings(directory: directory.path + "/a", compress: false))
        writer.submit(LogTestFiles.record(1))
        writer.flush()
        writer.apply(LogSettings(directory: directory.path + "/b", compress: false))
        writer.submit(LogTestFiles.record(2))
        writer.flushAndStop()
        XCTAssertEqual(try LogTestFiles.lines(directory.path + "/a/tapwire.jsonl").compactMap(LogTestFiles.recordNumber), [1])
        XCTAssertEqual(try LogTestFiles.lines(directory.path + "/b/tapwire.jsonl").compactMap(LogTestFiles.recordNumber), [2])
    }
}

final class QueueByteLimitTests: XCTestCase {
    func testByteCapacityRefusesLargeRecordsWhileTheWriterIsBusy() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let gate = LossAccountingTests.WriteGate()
        let settings = LogSettings(directory: directory.path, compress: false, queueCapacity: 100, queueByteCapacity: 150)
        let writer = try LogWriter(settings: settings, faults: gate.injector)
        XCTAssertTrue(writer.submit(LogTestFiles.record(0)))
        XCTAssertEqual(gate.entered.wait(timeout: .now() + 30), .success)
        XCTAssertTrue(writer.submit(LogTestFiles.record(1, length: 100)))
        XCTAssertFalse(writer.submit(LogTestFiles.record(2, length: 100)))
        XCTAssertTrue(writer.submit(LogTestFiles.record(3, length: 40)))
        gate.gate.signal()
        writer.flushAndStop()
        let lines = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(lines.map { LogTestFiles.recordNumber($0) ?? -(LogTestFiles.lossCount($0) ?? 99) }, [0, -1, 1, 3])
    }
}
