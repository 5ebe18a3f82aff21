import Foundation
import HTTP1
import ResponseSerialization
import XCTest

/// `JSONCompactor` must write exactly what the tree path writes (parse, redact keys,
/// `JSONWriter`) and must never accept what `JSONParser` refuses.
final class JSONCompactorTests: XCTestCase {
    static let keys: Set<String> = ["password", "Token", "a", "api_key"]

    /// The tree path's text, or nil when the parser refuses the document.
    func treeText(_ bytes: [UInt8], allowFragments: Bool = true, maxDepth: Int = 512,
                  keys: Set<String> = JSONCompactorTests.keys) -> [UInt8]? {
        guard let value = try? JSONParser.parse(bytes, allowFragments: allowFragments, maxDepth: maxDepth) else { return nil }
        var out: [UInt8] = []
        JSONWriter.write(value.redactingKeys(keys), into: &out)
        return out
    }

    func compactText(_ bytes: [UInt8], allowFragments: Bool = true, maxDepth: Int = 512,
                     keys: Set<String> = JSONCompactorTests.keys) -> [UInt8]? {
        var out: [UInt8] = Array("prefix".utf8)
        let ok = JSONCompactor.append(bytes, allowFragments: allowFragments, maxDepth: maxDepth,
                                      redacting: JSONKeySet(keys), into: &out)
        guard ok else {
            XCTAssertEqual(out, Array("prefix".utf8), "a refusal must leave the output as it was")
            return nil
        }
        XCTAssertEqual(Array(out.prefix(6)), Array("prefix".utf8))
        return Array(out.dropFirst(6))
    }

    /// Same answer as the tree: same text, or both refuse. `mayRefuse` allows the pass to
    /// refuse a valid document (the caller then falls back to the parser).
    func assertAgrees(_ bytes: [UInt8], allowFragments: Bool = true, maxDepth: Int = 512, mayRefuse: Bool = false,
                      _ label: @autoclosure () -> String = "", file: StaticString = #filePath, line: UInt = #line) {
        let tree = treeText(bytes, allowFragments: allowFragments, maxDepth: maxDepth)
        let compact = compactText(bytes, allowFragments: allowFragments, maxDepth: maxDepth)
        let shown = label().isEmpty ? String(decoding: bytes.prefix(200), as: UTF8.self) : label()
        if tree == nil {
            XCTAssertNil(compact, "accepted what the parser refuses: \(shown)", file: file, line: line)
        } else if compact == nil {
            if !mayRefuse { XCTFail("refused a valid document: \(shown)", file: file, line: line) }
        } else if let tree, let compact, tree != compact {
            XCTFail("\(shown)\n tree:    \(String(decoding: tree, as: UTF8.self))\n compact: \(String(decoding: compact, as: UTF8.self))",
                    file: file, line: line)
        }
    }

    func testDocumentsAgreeWithTheTreePath() {
        let documents = [
            #"{"id":1,"name":"x","list":[1,2.5,-3e10,0,true,false,null],"o":{}}"#,
            " \t\n{ \"a\" : [ 1 , { \"b\" : 2 } ] ,\r\n \"c\" : null } \n",
            #"{"password":"p","nested":{"TOKEN":{"deep":[1,2,{"password":3}]},"keep":1},"after":true}"#,
            #"{"a":{"a":{"a":1}},"b":[{"a":[]},{"A":{}}],"c":"a"}"#,
            #"[{"password":  [ 1, {"x":2} ] , "y":3}, {"api_key" : "k"}]"#,
            #"{"pass\u0077ord":"hidden","to\u006Ben":1,"\u0061":2,"b\u0061":3}"#,
            #"{"s":"quote \" backslash \\ slash \/ ctl \b\f\n\r\t \u0000 \u001f \u001F \u0008 \u00e9 \u00E9 \u2028 \ud83d\ude00"}"#,
            #"{"dup":1,"dup":2,"DUP":3}"#,
            #"["Déjà vu","日本語","🚀",""]"#,
            #""just a string""#, "42", "-0.5e-7", "true", "null", #""\/""#,
            "{\"k\":\"\u{7F}\"}",
            #"{"password":{"a":{"b":[{"c":1}]}},"x":{"y":[]}}"#,
            #"{"numbers":[0,-0,1.0,1e5,1E+5,1e-5,123456789012345678901234567890]}"#,
            #"{"" : "", "a b":"c d"}"#,
        ]
        for text in documents { assertAgrees(Array(text.utf8)) }
    }

