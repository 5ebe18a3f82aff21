import Foundation
import XCTest
@testable import ExchangeLog

/// A real ENOSPC on a 1 MiB tmpfs: partial writes must be cut back so no line is torn, and the
/// loss count must come out exact once space returns. Needs root (mount); skipped otherwise.
final class FullDiskTests: XCTestCase {
    private var directory: TemporaryDirectory!
    private var mountPoint: String?

    override func setUpWithError() throws {
        directory = try TemporaryDirectory()
        let target = directory.path + "/disk"
        XCTAssertEqual(mkdir(target, 0o755), 0)
        let status = run(["/bin/mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", target])
        guard status == 0 else {
            throw XCTSkip("cannot mount a 1 MiB tmpfs here (mount exited \(status)); full-disk test skipped")
        }
        mountPoint = target
    }

    override func tearDown() {
        if let mountPoint { _ = run(["/bin/umount", mountPoint]) }
        directory.remove()
    }

    private func run(_ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0])
        process.arguments = Array(arguments.dropFirst())
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    func testDiskFullLosesWholeRecordsOnlyAndReportsTheExactCount() throws {
        let disk = try XCTUnwrap(mountPoint)
        let settings = LogSettings(directory: disk, maxFileBytes: 64 * 1024 * 1024, rotateInterval: .never,
                                   compress: false, batchBytes: 64 * 1024)
        let writer = try LogWriter(settings: settings)
        let total = 2000
        for n in 0..<total { XCTAssertTrue(writer.submit(LogTestFiles.record(n, length: 1000))) }
        writer.flush()
        let afterLoad = writer.stats
        XCTAssertGreaterThan(afterLoad.lost, 0, "2 MB cannot fit in 1 MiB")
        XCTAssertGreaterThan(afterLoad.written, 0)
        XCTAssertEqual(afterLoad.written + afterLoad.lost, total)

        // logrotate-style: move the full file aside, reopen, then free its space.
        let aside = disk + "/full.jsonl"
        XCTAssertEqual(rename(disk + "/tapwire.jsonl", aside), 0)
        writer.reopen()
        writer.flush()
        let fullLines = try LogTestFiles.lines(aside)
        XCTAssertEqual(unlink(aside), 0)

        writer.submit(LogTestFiles.record(total, length: 1000))
        writer.flushAndStop()
        let newLines = try LogTestFiles.lines(disk + "/tapwire.jsonl")

        var records = 0
        var reportedLoss = 0
        for line in fullLines + newLines {
            if let lost = LogTestFiles.lossCount(line) {
                reportedLoss += lost
            } else if LogTestFiles.recordNumber(line) != nil {
                records += 1
            } else {
                XCTFail("torn line: \(line.prefix(60))… (\(line.count) bytes)")
            }
        }
        let stats = writer.stats
        XCTAssertEqual(records, stats.written)
        XCTAssertEqual(reportedLoss, stats.lost)
        XCTAssertEqual(stats.written + stats.lost, total + 1)
        XCTAssertEqual(newLines.last.flatMap(LogTestFiles.recordNumber), total)
        XCTAssertTrue(stats.lastError?.contains("No space left") ?? false, stats.lastError ?? "nil")
    }
}
