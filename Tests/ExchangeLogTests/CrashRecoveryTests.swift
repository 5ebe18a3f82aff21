import Foundation
import XCTest
@testable import ExchangeLog

final class CrashRecoveryTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    private func create(_ name: String, _ bytes: [UInt8]) {
        XCTAssertTrue(FileManager.default.createFile(atPath: directory.path + "/" + name, contents: Data(bytes)))
    }

    private func lines(_ numbers: ClosedRange<Int>) -> [UInt8] {
        numbers.flatMap { LogTestFiles.record($0) + [10] }
    }

    func testLeftoversAreCompressedStaleTemporariesRemovedAndFinishedOnesCleanedUp() throws {
        create("tapwire-20260101T000000.jsonl", lines(1...3))                 // rotated, never compressed
        create("tapwire-20260101T010000.jsonl.gz.tmp", Array("half a gzip".utf8))  // compression interrupted
        create("tapwire-20260101T020000.jsonl", lines(4...5))                 // crashed after .gz rename
        let twin = directory.path + "/tapwire-20260101T020000.jsonl"
        let gzipped = try gzip(lines(4...5))
        create("tapwire-20260101T020000.jsonl.gz", gzipped)
        create("notes.txt", Array("keep me\n".utf8))

        let writer = try LogWriter(settings: LogSettings(directory: directory.path, compress: true))
        writer.flushAndStop()

        XCTAssertEqual(LogTestFiles.names(directory.path), [
            "notes.txt", "tapwire-20260101T000000.jsonl.gz", "tapwire-20260101T020000.jsonl.gz", "tapwire.jsonl",
        ])
        XCTAssertFalse(FileManager.default.fileExists(atPath: twin))
        let first = try LogTestFiles.lines(directory.path + "/tapwire-20260101T000000.jsonl.gz")
        XCTAssertEqual(first.compactMap(LogTestFiles.recordNumber), [1, 2, 3])
        let second = try LogTestFiles.lines(directory.path + "/tapwire-20260101T020000.jsonl.gz")
        XCTAssertEqual(second.compactMap(LogTestFiles.recordNumber), [4, 5])
    }

    /// A second writer on a log another one holds (a second `tapwire run` on the live
    /// config) is refused before its recovery can touch the first one's files.
    func testASecondWriterOnTheSameLogIsRefusedBeforeRecovery() throws {
        let settings = LogSettings(directory: directory.path, compress: true)
        let first = try LogWriter(settings: settings)
        // The first writer's own start-up recovery runs on its archiver: done before the
        // file appears, or it removes it itself (seen under the address sanitizer).
        first.waitForArchiving()
        create("tapwire-20260101T000000.jsonl.gz.tmp", Array("the first one's compression".utf8))
        XCTAssertThrowsError(try LogWriter(settings: settings)) { error in
            XCTAssertEqual((error as? LogIOError)?.operation, .lock)
            XCTAssertTrue("\(error)".contains("another tapwire process writes this log"), "\(error)")
        }
        XCTAssertThrowsError(try RotatingFile.checkCanOpen(settings), "SIGHUP's check of a new location")
        XCTAssertTrue(FileManager.default.fileExists(atPath: directory.path + "/tapwire-20260101T000000.jsonl.gz.tmp"),
                      "the refused writer's recovery deleted the first one's temporary file")
        // Another file name in the same directory is another log.
        XCTAssertNoThrow(try LogWriter(settings: LogSettings(directory: directory.path, fileName: "other.jsonl")).flushAndStop())
        // SIGHUP to the same directory spelled another way is no conflict with oneself.
        let alias = directory.path + "-alias"
        XCTAssertNoThrow(try FileManager.default.createSymbolicLink(atPath: alias, withDestinationPath: directory.path))
        defer { try? FileManager.default.removeItem(atPath: alias) }
        let aliased = LogSettings(directory: alias, compress: true)
        XCTAssertTrue(first.holdsLock(for: aliased))
        XCTAssertNoThrow(try RotatingFile.checkCanOpen(aliased, lockHeld: first.holdsLock(for: aliased)))
        first.apply(aliased)
        first.submit(LogTestFiles.record(1))
        first.flush()
        XCTAssertEqual(first.stats.written, 1)
        XCTAssertEqual(first.stats.ioErrors, 0, first.stats.lastError ?? "")
        XCTAssertThrowsError(try LogWriter(settings: settings), "the lock is still held after the switch")
        first.flushAndStop()
        XCTAssertNoThrow(try LogWriter(settings: settings).flushAndStop(), "the lock goes with the writer")
    }

    func testWithCompressionOffLeftoversStayPlain() throws {
        create("tapwire-20260101T000000.jsonl", lines(1...2))
        create("tapwire-20260101T000000.jsonl.gz.tmp", Array("junk".utf8))
        let writer = try LogWriter(settings: LogSettings(directory: directory.path, compress: false))
        writer.flushAndStop()
        XCTAssertEqual(LogTestFiles.names(directory.path), ["tapwire-20260101T000000.jsonl", "tapwire.jsonl"])
    }

    func testRecoveryAppliesRetention() throws {
        for hour in 0..<5 { create("tapwire-20260101T0\(hour)0000.jsonl", lines(hour...hour)) }
        let writer = try LogWriter(settings: LogSettings(directory: directory.path, maxFiles: 2, compress: true))
        writer.flushAndStop()
        XCTAssertEqual(LogTestFiles.names(directory.path),
                       ["tapwire-20260101T030000.jsonl.gz", "tapwire-20260101T040000.jsonl.gz", "tapwire.jsonl"])
    }

    func testTornLastLineOfTheActiveFileDoesNotSwallowTheNextRecord() throws {
        create("tapwire.jsonl", LogTestFiles.record(1) + [10] + Array(#"{"n":2,"pa"#.utf8))
        let writer = try LogWriter(settings: LogSettings(directory: directory.path, compress: false))
        writer.submit(LogTestFiles.record(3))
        writer.flushAndStop()
        let lines = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(lines.map(LogTestFiles.recordNumber), [1, nil, 3])
    }

    /// Independent of the code under test: compresses with the gzip tool.
    private func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let path = directory.path + "/scratch.gz"
        defer { unlink(path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "gzip -c > '\(path)'"]
        let input = Pipe()
        process.standardInput = input
        try process.run()
        input.fileHandleForWriting.write(Data(bytes))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        return try LogTestFiles.bytes(path)
    }
}
