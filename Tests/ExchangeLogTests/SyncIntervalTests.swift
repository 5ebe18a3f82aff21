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

    /// The path of every fsync the writer and its file make.
    private final class SyncRecorder: @unchecked Sendable {
        private let lock = NSLock()
        private var synced: [String] = []
        var paths: [String] { lock.withLock { synced } }
        var injector: LogFaultInjector {
            { [self] operation, path in
                if operation == .sync { lock.withLock { synced.append(path) } }
                return nil
            }
        }
    }

    private func waitUntil(_ condition: () -> Bool, within seconds: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    func testByDefaultNothingIsSyncedUntilTheFileCloses() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 4096, rotateInterval: .never, compress: false)
        XCTAssertEqual(settings.syncInterval, 0)
        let syncs = SyncRecorder()
        let writer = try LogWriter(settings: settings, faults: syncs.injector)
        for n in 0..<300 { XCTAssertTrue(writer.submit(LogTestFiles.record(n))) }
        XCTAssertTrue(waitUntil { writer.stats.written == 300 })
        XCTAssertGreaterThanOrEqual(writer.stats.rotations, 3)
        // Longer than the old fixed 1 s period: no timer sync comes either.
        Thread.sleep(forTimeInterval: 1.3)
        // The directory is still synced after each rename (metadata only, so cheap).
        let fileSyncs = syncs.paths.filter { $0 != directory.path }
        XCTAssertEqual(fileSyncs, [], "an fsync of a file while running, rotations included")
        writer.flushAndStop()
        XCTAssertTrue(syncs.paths.contains(directory.path + "/tapwire.jsonl"), "closing must fsync: \(syncs.paths)")
    }

    func testAnIntervalSyncsWhileRecordsArrive() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 1 << 20, rotateInterval: .never, compress: false,
                                   syncInterval: 0.05)
        let syncs = SyncRecorder()
        let writer = try LogWriter(settings: settings, faults: syncs.injector)
        defer { writer.flushAndStop() }
        XCTAssertTrue(writer.submit(LogTestFiles.record(0)))
        // No further record and no flush: only the interval brings this sync.
        XCTAssertTrue(waitUntil { syncs.paths.contains(self.directory.path + "/tapwire.jsonl") }, "no periodic fsync")
    }

    func testAnIntervalAlsoSyncsBeforeEachRotation() throws {
        // An interval too long to come due in the test: every fsync seen is a rotation's.
        let settings = LogSettings(directory: directory.path, maxFileBytes: 4096, rotateInterval: .never, compress: false,
                                   syncInterval: 3600)
        let syncs = SyncRecorder()
        let writer = try LogWriter(settings: settings, faults: syncs.injector)
        defer { writer.flushAndStop() }
        for n in 0..<300 { XCTAssertTrue(writer.submit(LogTestFiles.record(n))) }
        XCTAssertTrue(waitUntil { writer.stats.written == 300 })
        let rotations = writer.stats.rotations
        XCTAssertGreaterThanOrEqual(rotations, 3)
        let fileSyncs = syncs.paths.filter { $0 == self.directory.path + "/tapwire.jsonl" }.count
        XCTAssertEqual(fileSyncs, rotations, "\(syncs.paths)")
    }
}
