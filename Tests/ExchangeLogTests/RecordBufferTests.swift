import ResponseSerialization
import XCTest
@testable import ExchangeLog

/// The record buffer quotes strings with its own word-at-a-time copy; it must write
/// exactly what `JSONWriter` writes, for every length and escape position.
final class RecordBufferTests: XCTestCase {
    func testQuotingMatchesJSONWriter() {
        let alphabet: [UInt8] = Array("ab\"\\\u{1}\n\t /é€😀".utf8) + [0x7F, 0x1F, 0x20]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
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
}
