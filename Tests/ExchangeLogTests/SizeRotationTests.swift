import Foundation
import XCTest
@testable import ExchangeLog

final class SizeRotationTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// 3,000 records from four threads across many size rotations, with a logrotate-style
    /// rename + reopen in the middle: every record lands exactly once, every line whole.
    func testConcurrentLoadAcrossRotationsAndExternalRenameLosesNothing() throws {
        let maxFileBytes = 8192
        let settings = LogSettings(directory: directory.path, maxFileBytes: maxFileBytes, maxFiles: 1000,
                                   rotateInterval: .never, compress: true, batchBytes: 4096)
        let writer = try LogWriter(settings: settings)
        let renamedPath = directory.path + "/tapwire.jsonl.1"
        let activePath = directory.path + "/tapwire.jsonl"
        let refused = NSLock()
        var refusedCount = 0

        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for i in 0..<750 {
                let n = thread * 750 + i
                if !writer.submit(LogTestFiles.record(n, length: 40 + n % 50)) {
                    refused.withLock { refusedCount += 1 }
                }
                if thread == 0 && i == 375 {
                    // The writer's own rotation briefly leaves no active file; try again then.
                    _ = waitUntil(timeout: 1) { rename(activePath, renamedPath) == 0 || errno != ENOENT }
                    XCTAssertTrue(FileManager.default.fileExists(atPath: renamedPath))
                    writer.reopen()
                }
            }
        }
        writer.flushAndStop()

        XCTAssertEqual(refusedCount, 0)
        let stats = writer.stats
        XCTAssertEqual(stats.written, 3000)
        XCTAssertEqual(stats.lost, 0)
        XCTAssertEqual(stats.queueDepth, 0)
        XCTAssertGreaterThanOrEqual(stats.rotations, 5)

        let names = LogTestFiles.names(directory.path)
        XCTAssertFalse(names.contains { $0.hasSuffix(".tmp") }, "\(names)")
        let plainRotated = names.filter { $0.hasPrefix("tapwire-") && $0.hasSuffix(".jsonl") }
        XCTAssertEqual(plainRotated, [], "every rotated file is compressed before flushAndStop returns")
        let compressed = names.filter { $0.hasSuffix(".jsonl.gz") }
        XCTAssertGreaterThanOrEqual(compressed.count, 5)
        XCTAssertTrue(names.contains("tapwire.jsonl.1"))

        var seen = [Int](repeating: 0, count: 3000)
        for name in names {
            let lines = try LogTestFiles.lines(directory.path + "/" + name)
            if name.hasSuffix(".gz") {
                let size = lines.reduce(0) { $0 + $1.utf8.count + 1 }
                XCTAssertLessThanOrEqual(size, maxFileBytes, "\(name) exceeds maxFileBytes")
            }
            for line in lines {
                guard let n = LogTestFiles.recordNumber(line), n >= 0, n < 3000 else {
                    XCTFail("torn or foreign line in \(name): \(line.prefix(80))")
                    continue
                }
                seen[n] += 1
            }
        }
        XCTAssertEqual(seen.filter { $0 == 0 }.count, 0, "missing records")
        XCTAssertEqual(seen.filter { $0 > 1 }.count, 0, "duplicated records")
    }

    func testRotatesBeforeABatchThatWouldOverflowAndNamesFilesByUTCTime() throws {
        let clock = ManualClock(1_796_206_272.25)  // 2026-12-02T10:11:12Z
        let settings = LogSettings(directory: directory.path, maxFileBytes: 200, maxFiles: 10,
                                   rotateInterval: .never, compress: false)
        let writer = try LogWriter(settings: settings, clock: clock.clock)
        for n in 0..<7 { writer.submit(LogTestFiles.record(n, length: 63)) }  // 64 bytes a line
        writer.flushAndStop()

        // Three lines (192 bytes) fit in 200; the fourth starts a new file.
        XCTAssertEqual(LogTestFiles.names(directory.path),
                       ["tapwire-20261202T101112-1.jsonl", "tapwire-20261202T101112.jsonl", "tapwire.jsonl"])
        let first = try LogTestFiles.lines(directory.path + "/tapwire-20261202T101112.jsonl")
        let second = try LogTestFiles.lines(directory.path + "/tapwire-20261202T101112-1.jsonl")
        let active = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(first.compactMap(LogTestFiles.recordNumber), [0, 1, 2])
        XCTAssertEqual(second.compactMap(LogTestFiles.recordNumber), [3, 4, 5])
        XCTAssertEqual(active.compactMap(LogTestFiles.recordNumber), [6])
        XCTAssertEqual(writer.stats.rotations, 2)
    }

    func testRecordLargerThanTheLimitGoesWholeIntoItsOwnFile() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 100, maxFiles: 10,
                                   rotateInterval: .never, compress: false)
        let writer = try LogWriter(settings: settings)
        writer.submit(LogTestFiles.record(1, length: 30))
        writer.submit(LogTestFiles.record(2, length: 500))
        writer.submit(LogTestFiles.record(3, length: 30))
        writer.flushAndStop()

        let layout = LogFileLayout(settings: settings)
        let contents = try layout.allPathsOldestFirst().map { try LogTestFiles.lines($0).compactMap(LogTestFiles.recordNumber) }
        XCTAssertEqual(contents, [[1], [2], [3]])
    }

    func testReopenWithoutRenameKeepsAppendingToTheSameFile() throws {
        let settings = LogSettings(directory: directory.path, rotateInterval: .never, compress: false)
        let writer = try LogWriter(settings: settings)
        writer.submit(LogTestFiles.record(1))
        writer.flush()
        writer.reopen()
        writer.submit(LogTestFiles.record(2))
        writer.flushAndStop()
        XCTAssertEqual(LogTestFiles.names(directory.path), ["tapwire.jsonl"])
        let lines = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(lines.compactMap(LogTestFiles.recordNumber), [1, 2])
    }

    func testRelativeDirectoryIsCreatedUnderTheWorkingDirectory() throws {
        let previous = FileManager.default.currentDirectoryPath
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(directory.path))
        defer { _ = FileManager.default.changeCurrentDirectoryPath(previous) }
        let settings = LogSettings(directory: "nested/logs", compress: false)
        XCTAssertEqual(settings.resolvedDirectory, directory.path + "/nested/logs")
        let writer = try LogWriter(settings: settings)
        writer.submit(LogTestFiles.record(5))
        writer.flushAndStop()
        let lines = try LogTestFiles.lines(directory.path + "/nested/logs/tapwire.jsonl")
        XCTAssertEqual(lines.compactMap(LogTestFiles.recordNumber), [5])
        var status = stat()
        XCTAssertEqual(stat(directory.path + "/nested/logs/tapwire.jsonl", &status), 0)
        XCTAssertEqual(status.st_mode & 0o777, 0o640 & ~currentUmask())
    }

    private func currentUmask() -> mode_t {
        let mask = umask(0)
        umask(mask)
        return mask
    }
}
