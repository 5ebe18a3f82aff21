import ExchangeLog
import Foundation
import XCTest
@testable import LogTools

final class RecordSourceTests: XCTestCase {
    private var directory: TemporaryLogDirectory!

    override func setUpWithError() throws { directory = try TemporaryLogDirectory() }
    override func tearDown() { directory.remove() }

    private var layout: LogFileLayout { LogFileLayout(directory: directory.path, fileName: "tapwire.jsonl") }

    private func records(_ numbers: ClosedRange<Int>) -> String {
        Fixture.lines(numbers.map { Fixture.http($0) })
    }

    private func numbers(_ source: RecordSource) throws -> [Int] {
        var result: [Int] = []
        try source.forEachLine { line in result.append(Fixture.number(ofLine: line) ?? -1) }
        return result
    }

    /// A follow-mode source whose waits run `steps` in order (changing the files), then stop.
    private func followed(_ steps: [() throws -> Void]) -> (RecordSource, () -> Int) {
        var remaining = steps[...]
        var waits = 0
        let source = RecordSource(layout: layout, follow: true) {
            waits += 1
            guard let step = remaining.popFirst() else { return false }
            do {
                try step()
            } catch {
                XCTFail("step failed: \(error)")
            }
            return true
        }
        return (source, { waits })
    }

    func testReadsRotatedPlainAndCompressedFilesThenTheActiveFileOldestFirst() throws {
        directory.write("tapwire-20261201T000000.jsonl", records(1...3))
        try directory.writeGzip("tapwire-20261201T120000.jsonl.gz", records(4...6))
        directory.write("tapwire-20261201T120000-1.jsonl", records(7...7))
        try directory.writeGzip("tapwire-20261201T120000-2.jsonl.gz", records(8...8))
        directory.write("tapwire.jsonl", records(9...10))
        directory.write("notes.txt", "not a log\n")
        directory.write("tapwire-20261201T130000.jsonl.gz.tmp", "half a gzip")

        let source = RecordSource(directory: directory.path, fileName: "tapwire.jsonl")
        XCTAssertEqual(try numbers(source), Array(1...10))
        XCTAssertNil(try source.nextLine(), "a finished source stays finished")
    }

    /// A rotated file that retention deletes between the listing and its turn is skipped,
    /// so `har` never stops there with an unterminated document.
    func testARotatedFileDeletedBeforeItsTurnIsSkipped() throws {
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", records(1...1))
        directory.write("tapwire-20261201T000001.jsonl", records(2...2))
        directory.write("tapwire.jsonl", records(3...3))
        let source = RecordSource(directory: directory.path)
        let first = try XCTUnwrap(source.nextLine())
        XCTAssertTrue(String(decoding: first, as: UTF8.self).contains("000001"), String(decoding: first, as: UTF8.self))
        XCTAssertEqual(unlink(directory.path + "/tapwire-20261201T000001.jsonl"), 0)
        var rest: [String] = []
        while let line = try source.nextLine() { rest.append(String(decoding: line, as: UTF8.self)) }
        XCTAssertEqual(rest.count, 1, "\(rest)")
        XCTAssertTrue(rest.first?.contains("000003") ?? false, "\(rest)")
    }

    /// Only a missing active file means "no records yet": one that cannot be opened (here a
    /// symlink loop, since root ignores permissions) is an error naming it, not an empty log.
    func testAnActiveFileThatCannotBeOpenedIsAnError() throws {
        let active = directory.path + "/tapwire.jsonl"
        XCTAssertEqual(symlink(active, active), 0)
        XCTAssertThrowsError(try numbers(RecordSource(directory: directory.path))) { error in
            XCTAssertTrue("\(error)".contains("tapwire.jsonl"), "\(error)")
        }
        XCTAssertEqual(unlink(active), 0)
        XCTAssertEqual(try numbers(RecordSource(directory: directory.path)), [], "no active file yet: no records, no error")
    }

    func testAPartialLastLineOfTheActiveFileIsNotARecord() throws {
        directory.write("tapwire.jsonl", records(1...2) + String(Fixture.http(3).prefix(40)))
        XCTAssertEqual(try numbers(RecordSource(directory: directory.path)), [1, 2])
    }

    func testALastLineWithoutNewlineInARotatedFileIsStillARecord() throws {
        directory.write("tapwire-20261201T000000.jsonl", records(1...1) + Fixture.http(2))
        XCTAssertEqual(try numbers(RecordSource(directory: directory.path)), [1, 2])
    }

    func testLinesSpanningManyReadChunksOfALargeCompressedFileComeOutWhole() throws {
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", records(1...3000))
        directory.write("tapwire.jsonl", "")
        XCTAssertEqual(try numbers(RecordSource(directory: directory.path)), Array(1...3000))
    }

