import Foundation
import XCTest
@testable import ExchangeLog

final class IntervalRotationTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testHourlyBoundaryRotatesBeforeTheNextRecord() throws {
        let clock = ManualClock(1_796_209_199.5)  // 2026-12-02T10:59:59.5Z
        let settings = LogSettings(directory: directory.path, rotateInterval: .hourly, compress: false)
        let writer = try LogWriter(settings: settings, clock: clock.clock)
        writer.submit(LogTestFiles.record(1))
        writer.flush()
        clock.set(1_796_209_200.25)  // 11:00:00.25Z
        writer.submit(LogTestFiles.record(2))
        writer.flushAndStop()

        XCTAssertEqual(LogTestFiles.names(directory.path), ["tapwire-20261202T110000.jsonl", "tapwire.jsonl"])
        let rotated = try LogTestFiles.lines(directory.path + "/tapwire-20261202T110000.jsonl")
        let active = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        XCTAssertEqual(rotated.compactMap(LogTestFiles.recordNumber), [1])
        XCTAssertEqual(active.compactMap(LogTestFiles.recordNumber), [2])
        XCTAssertEqual(writer.stats.rotations, 1)
    }

    func testNoRotationWithinOnePeriod() throws {
        let clock = ManualClock(1_796_169_600)  // 2026-12-02T00:00:00Z
        let settings = LogSettings(directory: directory.path, rotateInterval: .daily, compress: false)
        let writer = try LogWriter(settings: settings, clock: clock.clock)
        writer.submit(LogTestFiles.record(1))
        writer.flush()
        clock.set(1_796_169_600 + 86399)  // 23:59:59Z the same day
        writer.submit(LogTestFiles.record(2))
        writer.flushAndStop()
        XCTAssertEqual(LogTestFiles.names(directory.path), ["tapwire.jsonl"])
        XCTAssertEqual(writer.stats.rotations, 0)
    }

    func testSecondsIntervalRotatesOncePerPeriodEvenAfterALongGap() throws {
        let clock = ManualClock(1000.5)
        let settings = LogSettings(directory: directory.path, rotateInterval: .seconds(10), compress: false)
        let writer = try LogWriter(settings: settings, clock: clock.clock)
        writer.submit(LogTestFiles.record(1))
        writer.flush()
        clock.set(1010.0)
        writer.submit(LogTestFiles.record(2))
        writer.submit(LogTestFiles.record(3))
        writer.flush()
        clock.set(5000.0)
        writer.submit(LogTestFiles.record(4))
        writer.flushAndStop()

        let layout = LogFileLayout(settings: settings)
        let contents = try layout.allPathsOldestFirst().map { try LogTestFiles.lines($0).compactMap(LogTestFiles.recordNumber) }
        XCTAssertEqual(contents, [[1], [2, 3], [4]])
        XCTAssertEqual(layout.rotatedFiles().map(\.name),
                       ["tapwire-19700101T001650.jsonl", "tapwire-19700101T012320.jsonl"])
    }

    func testAnOldActiveFileFromBeforeARestartRotatesOnTheFirstWrite() throws {
        let active = directory.path + "/tapwire.jsonl"
        XCTAssertTrue(FileManager.default.createFile(atPath: active, contents: Data(LogTestFiles.record(1) + [10])))
        // Last written two days ago.
        var times = [timespec(tv_sec: time(nil) - 2 * 86400, tv_nsec: 0), timespec(tv_sec: time(nil) - 2 * 86400, tv_nsec: 0)]
        XCTAssertEqual(utimensat(AT_FDCWD, active, &times, 0), 0)

        let settings = LogSettings(directory: directory.path, rotateInterval: .daily, compress: false)
        let writer = try LogWriter(settings: settings)
        writer.submit(LogTestFiles.record(2))
        writer.flushAndStop()

        let layout = LogFileLayout(settings: settings)
        let contents = try layout.allPathsOldestFirst().map { try LogTestFiles.lines($0).compactMap(LogTestFiles.recordNumber) }
        XCTAssertEqual(contents, [[1], [2]])
    }

    func testConfigSpellings() {
        XCTAssertEqual(RotateInterval(configValue: "daily"), .daily)
        XCTAssertEqual(RotateInterval(configValue: "hourly"), .hourly)
        XCTAssertEqual(RotateInterval(configValue: "never"), .never)
        XCTAssertEqual(RotateInterval(configValue: "90"), .seconds(90))
        XCTAssertNil(RotateInterval(configValue: "weekly"))
        XCTAssertNil(RotateInterval(configValue: "0"))
    }
}
