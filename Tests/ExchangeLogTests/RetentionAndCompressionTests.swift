import Foundation
import XCTest
@testable import ExchangeLog

final class RetentionTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testKeepsTheNewestMaxFilesPlainRotations() throws {
        let clock = ManualClock(1_796_206_272)  // every rotation in the same second: -1, -2 … suffixes
        let settings = LogSettings(directory: directory.path, maxFileBytes: 100, maxFiles: 3,
                                   rotateInterval: .never, compress: false)
        let writer = try LogWriter(settings: settings, clock: clock.clock)
        for n in 0..<8 { writer.submit(LogTestFiles.record(n, length: 60)) }
        writer.flushAndStop()

        XCTAssertEqual(LogTestFiles.names(directory.path), [
            "tapwire-20261202T101112-4.jsonl", "tapwire-20261202T101112-5.jsonl",
            "tapwire-20261202T101112-6.jsonl", "tapwire.jsonl",
        ])
        let layout = LogFileLayout(settings: settings)
        let contents = try layout.allPathsOldestFirst().map { try LogTestFiles.lines($0).compactMap(LogTestFiles.recordNumber) }
        XCTAssertEqual(contents, [[4], [5], [6], [7]])
        XCTAssertEqual(writer.stats.rotations, 7)
    }

    func testKeepsTheNewestMaxFilesCompressedRotations() throws {
        let clock = ManualClock(1_796_206_272)
        let settings = LogSettings(directory: directory.path, maxFileBytes: 100, maxFiles: 2,
                                   rotateInterval: .never, compress: true)
        let writer = try LogWriter(settings: settings, clock: clock.clock)
        for n in 0..<6 {
            clock.set(1_796_206_272 + Double(n))
            writer.submit(LogTestFiles.record(n, length: 60))
            writer.flush()
        }
        writer.flushAndStop()

        XCTAssertEqual(LogTestFiles.names(directory.path), [
            "tapwire-20261202T101116.jsonl.gz", "tapwire-20261202T101117.jsonl.gz", "tapwire.jsonl",
        ])
        let layout = LogFileLayout(settings: settings)
        let contents = try layout.allPathsOldestFirst().map { try LogTestFiles.lines($0).compactMap(LogTestFiles.recordNumber) }
        XCTAssertEqual(contents, [[3], [4], [5]])
    }

    func testRetentionLeavesUnrelatedFilesAlone() throws {
        let keep = ["notes.txt", "tapwire.jsonl.1", "tapwire-notastamp.jsonl", "other-20261202T101112.jsonl"]
        for name in keep {
            XCTAssertTrue(FileManager.default.createFile(atPath: directory.path + "/" + name, contents: Data("x\n".utf8)))
        }
        let settings = LogSettings(directory: directory.path, maxFileBytes: 100, maxFiles: 0,
                                   rotateInterval: .never, compress: false)
        let writer = try LogWriter(settings: settings)
        for n in 0..<3 { writer.submit(LogTestFiles.record(n, length: 60)) }
        writer.flushAndStop()
        XCTAssertEqual(LogTestFiles.names(directory.path), (keep + ["tapwire.jsonl"]).sorted())
    }

    func testLayoutOrdersSuffixesAfterTheirBaseName() {
        let layout = LogFileLayout(directory: "/x", fileName: "tapwire.jsonl")
        XCTAssertEqual(layout.parseRotated("tapwire-20261202T101112-12.jsonl.gz")?.suffix, 12)
        XCTAssertEqual(layout.parseRotated("tapwire-20261202T101112.jsonl.gz.tmp")?.temporary, true)
        XCTAssertNil(layout.parseRotated("tapwire-20261202X101112.jsonl"))
        XCTAssertNil(layout.parseRotated("tapwire-20261202T101112-x.jsonl"))
        XCTAssertNil(layout.parseRotated("tapwire.jsonl"))
        let names = ["tapwire-20261202T101112-1.jsonl", "tapwire-20261202T101112-10.jsonl",
                     "tapwire-20261202T101112.jsonl", "tapwire-20261202T101112-2.jsonl.gz"]
        let sorted = LogFileLayout.oldestFirst(names.compactMap(layout.parseRotated)).map(\.name)
        XCTAssertEqual(sorted, ["tapwire-20261202T101112.jsonl", "tapwire-20261202T101112-1.jsonl",
                                "tapwire-20261202T101112-2.jsonl.gz", "tapwire-20261202T101112-10.jsonl"])
    }
}

