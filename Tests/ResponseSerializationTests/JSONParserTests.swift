import Foundation
import Synchronization
import ResponseSerialization
import XCTest

final class JSONParserTests: XCTestCase {
    private func parse(_ text: String, allowFragments: Bool = true, maxDepth: Int = 512,
                       file: StaticString = #filePath, line: UInt = #line) -> JSON? {
        do {
            return try JSONParser.parse(text, allowFragments: allowFragments, maxDepth: maxDepth)
        } catch {
            XCTFail("\(text.debugDescription) should parse: \(error)", file: file, line: line)
            return nil
        }
    }

    private func parseError(_ bytes: [UInt8], allowFragments: Bool = true, maxDepth: Int = 512) -> JSONParseError? {
        do {
            _ = try JSONParser.parse(bytes, allowFragments: allowFragments, maxDepth: maxDepth)
            return nil
        } catch {
            return error
        }
    }

    private func parseError(_ text: String, allowFragments: Bool = true) -> JSONParseError? {
        parseError(Array(text.utf8), allowFragments: allowFragments)
    }

    // MARK: Accepted (JSONTestSuite "y_" style)

    func testAcceptsScalarsAndContainers() {
        XCTAssertEqual(parse("null"), .null)
        XCTAssertEqual(parse("true"), .bool(true))
        XCTAssertEqual(parse("false"), .bool(false))
        XCTAssertEqual(parse("\"abc\""), .string("abc"))
        XCTAssertEqual(parse("[]"), .array([]))
        XCTAssertEqual(parse("{}"), .object([]))
        XCTAssertEqual(parse("[[]   ]"), .array([.array([])]))
        XCTAssertEqual(parse("[1,\"a\",null,true,{}]"),
                       .array([.number("1"), .string("a"), .null, .bool(true), .object([])]))
        XCTAssertEqual(parse("{\"a\":{\"b\":[1,{\"c\":null}]}}"),
                       .object([.init("a", .object([.init("b", .array([.number("1"), .object([.init("c", .null)])]))]))]))
    }

    func testWhitespaceIsOnlySpaceTabNewlineReturn() {
        XCTAssertEqual(parse(" \t\r\n[ 1 ,\n2\t]\r\n "), .array([.number("1"), .number("2")]))
        XCTAssertEqual(parse("{ \"a\" : 1 }"), .object([.init("a", .number("1"))]))
        for bad in ["\u{0C}[]", "[]\u{0B}", "\u{A0}[]", "\u{FEFF}[]", "[\u{00}]"] {
            XCTAssertNotNil(parseError(bad), bad.debugDescription)
        }
    }

    func testNumbersKeepTheirSourceText() {
        for text in ["0", "-0", "-0.0", "12345678901234567890", "1e400", "1E+2", "1e-2", "0.1",
                     "-123.456e-789", "3.0", "1.5E308", "100000000000000000000000000000000000001"] {
            XCTAssertEqual(parse(text), .number(text), text)
            XCTAssertEqual(parse("[\(text)]"), .array([.number(text)]), text)
        }
    }

    func testNumberGrammarIsStrict() {
        for text in ["01", "-01", "00", "+1", ".5", "1.", "-", "1e", "1e+", "1E-", "-.5", "1.e3",
                     "0x10", "Infinity", "-Infinity", "NaN", "1_000", "- 1", "1.2.3", "1ee2", "[01]", "[1.]"] {
            XCTAssertNotNil(parseError(text), "\(text) should be rejected")
        }
    }

