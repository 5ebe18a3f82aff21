import Foundation
import XCTest
@testable import ExchangeLog

/// `log.syncInterval`: by default the writer never forces the disk while running (the
/// kernel writes back); with an interval it fsyncs the active file that often, and before
/// each rotation. Closing the file always fsyncs.
final class SyncIntervalTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Every file-system operation the writer, its file and the archiver make, in order.
    private final class OperationRecorder: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [(LogFileOperation, String)] = []
        var operations: [(LogFileOperation, String)] { lock.withLock { seen } }
        func syncs(of path: String) -> Int { operations.filter { $0.0 == .sync && $0.1 == path }.count }
        var injector: LogFaultInjector {
            { [self] operation, path in
                lock.withLock { seen.append((operation, path)) }
                return nil
            }
        }
    }

    private var activePath: String { directory.path + "/tapwire.jsonl" }

    private final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var stored = false
        var value: Bool {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }

    /// Writes 300 records of 64 bytes into 4 KiB files: several rotations.
    private func writeAcrossRotations(_ writer: LogWriter) -> Int {
        for n in 0..<300 { XCTAssertTrue(writer.submit(LogTestFiles.record(n))) }
        XCTAssertTrue(waitUntil { writer.stats.written == 300 })
        XCTAssertGreaterThanOrEqual(writer.stats.rotations, 3)
        return writer.stats.rotations
    }

    /// A failed write closes the file; what was written to it before must still be forced to
    /// disk, since shutdown only fsyncs an open file.
    func testAFailedWriteSyncsWhatTheFileAlreadyHeld() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 1 << 20, rotateInterval: .never)
        let recorder = OperationRecorder()
        let failing = Flag()
        let writer = try LogWriter(settings: settings, faults: { [injector = recorder.injector] operation, path in
            _ = injector(operation, path)
            return operation == .write && failing.value ? ENOSPC : nil
        })
        for n in 0..<5 { XCTAssertTrue(writer.submit(LogTestFiles.record(n))) }
        XCTAssertTrue(waitUntil { writer.stats.written == 5 })
        XCTAssertEqual(recorder.syncs(of: activePath), 0)
        failing.value = true
        XCTAssertTrue(writer.submit(LogTestFiles.record(5)))
        XCTAssertTrue(waitUntil { writer.stats.lost == 1 })
        XCTAssertEqual(recorder.syncs(of: activePath), 1, "the five records written before were not synced")
        writer.flushAndStop()
    }

    func testByDefaultTheActiveFileIsNotSyncedWhileRunning() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 4096, rotateInterval: .never)
        XCTAssertEqual(settings.syncInterval, 0)
        XCTAssertTrue(settings.compress)
        let recorder = OperationRecorder()
        let writer = try LogWriter(settings: settings, faults: recorder.injector)
        _ = writeAcrossRotations(writer)
        // Longer than a 1 s period: no timer sync comes either.
        Thread.sleep(forTimeInterval: 1.3)
        XCTAssertEqual(recorder.syncs(of: activePath), 0, "the active file was fsynced while running")
        writer.flushAndStop()
        XCTAssertGreaterThan(recorder.syncs(of: activePath), 0, "closing must fsync")

        // Each rotated plain file goes only after its .gz was synced.
        let operations = recorder.operations
        let unlinked = operations.enumerated().filter { $0.element.0 == .unlink && $0.element.1.hasSuffix(".jsonl") }
        XCTAssertGreaterThanOrEqual(unlinked.count, 3)
        for (index, operation) in unlinked {
            let synced = operations[..<index].contains { $0.0 == .sync && $0.1.hasPrefix(operation.1 + ".gz") }
            XCTAssertTrue(synced, "\(operation.1) deleted before its .gz was synced")
        }
    }

    func testUncompressedRotatedFilesAreSyncedWhenRotated() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 4096, rotateInterval: .never, compress: false)
        let recorder = OperationRecorder()
        let writer = try LogWriter(settings: settings, faults: recorder.injector)
        defer { writer.flushAndStop() }
        let rotations = writeAcrossRotations(writer)
        XCTAssertEqual(recorder.syncs(of: activePath), rotations, "an uncompressed file is the archive: synced at rotation")
    }

    func testAnIntervalSyncsWhileRecordsArrive() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 1 << 20, rotateInterval: .never, syncInterval: 0.05)
        let recorder = OperationRecorder()
        let writer = try LogWriter(settings: settings, faults: recorder.injector)
        defer { writer.flushAndStop() }
        XCTAssertTrue(writer.submit(LogTestFiles.record(0)))
        XCTAssertTrue(waitUntil { writer.stats.written == 1 })
        // No further record and no flush: only the writer's timer brings a new sync.
        let before = recorder.syncs(of: activePath)
        XCTAssertTrue(waitUntil { recorder.syncs(of: self.activePath) > before } || before > 0, "no periodic fsync")
        if before > 0 {
            // The write's own cycle already synced (a slow start): the timer must not sync a clean file again.
            Thread.sleep(forTimeInterval: 0.2)
            XCTAssertEqual(recorder.syncs(of: activePath), before)
        }
    }

    func testAnIntervalAlsoSyncsBeforeEachRotation() throws {
        // An interval too long to come due in the test: every fsync of the active file is a rotation's.
        let settings = LogSettings(directory: directory.path, maxFileBytes: 4096, rotateInterval: .never, syncInterval: 3600)
        let recorder = OperationRecorder()
        let writer = try LogWriter(settings: settings, faults: recorder.injector)
        defer { writer.flushAndStop() }
        let rotations = writeAcrossRotations(writer)
        XCTAssertEqual(recorder.syncs(of: activePath), rotations)
    }
}
