import Foundation
import XCTest
@testable import ExchangeLog

final class RecordIDTests: XCTestCase {
    func testFormatIsHexMillisecondsAndCounter() {
        let generator = RecordIDGenerator()
        XCTAssertEqual(generator.next(startTime: 1_700_000_000.123), "0000018bcfe5687b-000001")
        XCTAssertEqual(generator.next(startTime: 1_700_000_000.123), "0000018bcfe5687b-000002")
        XCTAssertEqual(generator.next(startTime: -5), "0000000000000000-000003")
        XCTAssertEqual(generator.next(startTime: .nan), "0000000000000000-000004")
    }

    func testCounterGrowsPastSixDigits() {
        func hex(_ value: UInt64, minDigits: Int) -> String {
            let digits = max(minDigits, RecordIDGenerator.hexDigits(value))
            var bytes = [UInt8](repeating: 0, count: digits)
            bytes.withUnsafeMutableBufferPointer { RecordIDGenerator.writeHex(value, digits: digits, to: $0, at: 0) }
            return String(decoding: bytes, as: UTF8.self)
        }
        XCTAssertEqual(hex(0x1234567, minDigits: 6), "1234567")
        XCTAssertEqual(hex(UInt64.max, minDigits: 16), "ffffffffffffffff")
        XCTAssertEqual(hex(0, minDigits: 6), "000000")
        XCTAssertEqual(hex(0xabcdef, minDigits: 6), "abcdef")
    }

    /// The worker writes generated ids straight into the record: the same quoted text the
    /// string form gives, at every width.
    func testGeneratedIDsAreWrittenAsTheirText() {
        for (millis, sequence) in [(UInt64(0), UInt64(1)), (0x18bcfe5687b, 0xabcdef), (0x18bcfe5687b, 0x1234567),
                                   (UInt64.max, UInt64.max), (1, 0)] {
            let id = RecordID(millis: millis, sequence: sequence)
            var generated = RecordBuffer(capacity: 8)
            generated.appendID(.generated(id))
            var text = RecordBuffer(capacity: 8)
            text.appendID(.text(id.description))
            XCTAssertEqual(Array(generated.bytes), Array(text.bytes), "\(id)")
            XCTAssertEqual(String(decoding: generated.bytes, as: UTF8.self), "\"\(id)\"")
        }
        XCTAssertEqual(RecordID(millis: UInt64.max, sequence: UInt64.max).description,
                       "ffffffffffffffff-ffffffffffffffff", "the longest id fits its room")
        let generator = RecordIDGenerator()
        XCTAssertEqual(generator.nextID(startTime: 1_700_000_000.123), RecordID(millis: 0x18bcfe5687b, sequence: 1))
    }

    func testIDsSortByStartTime() {
        let generator = RecordIDGenerator()
        let base = 1_796_206_272.0
        // Generated out of start order, as exchanges finish out of order.
        let starts = [5.0, 0.001, 0.0, 300.25, 0.002, 0.0015, 86_400.0].map { base + $0 }
        let ids = starts.map { generator.next(startTime: $0) }
        let byStart = zip(starts, ids).sorted { $0.0 < $1.0 }.map(\.1)
        XCTAssertEqual(ids.sorted(), byStart)
    }

    func testUniqueAcrossTwoGeneratorsTwoMillisecondsApart() {
        let base = 1_796_206_272.0
        let first = RecordIDGenerator()
        // The first process saw exchanges up to its last millisecond...
        let firstIDs = (0..<1000).map { first.next(startTime: base + Double($0 % 10) * 0.0001) }
        // ...the second starts 2 ms later, its counter from 1 again.
        let second = RecordIDGenerator()
        let secondIDs = (0..<1000).map { second.next(startTime: base + 0.002 + Double($0 % 10) * 0.0001) }
        let all = firstIDs + secondIDs
        XCTAssertEqual(Set(all).count, 2000)
        XCTAssertEqual(all.sorted().suffix(1000).sorted(), secondIDs.sorted(), "later starts sort after earlier ones")
    }

    func testConcurrentCallersGetDistinctIDs() {
        let generator = RecordIDGenerator()
        let lock = NSLock()
        var ids: [String] = []
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            var local: [String] = []
            for _ in 0..<2000 { local.append(generator.next(startTime: 1_796_206_272.0)) }
            lock.withLock { ids += local }
        }
        XCTAssertEqual(ids.count, 16_000)
        XCTAssertEqual(Set(ids).count, 16_000)
    }
}
