import CGlibcExtensions
import Foundation
import Synchronization
import XCTest
@testable import ExchangeLog

/// Rotated logs are deflated at idle priority, unless the archiver is behind.
final class IdlePriorityCompressionTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testWorkRunsOnASchedIdleThreadOneAtATime() throws {
        let thread = IdlePriorityThread(name: "tapwire-test")
        defer { thread.stop() }
        let seen = StepLog<Int32>()
        let gate = DispatchSemaphore(value: 0)
        XCTAssertTrue(thread.tryStart {
            gate.wait()
            seen.append(tapwire_current_thread_is_idle_priority())
        })
        XCTAssertFalse(thread.tryStart { seen.append(-1) }, "busy")
        XCTAssertFalse(thread.waitUntilDone(timeout: 0.01))
        gate.signal()
        XCTAssertTrue(thread.waitUntilDone(timeout: 30))
        if thread.schedulingError == EPERM { throw XCTSkip("SCHED_IDLE refused here (a seccomp filter?)") }
        XCTAssertEqual(thread.schedulingError, 0, String(cString: strerror(thread.schedulingError)))
        XCTAssertEqual(seen.values, [1], "ran once, in SCHED_IDLE")
        XCTAssertEqual(tapwire_current_thread_is_idle_priority(), 0, "the caller keeps its policy")
        thread.stop()
        XCTAssertFalse(thread.tryStart { seen.append(-1) }, "stopped")
    }

    private func makeFiles(_ names: [String]) -> (paths: [String], contents: Data) {
        let contents = Data(repeating: UInt8(ascii: "x"), count: 2 * GzipFileCompressor.stepBytes + 1024)
        let paths = names.map { directory.path + "/" + $0 }
        for path in paths { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: contents)) }
        return (paths, contents)
    }

    private func assertCompressed(_ paths: [String], _ contents: Data, file: StaticString = #filePath, line: UInt = #line) throws {
        for path in paths {
            let packed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path + ".gz")))
            XCTAssertEqual(Gzip.decompress(packed).map { Data($0) }, contents, path, file: file, line: line)
            XCTAssertFalse(FileManager.default.fileExists(atPath: path), file: file, line: line)
        }
        XCTAssertEqual(LogTestFiles.names(directory.path).filter { $0.hasSuffix(".tmp") }, [], file: file, line: line)
    }

    /// Two files a few steps long: the first is compressed while the second waits behind it,
    /// so at normal priority; the second, with nothing behind it, at idle priority.
    func testAFileWaitingBehindTurnsIdlePriorityOff() throws {
        let layout = LogFileLayout(directory: directory.path, fileName: "tapwire.jsonl")
        let (paths, contents) = makeFiles(["tapwire-20261203T000000.jsonl", "tapwire-20261203T000001.jsonl"])
        let gate = DispatchSemaphore(value: 0)
        let archiver = LogArchiver(faults: { operation, path in
            if operation == .open && path == paths[0] { gate.wait() }  // until the second is queued
            return nil
        })
        let steps = StepLog<Bool?>()
        archiver.stepHook = { idle in steps.append(idle) }
        for path in paths { archiver.enqueue(.compress(path: path, layout: layout, maxFiles: 10)) }
        gate.signal()
        archiver.waitUntilIdle()
        archiver.stop()
        XCTAssertEqual(archiver.failures, 0, archiver.lastFailure ?? "")
        // Three steps a file: two full ones, then the last kilobyte and the trailer.
        XCTAssertEqual(steps.values, [false, false, false, true, true, true])
        try assertCompressed(paths, contents)
    }

    /// An idle-priority step that does not finish (a starved thread, here one stuck in a
    /// read) is abandoned once another file is queued: the file is compressed again at normal
    /// priority, and the stuck step's output reaches no file.
    func testAStuckIdleStepIsAbandonedWhenAFileQueuesBehind() throws {
        let layout = LogFileLayout(directory: directory.path, fileName: "tapwire.jsonl")
        let (paths, contents) = makeFiles(["tapwire-20261203T000000.jsonl", "tapwire-20261203T000001.jsonl"])
        let stuck = DispatchSemaphore(value: 0), entered = DispatchSemaphore(value: 0)
        let firstRead = Atomic(true)
        let archiver = LogArchiver(faults: { operation, path in
            // The first read of the first file, on the idle thread, hangs until released.
            if operation == .read && path == paths[0] && firstRead.exchange(false, ordering: .relaxed) {
                entered.signal()
                stuck.wait()
            }
            return nil
        })
        let steps = StepLog<Bool?>()
        archiver.stepHook = { idle in steps.append(idle) }
        archiver.enqueue(.compress(path: paths[0], layout: layout, maxFiles: 10))
        XCTAssertEqual(entered.wait(timeout: .now() + 30), .success)
        archiver.enqueue(.compress(path: paths[1], layout: layout, maxFiles: 10))
        // Both done while the step stays stuck (a bounded wait, so a failure is not a hang).
        _ = waitUntil(timeout: 30) {
            paths.allSatisfy { FileManager.default.fileExists(atPath: $0 + ".gz") && !FileManager.default.fileExists(atPath: $0) }
        }
        // Abandoned, then the first file at normal priority; the idle thread is still stuck,
        // so the second file too.
        XCTAssertEqual(steps.values, [nil, false, false, false, false, false, false])
        try assertCompressed(paths, contents)
        stuck.signal()  // the abandoned step ends at its next chunk, writing nowhere visible
        archiver.waitUntilIdle()
        archiver.stop()
        XCTAssertEqual(archiver.failures, 0, archiver.lastFailure ?? "")
        try assertCompressed(paths, contents)
    }
}

private final class StepLog<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var log: [T] = []
    func append(_ value: T) { lock.withLock { log.append(value) } }
    var values: [T] { lock.withLock { log } }
}
