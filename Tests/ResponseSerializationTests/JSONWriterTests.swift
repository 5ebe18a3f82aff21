import ResponseSerialization
import XCTest

final class JSONWriterTests: XCTestCase {
    private func written(_ value: JSON) -> String {
        var output: [UInt8] = []
        JSONWriter.write(value, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    private func quoted(_ string: String) -> String {
        var output: [UInt8] = []
        JSONWriter.appendQuoted(string, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    func testCompactOutputKeepsOrderDuplicatesAndNumberText() {
        let value = JSON.object([
            .init("z", .number("12345678901234567890")), .init("a", .array([.number("-0.0"), .number("1e400"), .null])),
            .init("z", .bool(true)), .init("e", .object([])), .init("f", .array([])), .init("g", .bool(false)),
        ])
        XCTAssertEqual(written(value), #"{"z":12345678901234567890,"a":[-0.0,1e400,null],"z":true,"e":{},"f":[],"g":false}"#)
        XCTAssertEqual(value.compactText, written(value))
        XCTAssertEqual(value.description, written(value))
    }

    func testWriteAppendsToExistingOutput() {
        var output = Array("prefix:".utf8)
        JSONWriter.write(.array([.number("1")]), into: &output)
        XCTAssertEqual(String(decoding: output, as: UTF8.self), "prefix:[1]")
    }

    func testEscaping() {
        XCTAssertEqual(quoted(""), #""""#)
        XCTAssertEqual(quoted("plain"), #""plain""#)
        XCTAssertEqual(quoted("a\"b\\c/d"), #""a\"b\\c/d""#)
        XCTAssertEqual(quoted("\u{08}\u{0C}\n\r\t"), #""\b\f\n\r\t""#)
        XCTAssertEqual(quoted("\u{00}\u{01}\u{1F}\u{7F}"), "\"\\u0000\\u0001\\u001f\u{7F}\"")
        // Non-ASCII stays raw UTF-8, U+2028/U+2029 included.
        XCTAssertEqual(quoted("é 日本 😀 \u{2028}\u{2029}"), "\"é 日本 😀 \u{2028}\u{2029}\"")
        // Escapes found past the word-at-a-time scan and at buffer ends.
        XCTAssertEqual(quoted("0123456789abcdef\"0123456789\n"), #""0123456789abcdef\"0123456789\n""#)
    }

    func testEveryControlCharacterIsEscapedAndReadsBack() throws {
        for scalar in 0..<0x20 {
            let text = "x\(Character(Unicode.Scalar(UInt8(scalar))))y"
            let output = quoted(text)
            XCTAssertFalse(output.utf8.contains { $0 < 0x20 }, "U+\(scalar) written raw")
            XCTAssertEqual(try JSONParser.parse(output), .string(text))
        }
    }

    func testStringsMadeFromSlicesAreWritten() {
        let sliced = String("--a\"b--".dropFirst(2).dropLast(2))
        XCTAssertEqual(quoted(sliced), #""a\"b""#)
    }

    func testRoundTripOfGeneratedValues() throws {
        var random = JSONTestRandom(seed: 42)
        for _ in 0..<500 {
            let value = generate(depth: 0, &random)
            var output: [UInt8] = []
            JSONWriter.write(value, into: &output)
            XCTAssertEqual(try JSONParser.parse(output), value, String(decoding: output, as: UTF8.self))
        }
    }

    func testRoundTripOfParsedText() throws {
        let text = #"{"a":[1,2.50,-0,1E+2],"b":"x\"y\\\/\u00e9\ud83d\ude00","c":{"d":[]},"a":null}"#
        let value = try JSONParser.parse(text)
        XCTAssertEqual(value.compactText, #"{"a":[1,2.50,-0,1E+2],"b":"x\"y\\/é😀","c":{"d":[]},"a":null}"#)
        XCTAssertEqual(try JSONParser.parse(value.compactText), value)
    }

    private func generate(depth: Int, _ random: inout JSONTestRandom) -> JSON {
        let kind = depth > 4 ? random.next() % 4 : random.next() % 6
        switch kind {
        case 0: return .null
        case 1: return .bool(random.next() % 2 == 0)
        case 2:
            let numbers = ["0", "-0", "1", "-17", "3.25", "1e10", "-2.5E-3", "12345678901234567890", "0.000001"]
            return .number(numbers[Int(random.next() % UInt64(numbers.count))])
        case 3: return .string(randomString(&random))
        case 4: return .array((0..<Int(random.next() % 5)).map { _ in generate(depth: depth + 1, &random) })
        default:
            return .object((0..<Int(random.next() % 5)).map { _ in
                .init(randomString(&random), generate(depth: depth + 1, &random))
            })
        }
    }

    private func randomString(_ random: inout JSONTestRandom) -> String {
        let pieces: [String] = ["a", "Z", " ", "\"", "\\", "/", "\n", "\t", "\u{00}", "\u{1F}", "\u{7F}", "é", "中",
                                "😀", "\u{2028}", "~", "0123456789abcdefghij"]
        return (0..<Int(random.next() % 8)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
    }
}