    func testInvalidDocumentsAreRefused() {
        let invalid = [
            "", " ", "{", "}", "[", "]", "[1,]", "{\"a\":1,}", "{\"a\"}", "{\"a\":}", "{a:1}", "[01]", "[1.]", "[.5]",
            "[1e]", "[-]", "[+1]", "tru", "nul", "fals", "falsy", "[true false]", "\"unterminated", "\"bad \\x escape\"",
            "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "\"tab\tinside\"", "[1] [2]", "{}x",
            "\u{FEFF}{}", "[\"\\\"]", "{\"a\":1 \"b\":2}", "[1,,2]", "[,1]",
        ]
        for text in invalid { assertAgrees(Array(text.utf8), text) }
        let badUTF8: [[UInt8]] = [[0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22],
                                  [0x22, 0xE2, 0x82, 0x22], [0x22, 0xFF, 0x22], [0x22, 0xF0, 0x8F, 0xBF, 0xBF, 0x22], [0x22, 0xC3]]
        for bytes in badUTF8 { assertAgrees(bytes, "\(bytes)") }
    }

    func testFragmentsAndDepthFollowTheParser() {
        assertAgrees(Array("42".utf8), allowFragments: false)
        assertAgrees(Array(#""s""#.utf8), allowFragments: false)
        assertAgrees(Array(" [1]".utf8), allowFragments: false)
        for depth in [1, 2, 63, 64, 65, 127, 128, 129, 200] {
            let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let objects = String(repeating: "{\"a\":", count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)
            let mixed = String(repeating: "[{\"k\":", count: depth / 2) + "1" + String(repeating: "}]", count: depth / 2)
            for text in [arrays, objects, mixed] {
                for limit in [depth - 1, depth, depth + 1, 512] {
                    assertAgrees(Array(text.utf8), maxDepth: limit, "depth \(depth) limit \(limit)")
                }
            }
        }
    }

    func testWithoutKeysEveryValueIsKept() {
        let text = Array(#"{ "password" : "p", "a": [1, 2] }"#.utf8)
        var out: [UInt8] = []
        XCTAssertTrue(JSONCompactor.append(text, into: &out))
        XCTAssertEqual(String(decoding: out, as: UTF8.self), #"{"password":"p","a":[1,2]}"#)
    }

    func testSerializerFallsBackToTheParserForErrors() throws {
        let serializer = DataResponseSerializer<CompactJSON>.compactJSON(redactingKeys: JSONKeySet(["token"]))
        let bad = serializer.serializeResponse(nil, HTTPResponseHead(status: 200), Data("[1,]".utf8), nil)
        guard case .failure(let error) = bad, case .responseSerializationFailed(.jsonSerializationFailed(let parseError))? = error as? TapwireError else {
            return XCTFail("expected jsonSerializationFailed, got \(bad)")
        }
        var expected = ""
        do { _ = try JSONParser.parse("[1,]") } catch { expected = error.description }
        XCTAssertEqual("\(parseError)", expected)
        let empty = serializer.serializeResponse(HTTPRequestHead(method: "HEAD", target: "/"), HTTPResponseHead(status: 200), Data(), nil)
        XCTAssertEqual(try empty.get().text, Array("null".utf8))
        let good = serializer.serializeResponse(nil, HTTPResponseHead(status: 200), Data(#"{"Token": 1}"#.utf8), nil)
        XCTAssertEqual(String(decoding: try good.get().text, as: UTF8.self), #"{"Token":"[redacted]"}"#)
    }

    /// A log worker passes the same storage for every record: each result keeps its own text
    /// (the storage is written in place only once no earlier result holds it), and the results
    /// are those of the plain call, failures and `null` included.
    func testReusedStorageGivesTheSameResultsAndKeepsEarlierOnes() throws {
        let keys = JSONKeySet(["token"])
        let policy = EmptyResponsePolicy()
        func plain(_ body: [UInt8]?, method: String? = "GET") -> Result<CompactJSON, Error> {
            guard let body else {
                return CompactJSON.serialize(method: method, status: 200, body: nil, error: nil, allowFragments: true,
                                             redactingKeys: keys, policy: policy)
            }
            return body.withUnsafeBytes {
                CompactJSON.serialize(method: method, status: 200, body: $0, error: nil, allowFragments: true,
                                      redactingKeys: keys, policy: policy)
            }
        }
        var storage: [UInt8] = []
        func reusing(_ body: [UInt8]?, method: String? = "GET") -> Result<CompactJSON, Error> {
            guard let body else {
                return CompactJSON.serialize(method: method, status: 200, body: nil, error: nil, allowFragments: true,
                                             redactingKeys: keys, policy: policy, reusing: &storage)
            }
            return body.withUnsafeBytes {
                CompactJSON.serialize(method: method, status: 200, body: $0, error: nil, allowFragments: true,
                                      redactingKeys: keys, policy: policy, reusing: &storage)
            }
        }
        let first = try reusing(Array(#"{ "token": "t", "a": [1, 2] }"#.utf8)).get().text
        let second = try reusing(Array(#"[ "x" ]"#.utf8)).get().text
        XCTAssertEqual(String(decoding: first, as: UTF8.self), #"{"token":"[redacted]","a":[1,2]}"#)
        XCTAssertEqual(String(decoding: second, as: UTF8.self), #"["x"]"#)
        XCTAssertEqual(String(decoding: try reusing(Array(#"{"b":true}"#.utf8)).get().text, as: UTF8.self), #"{"b":true}"#)
        XCTAssertEqual(String(decoding: first, as: UTF8.self), #"{"token":"[redacted]","a":[1,2]}"#)
        for body in [Array("[1,]".utf8), Array(" 3 ".utf8), []] {
            XCTAssertEqual("\(reusing(body))", "\(plain(body))")
        }
        XCTAssertEqual("\(reusing(nil, method: "HEAD"))", "\(plain(nil, method: "HEAD"))")
        XCTAssertEqual(try reusing(nil, method: "HEAD").get().text, Array("null".utf8))
    }

    /// Seeded mutations of valid documents (byte flips, insertions, deletions, splices of
    /// JSON tokens): every variant gets the same answer from both paths.
    func testRandomMutationsAgree() {
        var rng = JSONTestRandom(seed: 0x7A9_51CE)
        let seeds = [
            #"{"id":17,"password":"x","items":[{"a":1,"b":[true,null,-2.5e3]},{"s":"t\u00e9\n\"q\""}],"token":{"k":[1,2]}}"#,
            #"[1,"two",{"three":3.0,"four":[4,{"a":"é"}]},null,"\ud83d\ude00",{"api_key":[]}]"#,
            " { \"x\" : [ 1 , 2 ] , \"password\" : { \"y\" : \"z\" } } ",
        ].map { Array($0.utf8) }
        let pieces = ["{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\ud83d", "0", "-", "e", ".", " ", "\n", "true",
                      "null", "\"password\":", "\"a\":", "é", "\u{7F}"].map { Array($0.utf8) }
        var checked = 0, valid = 0
        for _ in 0..<20_000 {
            var bytes = seeds[Int(rng.next() % UInt64(seeds.count))]
            for _ in 0..<(1 + Int(rng.next() % 3)) {
                let at = Int(rng.next() % UInt64(bytes.count + 1))
                switch rng.next() % 4 {
                case 0 where at < bytes.count: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1 where at < bytes.count: bytes.remove(at: at)
                case 2: bytes.insert(contentsOf: pieces[Int(rng.next() % UInt64(pieces.count))], at: at)
                default: bytes.insert(UInt8(truncatingIfNeeded: rng.next() % 128), at: at)
                }
            }
            assertAgrees(bytes, "\(bytes)")
            if treeText(bytes) != nil { valid += 1 }
            checked += 1
        }
        XCTAssertEqual(checked, 20_000)
        // Not only refusals: a fair share of the variants are still JSON.
        XCTAssertGreaterThan(valid, 2_000, "valid variants")
    }

    /// Every kind of string byte, number digit and white space placed at every offset of a
    /// token up to three sixteen-byte steps long: the compactor's vectorised scans end at every
    /// lane and in every tail, and its answer stays the tree path's (valid or not).
    func testTokensOfEveryLengthAgreeAtEveryLane() {
        let specials = [#"""#, #"\n"#, #"\u00E9"#, #"\u00e9"#, #"\/"#, #"\""#, #"\ud83d\ude00"#, "é", "日", "🚀", "\u{7F}", "\u{1F}",
                        "\t", #"\x"#, #"\u12"#, "\\"].map { Array($0.utf8) } + [[0xFF], [0xC3], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0x80]]
        for length in 0..<50 {
            let plain = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            for special in specials {
                for key in [false, true] {
                    let string = [0x22] + plain + special + Array("tail".utf8) + [0x22]
                    let document = key ? Array(#"{"#.utf8) + string + Array(#":1,"password":"#.utf8) + string + [0x7D]
                                       : Array("[".utf8) + string + Array(",".utf8) + string + Array("]".utf8)
                    assertAgrees(document, "\(length) \(special) key: \(key)")
                }
            }
            let digits = Array(String(repeating: "7", count: max(1, length)).utf8)
            for number in [digits, [0x2D] + digits, [0x30] + digits, Array("0.".utf8) + digits, Array("1e".utf8) + digits,
                           Array("-2.5E+".utf8) + digits, digits + Array(".".utf8), digits + Array("e".utf8), digits + [0x61]] {
                assertAgrees(Array("[".utf8) + number + Array(",".utf8) + number + Array("]".utf8), "number \(number)")
                assertAgrees(number, "fragment \(number)")
            }
            for white in [" ", "\n", "\r\n", "\t", " \u{0B}", " \u{A0}"] {
                let run = Array(String(repeating: white, count: length).utf8)
                assertAgrees(run + Array("{".utf8) + run + Array(#""a":"#.utf8) + run + Array("[1".utf8) + run + Array(",2]".utf8)
                             + run + Array("}".utf8) + run, "white \(Array(white.utf8)) x \(length)")
            }
        }
    }

    /// Random documents with long strings, numbers and white space runs, then mutated: both
    /// paths agree on every one, valid or not.
    func testRandomLongTokenDocumentsAgree() {
        var rng = JSONTestRandom(seed: 0x1046_70CE)
        let alphabet = Array("abcXYZ09 _-/.:é€😀\\\"\n\t\u{1}".unicodeScalars)
        func below(_ n: Int) -> Int { Int(rng.next() % UInt64(n)) }
        func white() -> String { String(repeating: [" ", "\n", "  ", "\t", ""][below(5)], count: below(3) == 0 ? below(40) : 0) }
        func string() -> String {
            var text = ""
            for _ in 0..<below(60) {
                let scalar = alphabet[below(alphabet.count)]
                switch scalar {
                case "\\": text += [#"\\"#, #"\/"#, #"\u00AB"#, #"\n"#][below(4)]
                case "\"": text += #"\""#
                case "\n": text += below(8) == 0 ? "\n" : #"\n"#
                case "\t": text += #"\t"#
                case "\u{1}": text += #"\u0001"#
                default: text.unicodeScalars.append(scalar)
                }
            }
            return "\"" + text + "\""
        }
        func number() -> String {
            let digits = (0..<(1 + below(25))).map { _ in String(below(10)) }.joined()
            let integer = below(4) == 0 ? "0" : String(1 + below(9)) + digits
            return (below(2) == 0 ? "-" : "") + integer
                + (below(2) == 0 ? ".\(digits)" : "") + (below(3) == 0 ? "e\(["", "+", "-"][below(3)])\(digits.prefix(3))" : "")
        }
        func value(_ depth: Int) -> String {
            switch below(depth > 3 ? 3 : 5) {
            case 0: return string()
            case 1: return number()
            case 2: return ["true", "false", "null"][below(3)]
            case 3:
                return "[" + white() + (0..<below(5)).map { _ in value(depth + 1) }.joined(separator: white() + "," + white()) + white() + "]"
            default:
                let keys = ["\"password\"", "\"Token\"", "\"a\"", "\"id\"", string()]
                return "{" + white() + (0..<below(5)).map { _ in keys[below(keys.count)] + white() + ":" + white() + value(depth + 1) }
                    .joined(separator: white() + "," + white()) + white() + "}"
            }
        }
        var valid = 0
        for round in 0..<3_000 {
            var bytes = Array((white() + value(0) + white()).utf8)
            if round % 3 != 0 {
                let at = below(bytes.count + 1)
                switch below(3) {
                case 0 where at < bytes.count: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1 where at < bytes.count: bytes.remove(at: at)
                default: bytes.insert([0x22, 0x5C, 0x20, 0x30, 0x2C, 0x80, 0x1F][below(7)], at: at)
                }
            }
            assertAgrees(bytes, String(decoding: bytes, as: UTF8.self))
            if treeText(bytes) != nil { valid += 1 }
        }
        XCTAssertGreaterThan(valid, 1_000, "valid documents")
    }
}