    func testConcatenatedGzipMembersAreReadInOrder() throws {
        try directory.writeGzip("a.gz", records(1...2))
        try directory.writeGzip("b.gz", records(3...4))
        let joined = try Data(contentsOf: URL(fileURLWithPath: directory.path + "/a.gz"))
            + Data(contentsOf: URL(fileURLWithPath: directory.path + "/b.gz"))
        XCTAssertTrue(FileManager.default.createFile(atPath: directory.path + "/tapwire-20261201T000000.jsonl.gz",
                                                    contents: joined))
        XCTAssertEqual(try numbers(RecordSource(directory: directory.path)), [1, 2, 3, 4])
    }

    func testACorruptCompressedFileIsAnErrorNamingIt() throws {
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", records(1...50))
        let path = directory.path + "/tapwire-20261201T000000.jsonl.gz"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes.removeLast(bytes.count / 2)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        XCTAssertThrowsError(try numbers(RecordSource(directory: directory.path))) { error in
            XCTAssertEqual((error as? LogReadError)?.path, path)
        }
    }

    func testAMissingDirectoryIsAnErrorNamingIt() {
        let missing = directory.path + "/nope"
        XCTAssertThrowsError(try RecordSource(directory: missing).nextLine()) { error in
            XCTAssertEqual((error as? LogReadError)?.path, missing)
        }
    }

    func testWithoutAnActiveFileTheRotatedFilesAreStillRead() throws {
        directory.write("tapwire-20261201T000000.jsonl", records(1...2))
        XCTAssertEqual(try numbers(RecordSource(directory: directory.path)), [1, 2])
    }

    func testFollowPicksUpEveryRecordExactlyOnceAcrossRotations() throws {
        let third = Fixture.http(3)
        directory.write("tapwire-20261201T000000.jsonl", records(1...1))
        directory.write("tapwire.jsonl", records(2...2) + String(third.prefix(30)))
        let (source, waits) = followed([
            // The writer finishes the half line and adds one more.
            { try self.directory.append("tapwire.jsonl", String(third.dropFirst(30)) + "\n" + self.records(4...4)) },
            // A record lands in the old file just before rotation; the new file starts with half a line.
            {
                try self.directory.append("tapwire.jsonl", self.records(5...5))
                try self.directory.rename("tapwire.jsonl", "tapwire-20261202T101112.jsonl")
                self.directory.write("tapwire.jsonl", self.records(6...6) + String(Fixture.http(7).prefix(10)))
            },
            { try self.directory.append("tapwire.jsonl", String(Fixture.http(7).dropFirst(10)) + "\n") },
            // Rotation with a moment where no active file exists, then compression of the old one.
            { try self.directory.rename("tapwire.jsonl", "tapwire-20261202T101112-1.jsonl") },
            {
                self.directory.write("tapwire.jsonl", "")
                try self.directory.writeGzip("tapwire-20261202T101112-1.jsonl.gz", self.records(6...7))
                try FileManager.default.removeItem(atPath: self.directory.path + "/tapwire-20261202T101112-1.jsonl")
            },
            { try self.directory.append("tapwire.jsonl", self.records(8...9)) },
        ])
        XCTAssertEqual(try numbers(source), Array(1...9))
        XCTAssertEqual(waits(), 7, "every step ran, then the stop")
    }

    func testFollowReadsFilesRotatedAwayBetweenTwoPolls() throws {
        directory.write("tapwire-20261201T000000.jsonl", records(1...1))
        directory.write("tapwire.jsonl", records(2...2))
        let (source, _) = followed([
            {
                // Three rotations before the reader looks again; one file is compressed already.
                try self.directory.append("tapwire.jsonl", self.records(3...3))
                try self.directory.rename("tapwire.jsonl", "tapwire-20261202T101112.jsonl")
                try self.directory.writeGzip("tapwire-20261202T101113.jsonl.gz", self.records(4...5))
                self.directory.write("tapwire-20261202T101114.jsonl", self.records(6...6))
                self.directory.write("tapwire.jsonl", self.records(7...7))
            },
            { try self.directory.append("tapwire.jsonl", self.records(8...8)) },
        ])
        XCTAssertEqual(try numbers(source), Array(1...8))
    }

    func testFollowRereadsAFileTruncatedInPlace() throws {
        directory.write("tapwire.jsonl", records(1...3))
        let (source, _) = followed([
            {
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: self.directory.path + "/tapwire.jsonl"))
                try handle.truncate(atOffset: 0)
                try handle.close()
            },
            { try self.directory.append("tapwire.jsonl", self.records(4...4)) },
        ])
        XCTAssertEqual(try numbers(source), [1, 2, 3, 4])
    }

    func testFollowWaitsForAnActiveFileThatDoesNotExistYet() throws {
        let (source, _) = followed([
            {},
            { self.directory.write("tapwire.jsonl", self.records(1...2)) },
        ])
        XCTAssertEqual(try numbers(source), [1, 2])
    }

    func testFollowWithThePollingWaitEndsWhenToldToStop() throws {
        directory.write("tapwire.jsonl", records(1...2))
        var asked = 0
        let source = RecordSource(directory: directory.path, follow: true, pollInterval: 0.001) {
            asked += 1
            return asked >= 2
        }
        XCTAssertEqual(try numbers(source), [1, 2])
        XCTAssertEqual(asked, 2, "asked before and after one poll")
    }
}
