import Foundation
import XCTest
@testable import ExchangeLog

/// Prints figures for the report; runs only with EXCHANGELOG_MEASURE=1 and asserts only
/// correctness (no timing assertions).
final class ThroughputMeasurementTests: XCTestCase {
    func testMeasureWriterAndCompressorThroughput() throws {
        guard ProcessInfo.processInfo.environment["EXCHANGELOG_MEASURE"] == "1" else {
            throw XCTSkip("set EXCHANGELOG_MEASURE=1 to measure")
        }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let settings = LogSettings(directory: directory.path, maxFileBytes: 1 << 30, rotateInterval: .never,
                                   compress: false, queueCapacity: 1 << 20)
        let writer = try LogWriter(settings: settings)
        let perThread = 50_000
        let line = LogTestFiles.record(0, length: 400)
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<perThread { writer.submit(line) }
        }
        let submitted = Date()
        writer.flushAndStop()
        let done = Date()
        let stats = writer.stats
        XCTAssertEqual(stats.written + stats.lost, 4 * perThread)
        let bytes = Double(stats.written * 401)
        print("MEASURE writer: \(stats.written) records (\(stats.lost) lost) in \(done.timeIntervalSince(start))s;",
              "submit phase \(submitted.timeIntervalSince(start))s;",
              "\(Int(Double(stats.written) / done.timeIntervalSince(start))) records/s,",
              "\(Int(bytes / done.timeIntervalSince(start) / 1_048_576)) MiB/s")

        let compressStart = Date()
        try Gzip.compressFile(directory.path + "/tapwire.jsonl", to: directory.path + "/copy.gz", fileSystem: LogFileSystem())
        let seconds = Date().timeIntervalSince(compressStart)
        var status = stat()
        stat(directory.path + "/copy.gz", &status)
        print("MEASURE gzip: \(Int(bytes / 1_048_576)) MiB in \(seconds)s (\(Int(bytes / seconds / 1_048_576)) MiB/s), ratio",
              Double(status.st_size) / bytes)
    }
}
