import ResponseSerialization
import XCTest
@testable import ExchangeLog

/// The record buffer quotes strings with its own word-at-a-time copy; it must write
/// exactly what `JSONWriter` writes, for every length and escape position.
final class RecordBufferTests: XCTestCase {
    func testQuotingMatchesJSONWriter() {
        let alphabet: [UInt8] = Array("ab\"\\\u{1}\n\t /é€😀".utf8) + [0x7F, 0x1F, 0x20]
        var random = SplitMix64(seed: 0x9E37_79B9_7F4A_7C15)
        func next() -> UInt64 { random.next() }
        for round in 0..<5_000 {
            let length = round < 40 ? round : Int(next() % 80)
            // Mostly plain letters, so escapes land at every offset within a word.
            let bytes = (0..<length).map { _ in next() % 4 == 0 ? alphabet[Int(next() % UInt64(alphabet.count))] : UInt8(ascii: "x") }
            let string = String(decoding: bytes, as: UTF8.self)
            var expected: [UInt8] = []
            JSONWriter.appendQuoted(string, into: &expected)
            var buffer = RecordBuffer(capacity: 1)
            buffer.append(UInt8(ascii: "["))
            buffer.appendQuoted(string)
            buffer.append(UInt8(ascii: "]"))
            XCTAssertEqual(Array(buffer.bytes), [UInt8(ascii: "[")] + expected + [UInt8(ascii: "]")], "\(bytes)")
        }
    }

    /// Header fields take a plain-ASCII fast path when they can; what it writes (or its
    /// refusal, then the general path) must equal quoting name and value one by one.
    func testHeaderFieldsMatchTheGeneralQuoting() {
        let alphabet: [UInt8] = Array("\"\\\t\u{1}é".utf8) + [0x7F, 0x1F, 0x20, 0xFF, 0x80]
        var random = SplitMix64(seed: 0xD1B5_4A32_D192_ED03)
        func next() -> UInt64 { random.next() }
        /// One byte in `rarity` from the alphabet (every offset within a word gets its turn).
        func field(_ length: Int, _ rarity: UInt64) -> [UInt8] {
            (0..<length).map { _ in next() % rarity == 0 ? alphabet[Int(next() % UInt64(alphabet.count))] : UInt8(ascii: "k") }
        }
        var plain = 0
        for round in 0..<4_000 {
            let rarity: UInt64 = round % 2 == 0 ? 6 : 80
            let name = field(round < 30 ? round : Int(next() % 40), rarity)
            let value = field(Int(next() % 40), rarity)
            let redacted = next() % 5 == 0
            var expected = RecordBuffer(capacity: 1)
            expected.append(UInt8(ascii: "["))
            name.withUnsafeBufferPointer { expected.appendQuotedText($0) }
            expected.append(UInt8(ascii: ","))
            if redacted { expected.append("\"[redacted]\"") } else { value.withUnsafeBufferPointer { expected.appendQuotedText($0) } }
            expected.append(UInt8(ascii: "]"))

            var buffer = RecordBuffer(capacity: 1)
            buffer.append(UInt8(ascii: "<"))
            let took = name.withUnsafeBufferPointer { n in
                value.withUnsafeBufferPointer { v in buffer.appendPlainField(name: n, value: v, redacted: redacted) }
            }
            if took {
                plain += 1
                XCTAssertEqual(Array(buffer.bytes), [UInt8(ascii: "<")] + Array(expected.bytes), "\(name) \(value)")
            } else {
                XCTAssertEqual(Array(buffer.bytes), [UInt8(ascii: "<")], "a refused field must write nothing")
                let needsCare = (name + (redacted ? [] : value)).contains { $0 < 0x20 || $0 >= 0x80 || $0 == 0x22 || $0 == 0x5C }
                XCTAssertTrue(needsCare, "a plain field was refused: \(name) \(value)")
            }
        }
        XCTAssertGreaterThan(plain, 500, "the fast path was hardly taken")
    }

    func testTimesMatchRFC3339WhetherOrNotTheSecondIsCached() {
        // Same-second runs use the cached text; the rest compute it. Both must match the
        // formatter, rounding carries and clamped extremes included.
        var times: [Double] = [0, -0.5, 1_790_000_000.9999996, 1_790_000_000.9999994, 1_790_000_001,
                               -62_135_596_801, 253_402_300_800, .nan, .infinity, -.infinity, 951_782_399.9999999]
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        for _ in 0..<2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let base = Double(state >> 34) - 2_000_000_000  // about ±68 years around 2006
            for k in 0..<3 { times.append(base + Double(k) * 0.000_37) }  // a run within one second
        }
        var buffer = RecordBuffer(capacity: 1)
        for t in times {
            let before = buffer.count
            buffer.appendTime(t)
            let written = String(decoding: UnsafeBufferPointer(rebasing: buffer.bytes[before...]), as: UTF8.self)
            XCTAssertEqual(written, "\"" + RFC3339.format(secondsSince1970: t) + "\"", "\(t)")
        }
    }
}
