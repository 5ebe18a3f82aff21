import Foundation
import XCTest
@testable import ExchangeLog

/// Workers hand the writer whole batches in one buffer; the writer splits them at line
/// boundaries for size rotation and refuses only the records that do not fit its queue.
final class RecordBatchTests: XCTestCase {
    private var directory: TemporaryDirectory!

    override func setUpWithError() throws { directory = try TemporaryDirectory() }
    override func tearDown() { directory.remove() }

    func testBatchKeepsLineEndsAndCanBeCut() {
        var batch = RecordBatch(lines: [Array("a".utf8), Array("bb".utf8)])
        batch.append { $0.append(contentsOf: Array("ccc".utf8)) }
        XCTAssertEqual(String(decoding: batch.bytes, as: UTF8.self), "a\nbb\nccc\n")
        XCTAssertEqual(batch.ends, [2, 5, 9])
        var copy = batch
        let rest = copy.splitOff(after: 1)
        XCTAssertEqual(String(decoding: copy.bytes, as: UTF8.self), "a\n")
        XCTAssertEqual(copy.ends, [2])
        XCTAssertEqual(String(decoding: rest.bytes, as: UTF8.self), "bb\nccc\n")
        XCTAssertEqual(rest.ends, [3, 7])
        XCTAssertTrue(copy.splitOff(after: 1).isEmpty)
        batch.keepFirst(2)
        XCTAssertEqual(String(decoding: batch.bytes, as: UTF8.self), "a\nbb\n")
        batch.keepFirst(0)
        XCTAssertTrue(batch.isEmpty)
        XCTAssertTrue(batch.bytes.isEmpty)
    }

    /// A worker's batch keeps the buffer it was encoded into (no copy); cutting it and
    /// adding to it give the same lines as an array-built batch.
    func testAWorkersEncodedBatchCutsAndGrowsLikeAnArrayOne() {
        func encoded(_ lines: [String]) -> RecordBatch {
            var buffer = RecordBuffer(capacity: 4)  // grows while encoding, as a worker's may
            var ends: [Int] = []
            for line in lines {
                buffer.append(contentsOf: Array(line.utf8))
                buffer.append(UInt8(ascii: "\n"))
                ends.append(buffer.count)
            }
            return RecordBatch(encoded: buffer.intoEncodedRecords(), ends: ends)
        }
        var batch = encoded(["a", "bb", "ccc"])
        XCTAssertEqual(batch.byteCount, 9)
        XCTAssertEqual(String(decoding: batch.bytes, as: UTF8.self), "a\nbb\nccc\n")
        batch.withUnsafeBytes { XCTAssertEqual(String(decoding: $0, as: UTF8.self), "a\nbb\nccc\n") }
        var copy = batch
        let rest = copy.splitOff(after: 1)
        XCTAssertEqual(String(decoding: copy.bytes, as: UTF8.self), "a\n")
        XCTAssertEqual(copy.byteCount, 2)
        XCTAssertEqual(String(decoding: rest.bytes, as: UTF8.self), "bb\nccc\n")
        XCTAssertEqual(rest.ends, [3, 7])
        // The original shares the buffer and still has all three.
        XCTAssertEqual(String(decoding: batch.bytes, as: UTF8.self), "a\nbb\nccc\n")
        copy.append(Array("dddd".utf8))
        XCTAssertEqual(String(decoding: copy.bytes, as: UTF8.self), "a\ndddd\n")
        XCTAssertEqual(copy.ends, [2, 7])
        batch.keepFirst(2)
        XCTAssertEqual(String(decoding: batch.bytes, as: UTF8.self), "a\nbb\n")
        batch.withUnsafeBytes { XCTAssertEqual($0.count, 5) }
        batch.keepFirst(0)
        XCTAssertTrue(batch.bytes.isEmpty)
        XCTAssertEqual(encoded([]).byteCount, 0)
    }

    /// A worker's buffer is sized for the captured bodies, which a record may not log: a
    /// mostly empty one is copied to its size rather than held whole in the writer's queue.
    func testAMostlyEmptyEncodingBufferIsNotHeldWhole() {
        var sparse = RecordBuffer(capacity: 1 << 20)
        sparse.append(contentsOf: Array("{\"size\":1048576}\n".utf8))
        let end = sparse.count
        let small = RecordBatch(encoded: sparse.intoEncodedRecords(), ends: [end])
        XCTAssertEqual(String(decoding: small.bytes, as: UTF8.self), "{\"size\":1048576}\n")
        XCTAssertLessThanOrEqual(small.allocatedBytes, 2 * small.byteCount)
        var full = RecordBuffer(capacity: 64)
        full.append(contentsOf: [UInt8](repeating: UInt8(ascii: "x"), count: 40))
        let whole = RecordBatch(encoded: full.intoEncodedRecords(), ends: [40])
        XCTAssertEqual(whole.allocatedBytes, 64, "kept as it is")
    }

    /// One batch of 400 records over files of 4 KiB: it is split only between lines,
    /// every record lands exactly once and in order.
    func testOneBatchSplitsAcrossSizeRotationsBetweenLines() throws {
        let settings = LogSettings(directory: directory.path, maxFileBytes: 4096, maxFiles: 1000,
                                   rotateInterval: .never, compress: false, batchBytes: 1500)
        let writer = try LogWriter(settings: settings)
        var batch = RecordBatch()
        for n in 0..<400 { batch.append(LogTestFiles.record(n, length: 30 + n % 70)) }
        XCTAssertEqual(writer.submit(batch), 400)
        writer.flushAndStop()

        var numbers: [Int] = []
        let files = LogTestFiles.names(directory.path).filter { $0.hasPrefix("tapwire") }
        XCTAssertGreaterThan(files.count, 5, "several rotations")
        for name in files {
            let path = directory.path + "/" + name
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            XCTAssertLessThanOrEqual(size, 4096, name)
            var inFile: [Int] = []
            for line in try LogTestFiles.lines(path) {
                guard let n = LogTestFiles.recordNumber(line) else { return XCTFail("torn or foreign line in \(name): \(line)") }
                inFile.append(n)
            }
            // Each file holds a run of consecutive records: the batch was cut, not shuffled.
            if let first = inFile.first { XCTAssertEqual(inFile, Array(first..<(first + inFile.count)), name) }
            numbers += inFile
        }
        XCTAssertEqual(numbers.sorted(), Array(0..<400))
    }

    /// A batch larger than the queue's room: the front is queued, the rest counted lost and
    /// reported in a loss record.
    func testBatchOverQueueCapacityKeepsTheFrontAndCountsTheRest() throws {
        let settings = LogSettings(directory: directory.path, rotateInterval: .never, compress: false, queueCapacity: 10)
        let writer = try LogWriter(settings: settings)
        var batch = RecordBatch()
        for n in 0..<25 { batch.append(LogTestFiles.record(n)) }
        let queued = writer.submit(batch)
        XCTAssertEqual(queued, 10)
        writer.flushAndStop()
        let lines = try LogTestFiles.lines(directory.path + "/tapwire.jsonl")
        let numbers = lines.compactMap(LogTestFiles.recordNumber)
        XCTAssertEqual(numbers, Array(0..<queued))
        XCTAssertEqual(writer.stats.written + writer.stats.lost, 25)
        XCTAssertEqual(writer.stats.lost, 25 - queued)
        XCTAssertEqual(lines.compactMap(LogTestFiles.lossCount), [15], "one loss record for the refused tail")
    }
}