final class CompressionTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    /// Watches every unlink of a plain rotated file and checks, at that very moment, that its
    /// .gz exists and inflates to exactly the same bytes.
    final class UnlinkWitness: @unchecked Sendable {
        let lock = NSLock()
        var checks: [(name: String, complete: Bool)] = []

        var injector: LogFaultInjector {
            { [self] operation, path in
                guard operation == .unlink, path.hasSuffix(".jsonl"),
                      !path.hasSuffix("/tapwire.jsonl") else { return nil }
                let plain = try? LogTestFiles.bytes(path)
                let gz = (try? LogTestFiles.bytes(path + ".gz")).flatMap(Gzip.decompress)
                let complete = plain != nil && gz == plain
                lock.withLock { checks.append((String(path.split(separator: "/").last ?? ""), complete)) }
                return nil
            }
        }
    }

    func testPlainFileIsRemovedOnlyAfterACompleteGzipExists() throws {
        let witness = UnlinkWitness()
        let settings = LogSettings(directory: directory.path, maxFileBytes: 4096, maxFiles: 100,
                                   rotateInterval: .never, compress: true)
        let writer = try LogWriter(settings: settings, faults: witness.injector)
        for n in 0..<300 { writer.submit(LogTestFiles.record(n, length: 100)) }
        writer.flushAndStop()

        let checks = witness.lock.withLock { witness.checks }
        let names = LogTestFiles.names(directory.path)
        let gzNames = names.filter { $0.hasSuffix(".gz") }
        XCTAssertGreaterThanOrEqual(checks.count, 5)
        XCTAssertEqual(checks.count, gzNames.count)
        for check in checks { XCTAssertTrue(check.complete, "\(check.name) unlinked before its .gz was complete") }
        XCTAssertEqual(names.filter { $0.hasSuffix(".tmp") || ($0.hasPrefix("tapwire-") && $0.hasSuffix(".jsonl")) }, [])

        var numbers: [Int] = []
        for path in LogFileLayout(settings: settings).allPathsOldestFirst() {
            numbers += try LogTestFiles.lines(path).compactMap(LogTestFiles.recordNumber)
        }
        XCTAssertTrue(numbers == Array(0..<300), "records missing or out of order: \(numbers.count)")
    }

    func testGzipOutputIsReadableByTheGzipTool() throws {
        let gzipTool = ["/usr/bin/gzip", "/bin/gzip"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let gzipTool else { throw XCTSkip("no gzip binary to cross-check with") }
        let settings = LogSettings(directory: directory.path, maxFileBytes: 300_000, maxFiles: 10,
                                   rotateInterval: .never, compress: true)
        let writer = try LogWriter(settings: settings)
        // More than one 128 KiB compression chunk of input.
        for n in 0..<4000 { writer.submit(LogTestFiles.record(n, length: 100)) }
        writer.flushAndStop()
        let gz = LogTestFiles.names(directory.path).filter { $0.hasSuffix(".gz") }
        XCTAssertEqual(gz.count, 1)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: gzipTool)
        process.arguments = ["-dc", directory.path + "/" + (gz.first ?? "")]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        let lines = String(decoding: output, as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(lines.count, 2970)  // floor(300000 / 101) records per file
        XCTAssertTrue(lines.compactMap(LogTestFiles.recordNumber) == Array(0..<2970), "records out of order or missing")
    }

    /// A recovery queued before a rotation leaves the new file to its own compress job:
    /// compressing it first as well would count a failing compression twice (the test below
    /// sees that when the archiver thread starts late, as under the sanitizers).
    func testRecoveryLeavesAFileWithAQueuedCompressJobToThatJob() throws {
        let layout = LogFileLayout(directory: directory.path, fileName: "tapwire.jsonl")
        let first = directory.path + "/tapwire-20261203T000000.jsonl"
        let second = directory.path + "/tapwire-20261203T000001.jsonl"
        for path in [first, second] { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("{}\n".utf8))) }
        let gate = DispatchSemaphore(value: 0)
        let archiver = LogArchiver(faults: { operation, path in
            // The first job stalls until the others are queued; the second file's .gz never lands.
            if operation == .open && path == first { gate.wait() }
            return operation == .rename && path == second + ".gz.tmp" ? ENOSPC : nil
        })
        archiver.enqueue(.compress(path: first, layout: layout, maxFiles: 10))
        archiver.enqueue(.recover(layout: layout, compress: true, maxFiles: 10))
        archiver.enqueue(.compress(path: second, layout: layout, maxFiles: 10))
        gate.signal()
        archiver.waitUntilIdle()
        archiver.stop()
        XCTAssertEqual(archiver.failures, 1, archiver.lastFailure ?? "")
        XCTAssertTrue(FileManager.default.fileExists(atPath: first + ".gz"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: second), "kept for a later retry")
    }

    /// Rotation claims the new name before renaming to it and enqueues the compress job
    /// after: a recovery that lists the directory in between leaves the file to that job.
    func testRecoveryLeavesAClaimedFileToItsComingJob() throws {
        let layout = LogFileLayout(directory: directory.path, fileName: "tapwire.jsonl")
        let claimed = directory.path + "/tapwire-20261203T000002.jsonl"
        let released = directory.path + "/tapwire-20261203T000003.jsonl"
        let archiver = LogArchiver()
        archiver.claim(claimed)
        archiver.claim(released)
        archiver.release(released)  // its rename failed; yet a file of that name is there
        for path in [claimed, released] { XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("{}\n".utf8))) }
        archiver.enqueue(.recover(layout: layout, compress: true, maxFiles: 10))
        archiver.waitUntilIdle()
        XCTAssertTrue(FileManager.default.fileExists(atPath: claimed), "left to its job")
        XCTAssertFalse(FileManager.default.fileExists(atPath: claimed + ".gz"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: released + ".gz"), "an unclaimed file is recovered")
        archiver.enqueue(.compress(path: claimed, layout: layout, maxFiles: 10))
        archiver.waitUntilIdle()
        archiver.stop()
        XCTAssertTrue(FileManager.default.fileExists(atPath: claimed + ".gz"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: claimed))
        XCTAssertEqual(archiver.failures, 0, archiver.lastFailure ?? "")
    }

    func testFailedCompressionKeepsThePlainFileAndNoPartialGzip() throws {
        let faults = FaultSwitch()
        faults.fail([.rename], with: ENOSPC)  // the .gz.tmp → .gz step; rotation itself must still work
        let settings = LogSettings(directory: directory.path, maxFileBytes: 100, maxFiles: 10,
                                   rotateInterval: .never, compress: true)
        let injector = faults.injector
        let writer = try LogWriter(settings: settings, faults: { operation, path in
            path.hasSuffix(".gz.tmp") ? injector(operation, path) : nil
        })
        writer.submit(LogTestFiles.record(1, length: 60))
        writer.submit(LogTestFiles.record(2, length: 60))
        writer.flushAndStop()

        let names = LogTestFiles.names(directory.path)
        XCTAssertEqual(names.count, 2, "\(names)")
        XCTAssertEqual(names.filter { $0.hasSuffix(".gz") || $0.hasSuffix(".tmp") }, [])
        let rotated = try XCTUnwrap(names.first { $0.hasPrefix("tapwire-") })
        XCTAssertEqual(try LogTestFiles.lines(directory.path + "/" + rotated).compactMap(LogTestFiles.recordNumber), [1])
        XCTAssertEqual(writer.stats.archiveFailures, 1)
    }
}