    func testStringEscapes() {
        XCTAssertEqual(parse(#""\" \\ \/ \b \f \n \r \t""#), .string("\" \\ / \u{08} \u{0C} \n \r \t"))
        XCTAssertEqual(parse(#""\u0041\u00e9\u4E2D""#), .string("Aé中"))
        XCTAssertEqual(parse(#""\ud83d\ude00""#), .string("😀"))
        XCTAssertEqual(parse(#""\uDBFF\uDFFF""#), .string("\u{10FFFF}"))
        XCTAssertEqual(parse(#""a\u0000b""#), .string("a\u{0}b"))
        XCTAssertEqual(parse(#""plain text then \n an escape and more plain text after it""#),
                       .string("plain text then \n an escape and more plain text after it"))
    }

    func testUnicodeIsKept() {
        XCTAssertEqual(parse("\"Déjà vu – 日本語 😀\""), .string("Déjà vu – 日本語 😀"))
        XCTAssertEqual(parse("{\"clé\":\"✓\"}"), .object([.init("clé", .string("✓"))]))
        // U+2028/U+2029 are valid unescaped in JSON strings.
        XCTAssertEqual(parse("\"\u{2028}\u{2029}\""), .string("\u{2028}\u{2029}"))
    }

    func testKeyOrderAndDuplicatesAreKept() {
        XCTAssertEqual(parse(#"{"z":1,"a":2,"z":3,"m":4}"#),
                       .object([.init("z", .number("1")), .init("a", .number("2")),
                                .init("z", .number("3")), .init("m", .number("4"))]))
    }

    func testFragmentsFollowTheOption() {
        XCTAssertEqual(parse("42"), .number("42"))
        XCTAssertEqual(parse(" \"abc\" "), .string("abc"))
        XCTAssertEqual(parseError("42", allowFragments: false),
                       JSONParseError(offset: 0, message: "expected an object or array at top level"))
        XCTAssertEqual(parseError("  null", allowFragments: false)?.offset, 2)
        XCTAssertEqual(parse("[42]", allowFragments: false), .array([.number("42")]))
        XCTAssertEqual(parse("{}", allowFragments: false), .object([]))
    }

    func testOverloadsAgree() throws {
        let text = #"{"a":[1,"é",true]}"#
        let expected = JSON.object([.init("a", .array([.number("1"), .string("é"), .bool(true)]))])
        XCTAssertEqual(try JSONParser.parse(text), expected)
        XCTAssertEqual(try JSONParser.parse(Array(text.utf8)), expected)
        XCTAssertEqual(try JSONParser.parse(Data(text.utf8)), expected)
        let raw = try Array(text.utf8).withUnsafeBytes { bytes throws(JSONParseError) in try JSONParser.parse(bytes) }
        XCTAssertEqual(raw, expected)
    }

    func testLargeDocumentWithRepeatsParsesLikeSmallOnes() throws {
        // Above 16 KB the parser shares boxes for repeated short texts; values must not change.
        var items: [String] = []
        var expected: [JSON] = []
        for i in 0..<2000 {
            items.append(#"{"id":\#(i % 7),"kind":"k\#(i % 3)","flag":\#(i % 2 == 0),"n":"\#(i % 5)","long_key_name_xx":"v"}"#)
            expected.append(.object([.init("id", .number(String(i % 7))), .init("kind", .string("k\(i % 3)")),
                                     .init("flag", .bool(i % 2 == 0)), .init("n", .string(String(i % 5))),
                                     .init("long_key_name_xx", .string("v"))]))
        }
        let text = "[" + items.joined(separator: ",") + "]"
        XCTAssertGreaterThan(text.utf8.count, 16 * 1024)
        XCTAssertEqual(try JSONParser.parse(text), .array(expected))
    }

    func testLargeDocumentKeepsNearlyEqualShortTextsApart() throws {
        // Texts that differ only in their last byte, at every length the sharing covers, as
        // keys, strings and numbers (a number and a string with the same text stay different),
        // ending right at the end of the input so the last ones are read byte by byte.
        var members: [String] = []
        var expected: [JSON.Member] = []
        for round in 0..<40 {
            for length in 1...33 {
                for last in ["a", "b"] {
                    let text = String(repeating: "k", count: length - 1) + last
                    members.append(#""\#(text)":"\#(text)""#)
                    expected.append(.init(text, .string(text)))
                }
            }
            let number = String(round % 3 + 10)
            members.append(#""n":\#(number)"#)
            members.append(#""s":"\#(number)""#)
            expected.append(.init("n", .number(number)))
            expected.append(.init("s", .string(number)))
        }
        members.append(#""z":"q""#)
        expected.append(.init("z", .string("q")))
        let text = "{" + members.joined(separator: ",") + "}"
        XCTAssertGreaterThan(text.utf8.count, 16 * 1024)
        XCTAssertEqual(try JSONParser.parse(text), .object(expected))
        XCTAssertEqual(try JSONParser.parse("[" + text + ",\"k\"]"), .array([.object(expected), .string("k")]))
    }

    func testConcurrentParsesShareNothingVisible() {
        // Readers reuse pooled working memory; parses on many threads at once, large and
        // small, failing and succeeding, must each see only their own document.
        let documents: [String] = (0..<8).map { i in
            let items = (0..<(i % 2 == 0 ? 1500 : 3)).map { #"{"id":\#($0 % 9),"owner":"o\#(i)","k\#(i)":[true,null]}"# }
            return "[" + items.joined(separator: ",") + "]"
        }
        let expected = documents.map { try? JSONParser.parse($0) }
        let mismatches = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 64) { round in
            let index = round % documents.count
            if round % 5 == 0 { _ = try? JSONParser.parse(documents[index] + "]") }  // fails, memory not returned
            if (try? JSONParser.parse(documents[index])) != expected[index] {
                mismatches.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(mismatches.withLock { $0 }, 0)
        let owner = try? JSONPointer("/1499/owner")
        XCTAssertEqual(owner.flatMap { expected[0]?.value(at: $0) }, .string("o0"))
    }

    // MARK: Rejected (JSONTestSuite "n_" style), with offsets

    func testRejectsWithOffsetsAndMessages() {
        let cases: [(String, Int, String)] = [
            ("", 0, "unexpected end of input"),
            ("   ", 3, "unexpected end of input"),
            ("[1,]", 3, "unexpected character ']'"),
            ("[1 2]", 3, "unexpected character '2', expected ',' or ']'"),
            ("{\"a\" 1}", 5, "unexpected character '1', expected ':'"),
            ("{\"a\":1,}", 7, "unexpected character '}', expected a string key"),
            ("{'a':1}", 1, "unexpected character ''', expected a string key"),
            ("[x]", 1, "unexpected character 'x'"),
            ("[1] x", 4, "unexpected character 'x' after the value"),
            ("\"abc", 0, "unterminated string"),
            ("[\"a\u{01}\"]", 3, "unescaped control character in string"),
            ("[\"a\\x\"]", 3, "invalid escape \\x"),
            ("[\"\\u12G4\"]", 6, "invalid hex digit in \\u escape"),
            ("[\"\\ud800\"]", 2, "lone high surrogate in \\u escape"),
            ("[\"\\ud800\\u0041\"]", 2, "lone high surrogate in \\u escape"),
            ("[\"\\udc00\"]", 2, "lone low surrogate in \\u escape"),
            ("[tru]", 4, "unexpected character ']' in literal"),
            ("[nul", 4, "unexpected end of input"),
            ("[True]", 1, "unexpected character 'T'"),
            ("[01]", 1, "leading zero in number"),
            ("[1.]", 3, "unexpected character ']', expected a digit after '.'"),
            ("[1e]", 3, "unexpected character ']', expected a digit in exponent"),
            ("[-x]", 2, "unexpected character 'x', expected a digit"),
            ("[", 1, "unexpected end of input"),
            ("{\"a\":[1,2}", 9, "unexpected character '}', expected ',' or ']'"),
            ("[1}", 2, "unexpected character '}', expected ',' or ']'"),
            ("{\"a\":1]", 6, "unexpected character ']', expected ',' or '}'"),
            ("[]]", 2, "unexpected character ']' after the value"),
            ("[] []", 3, "unexpected character '[' after the value"),
        ]
        for (text, offset, message) in cases {
            XCTAssertEqual(parseError(text), JSONParseError(offset: offset, message: message), text.debugDescription)
        }
    }

    func testRejectsInvalidUTF8() {
        let bad: [[UInt8]] = [
            [0x22, 0xFF, 0x22],                    // never valid
            [0x22, 0xC0, 0xAF, 0x22],              // overlong '/'
            [0x22, 0xE0, 0x80, 0xAF, 0x22],        // overlong
            [0x22, 0xED, 0xA0, 0x80, 0x22],        // encoded surrogate U+D800
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
            [0x22, 0x80, 0x22],                    // lone continuation
            [0x22, 0xE2, 0x82, 0x22],              // truncated sequence
            [0x22, 0x61, 0x62, 0xC3],              // truncated at end of input
        ]
        for bytes in bad {
            XCTAssertEqual(parseError(bytes)?.message, "invalid UTF-8 in string", "\(bytes)")
        }
        XCTAssertEqual(parseError([0x22, 0x61, 0xFF, 0x22])?.offset, 2)
        XCTAssertNotNil(parseError([0xEF, 0xBB, 0xBF, 0x5B, 0x5D]), "a byte order mark is not white space")
        XCTAssertEqual(try? JSONParser.parse([0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22]), .string("😀"))
    }

    func testErrorDescriptionNamesTheOffset() {
        XCTAssertEqual(parseError("[1,]")?.description, "unexpected character ']' at byte 3")
    }

    // MARK: Depth

    func testDeepNestingFailsCleanly() {
        let deep = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        XCTAssertEqual(parseError(deep), JSONParseError(offset: 512, message: "nesting deeper than 512"))
        let deepObjects = Array(String(repeating: "{\"a\":", count: 100_000).utf8)
        XCTAssertEqual(parseError(deepObjects)?.message, "nesting deeper than 512")
    }

    func testDepthLimitIsExact() throws {
        let atLimit = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        XCTAssertNotNil(try? JSONParser.parse(atLimit))
        let overLimit = "[" + atLimit + "]"
        XCTAssertEqual(parseError(overLimit)?.message, "nesting deeper than 512")
        XCTAssertEqual(parseError(Array("[[1]]".utf8), maxDepth: 1)?.message, "nesting deeper than 1")
        XCTAssertEqual(try JSONParser.parse("[1]", maxDepth: 1), .array([.number("1")]))
        // A raised limit is honoured. (Far deeper values are avoided here: releasing a nested
        // `JSON` value recurses in the Swift runtime, so maxDepth should stay in the thousands.)
        let deeper = String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)
        XCTAssertEqual((try? JSONParser.parse(deeper, maxDepth: 5_000))?.compactText.utf8.count, 10_000)
        XCTAssertEqual(parseError(Array(deeper.utf8), maxDepth: 4_999)?.offset, 4_999)
    }

    // MARK: Robustness

    func testEveryTruncationParsesOrThrows() {
        let documents = [
            #"{"a":[1,2.5e-3,-0,"x\"y\u00e9\ud83d\ude00"],"b":{"c":null,"d":true,"e":false},"f":"Déjà 😀"}"#,
            #"[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]},{},[[[]]],"tail"]"#,
            #"  "just a string with \n escapes"  "#,
            "-12345.678E+90",
        ]
        for document in documents {
            let bytes = Array(document.utf8)
            XCTAssertNotNil(try? JSONParser.parse(bytes), document)
            var failures = 0
            for length in 0..<bytes.count {
                if (try? JSONParser.parse(Array(bytes[..<length]))) == nil { failures += 1 }
            }
            // Only a prefix that is itself a complete number can parse (the last document).
            XCTAssertGreaterThanOrEqual(failures, bytes.count - 15, document)
        }
        // A truncated container never parses.
        let container = Array(documents[0].utf8)
        for length in 0..<container.count {
            XCTAssertNotNil(parseError(Array(container[..<length])), "prefix of length \(length)")
        }
    }

    func testRandomBytesNeverCrash() {
        var generator = JSONTestRandom(seed: 0x7A9_1E5)
        let alphabet = Array("{}[],:\"\\/0123456789-+.eEtrufalsn \t\r\nu\u{00}a".utf8) + [0xC3, 0xA9, 0xFF, 0xED, 0xF0]
        var parsed = 0
        for round in 0..<3000 {
            let length = Int(generator.next() % 64)
            let bytes: [UInt8] = (0..<length).map { _ in
                round % 2 == 0 ? UInt8(truncatingIfNeeded: generator.next())
                               : alphabet[Int(generator.next() % UInt64(alphabet.count))]
            }
            do {
                let value = try JSONParser.parse(bytes)
                parsed += 1
                // Whatever parses must survive a round trip through the writer.
                var output: [UInt8] = []
                JSONWriter.write(value, into: &output)
                XCTAssertEqual(try JSONParser.parse(output), value)
            } catch {
                XCTAssertLessThanOrEqual(error.offset, bytes.count)
                XCTAssertFalse(error.message.isEmpty)
            }
        }
        XCTAssertGreaterThan(parsed, 0, "the alphabet should produce some valid documents")
    }

    func testAgreesWithFoundationOnValidity() {
        // Foundation is lenient in places (it accepts some things RFC 8259 forbids), so only
        // check documents both should reject or accept.
        let valid = [#"{"a":[1,2,{"b":null}],"c":"\u00e9"}"#, "[-0.5e10,true,false,null]"]
        let invalid = ["[1,]", "{\"a\":}", "[\"\\x\"]", "[01]"]
        for text in valid {
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(text.utf8)))
            XCTAssertNotNil(try? JSONParser.parse(text))
        }
        for text in invalid {
            XCTAssertNil(try? JSONParser.parse(text), text)
        }
    }
}

/// SplitMix64: deterministic bytes for the fuzz-style tests.
struct JSONTestRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
