@testable import ExchangeLog
import Foundation
import HTTP1
import XCTest

/// The workers' batch buffers come back from the writer for the next batch, within the
/// pool's bounds, and are let go when logging goes idle.
final class RecordBufferPoolTests: XCTestCase {
    /// A batch's buffer, written and released by the writer (the records' deinit), is the
    /// memory the next batch of a similar size is encoded into.
    func testABatchWrittenGivesItsBufferToTheNextBatch() {
        let pool = RecordBufferPool(maxBuffers: 2, maxBufferBytes: 1 << 20)
        var first = RecordBuffer(capacity: 4096, pool: pool)
        first.append(contentsOf: [UInt8](repeating: UInt8(ascii: "a"), count: 3000))
        var records: EncodedRecords? = first.intoEncodedRecords()
        let base = records?.base
        XCTAssertEqual(pool.keptBytes, 0, "given back while the writer still holds it")
        records = nil
        XCTAssertEqual(pool.keptBytes, 4096)
        let second = RecordBuffer(capacity: 3500, pool: pool)
        XCTAssertEqual(second.base, base, "not reused")
        XCTAssertEqual(pool.keptBytes, 0)
        _ = consume second
        XCTAssertEqual(pool.keptBytes, 4096, "a buffer dropped unencoded goes back too")
    }

    /// A batch mostly empty is copied out at its size (the writer's queue counts lines); the
    /// big buffer it was written into goes straight back.
    func testAMostlyEmptyBatchIsCopiedAndItsBufferKept() {
        let pool = RecordBufferPool(maxBuffers: 2, maxBufferBytes: 1 << 20)
        var buffer = RecordBuffer(capacity: 8192, pool: pool)
        buffer.append(contentsOf: Array("{}\n".utf8))
        let records = buffer.intoEncodedRecords()
        XCTAssertEqual(records.allocated, 3)
        XCTAssertEqual(pool.keptBytes, 8192)
        _ = records
    }

    func testTakesTheSmallestBufferOfOneToTwiceTheSizeAsked() {
        let pool = RecordBufferPool(maxBuffers: 4, maxBufferBytes: 1 << 20)
        let small = UnsafeMutablePointer<UInt8>.allocate(capacity: 1000)
        let middle = UnsafeMutablePointer<UInt8>.allocate(capacity: 3000)
        let large = UnsafeMutablePointer<UInt8>.allocate(capacity: 5000)
        pool.give(large, capacity: 5000)
        pool.give(small, capacity: 1000)
        pool.give(middle, capacity: 3000)
        XCTAssertNil(pool.take(capacity: 6000), "none large enough")
        XCTAssertNil(pool.take(capacity: 400), "every one more than twice as large")
        XCTAssertEqual(pool.take(capacity: 2500)?.base, middle)
        XCTAssertEqual(pool.take(capacity: 2500)?.base, large)
        XCTAssertNil(pool.take(capacity: 2500))
        XCTAssertEqual(pool.keptBytes, 1000)
        middle.deallocate()
        large.deallocate()
    }

    func testKeepsAtMostItsBoundsAndTheNewestBuffers() {
        let pool = RecordBufferPool(maxBuffers: 2, maxBufferBytes: 4096)
        let buffers = (0..<3).map { UnsafeMutablePointer<UInt8>.allocate(capacity: 1000 + $0) }
        for (i, b) in buffers.enumerated() { pool.give(b, capacity: 1000 + i) }
        XCTAssertEqual(pool.keptBytes, 1001 + 1002, "the oldest was not the one let go")
        pool.give(.allocate(capacity: 8192), capacity: 8192)
        XCTAssertEqual(pool.keptBytes, 1001 + 1002, "a buffer over maxBufferBytes was kept")
        pool.drain()
        XCTAssertEqual(pool.keptBytes, 0)
        XCTAssertNil(pool.take(capacity: 1000))
    }

    /// Under a pipeline: batches reuse the pool's buffers while exchanges flow, and the pool
    /// is empty once logging has been idle (the napping worker drains it before sleeping).
    func testAPipelineLetsItsBuffersGoWhenIdle() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let writer = try LogWriter(settings: LogSettings(directory: dir.path, compress: false))
        let pipeline = ExchangePipeline(processor: RecordFixture.processor(), writer: writer, workers: 1)
        for i in 0..<200 {
            pipeline.accept(.http(RecordFixture.exchange(url: "http://api.local/?n=\(i)", body: Array(#"{"ok":true}"#.utf8))))
            if i % 20 == 0 { Thread.sleep(forTimeInterval: 0.02) }
        }
        let deadline = Date().addingTimeInterval(10)
        while pipeline.processed < 200 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        XCTAssertEqual(pipeline.processed, 200)
        // Written, then idle past the napper's 0.1 s: drained, and nothing given back after.
        var kept = pipeline.bufferPool.keptBytes
        while kept > 0 && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
            kept = pipeline.bufferPool.keptBytes
        }
        XCTAssertEqual(kept, 0, "the pool kept its buffers while idle")
        pipeline.drain()
        writer.flushAndStop()
    }
}
