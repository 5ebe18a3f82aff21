import ResponseSerialization
import XCTest

final class JSONPointerTests: XCTestCase {
    private func pointer(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONPointer {
        do { return try JSONPointer(text) } catch {
            XCTFail("\(text) should be a pointer: \(error)", file: file, line: line)
            return JSONPointer(tokens: [])
        }
    }

    private func json(_ text: String) -> JSON {
        (try? JSONParser.parse(text)) ?? .null
    }

    // The RFC 6901 §5 example document.
    private let rfcDocument = #"{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}"#

    func testParsingAndUnescaping() throws {
        XCTAssertEqual(pointer("").tokens, [])
        XCTAssertEqual(pointer("/").tokens, [""])
        XCTAssertEqual(pointer("/foo/0").tokens, ["foo", "0"])
        XCTAssertEqual(pointer("/a~1b").tokens, ["a/b"])
        XCTAssertEqual(pointer("/m~0n").tokens, ["m~n"])
        XCTAssertEqual(pointer("/~01").tokens, ["~1"], "~0 is unescaped after ~1, so ~01 is ~1")
        XCTAssertEqual(pointer("//x/").tokens, ["", "x", ""])
        XCTAssertEqual(pointer("/é/😀").tokens, ["é", "😀"])
        XCTAssertEqual(pointer("/a~1b/m~0n").description, "/a~1b/m~0n")
        XCTAssertEqual(JSONPointer(tokens: ["a/b", "~"]).description, "/a~1b/~0")
    }

    func testRejectsMalformedPointers() {
        let cases: [(String, Int)] = [("foo", 0), ("#/foo", 0), ("/a~", 2), ("/a~2", 2), ("/~x/b", 1)]
        for (text, offset) in cases {
            XCTAssertThrowsError(try JSONPointer(text), text) { error in
                XCTAssertEqual((error as? JSONPointerError)?.offset, offset, text)
            }
        }
    }

    func testRFCExamples() {
        let document = json(rfcDocument)
        let expected: [(String, JSON)] = [
            ("", document), ("/foo", json(#"["bar","baz"]"#)), ("/foo/0", .string("bar")), ("/", .number("0")),
            ("/a~1b", .number("1")), ("/c%d", .number("2")), ("/e^f", .number("3")), ("/g|h", .number("4")),
            ("/i\\j", .number("5")), ("/k\"l", .number("6")), ("/ ", .number("7")), ("/m~0n", .number("8")),
        ]
        for (text, value) in expected {
            XCTAssertEqual(document.value(at: pointer(text)), value, text)
        }
    }

    func testAbsentAndInvalidIndexes() {
        let document = json(#"{"a":[10,20,30],"b":{"0":"zero"},"s":"text"}"#)
        XCTAssertEqual(document.value(at: pointer("/a/2")), .number("30"))
        XCTAssertNil(document.value(at: pointer("/a/3")))
        XCTAssertNil(document.value(at: pointer("/a/-")))
        XCTAssertNil(document.value(at: pointer("/a/01")))
        XCTAssertNil(document.value(at: pointer("/a/+1")))
        XCTAssertNil(document.value(at: pointer("/a/99999999999999999999")))
        XCTAssertEqual(document.value(at: pointer("/b/0")), .string("zero"), "numeric token on an object is a key")
        XCTAssertNil(document.value(at: pointer("/s/0")))
        XCTAssertNil(document.value(at: pointer("/missing")))
    }

    func testDuplicateKeysAreAllAddressed() {
        let document = json(#"{"a":{"x":1},"b":2,"a":{"y":3}}"#)
        XCTAssertEqual(document.values(at: pointer("/a")), [json(#"{"x":1}"#), json(#"{"y":3}"#)])
        XCTAssertEqual(document.value(at: pointer("/a")), json(#"{"x":1}"#))
        XCTAssertEqual(document.value(at: pointer("/a/y")), .number("3"), "first match in document order")
        XCTAssertEqual(document.redacting([pointer("/a")]).compactText,
                       #"{"a":"[redacted]","b":2,"a":"[redacted]"}"#)
        XCTAssertEqual(document.selecting([pointer("/a/y")]).compactText, #"{"a":{"y":3}}"#)
    }

    func testSelectingKeepsStructureAndOrder() {
        let document = json(#"{"full_name":"o/r","id":7,"owner":{"login":"o","id":9,"url":"u"},"tags":["a","b","c","d"]}"#)
        let selected = document.selecting([pointer("/tags/3"), pointer("/owner/login"), pointer("/full_name"),
                                           pointer("/tags/1"), pointer("/nothing/here"), pointer("/owner/absent")])
        XCTAssertEqual(selected.compactText, #"{"full_name":"o/r","owner":{"login":"o"},"tags":["b","d"]}"#)
        XCTAssertEqual(document.selecting([pointer("")]), document)
        XCTAssertEqual(document.selecting([pointer("/owner"), pointer("/owner/id")]).compactText,
                       #"{"owner":{"login":"o","id":9,"url":"u"}}"#, "a whole member wins over a part of it")
        XCTAssertEqual(document.selecting([pointer("/missing")]), .object([]))
        XCTAssertEqual(document.selecting([]), .object([]))
        XCTAssertEqual(json("[1,[2,3]]").selecting([pointer("/1/0")]).compactText, "[[2]]")
        XCTAssertEqual(json("[1]").selecting([pointer("/5")]), .array([]))
        XCTAssertEqual(JSON.string("x").selecting([pointer("/a")]), .null)
    }

    func testRedactingReplacesOnlyPresentPaths() {
        let document = json(#"{"owner":{"id":9,"login":"o"},"list":[{"t":1},{"t":2}],"x":null}"#)
        XCTAssertEqual(document.redacting([pointer("/owner/id"), pointer("/list/1/t"), pointer("/absent/path"),
                                           pointer("/list/7")]).compactText,
                       #"{"owner":{"id":"[redacted]","login":"o"},"list":[{"t":1},{"t":"[redacted]"}],"x":null}"#)
        XCTAssertEqual(document.redacting([pointer("/x")], with: .null), document)
        XCTAssertEqual(document.redacting([pointer("/owner")], with: .number("0")).compactText,
                       #"{"owner":0,"list":[{"t":1},{"t":2}],"x":null}"#)
        XCTAssertEqual(document.redacting([pointer("")]), .string("[redacted]"))
        XCTAssertEqual(document.redacting([]), document)
    }

    func testRedactingKeysAtAnyDepthCaseInsensitively() {
        let document = json(#"""
        {"user":"u","Password":"p1","nested":{"TOKEN":"t","keep":1,"deeper":[{"access_token":"a"},{"password":{"x":1}}]},
         "list":[[{"token":2}]],"tokens":"not exactly","pass":"word","token":null}
        """#)
        let redacted = document.redactingKeys(["password", "token", "access_token"])
        XCTAssertEqual(redacted.compactText, #"""
        {"user":"u","Password":"[redacted]","nested":{"TOKEN":"[redacted]","keep":1,"deeper":[{"access_token":"[redacted]"},{"password":"[redacted]"}]},"list":[[{"token":"[redacted]"}]],"tokens":"not exactly","pass":"word","token":"[redacted]"}
        """#)
        XCTAssertEqual(document.redactingKeys(["PassWord"], with: .null).value(at: pointer("/Password")), .null,
                       "keys given in mixed case still match")
        XCTAssertEqual(document.redactingKeys([]), document)
        XCTAssertEqual(json(#"{"é":1,"É":2}"#).redactingKeys(["é"]).compactText, #"{"é":"[redacted]","É":2}"#,
                       "only ASCII letters fold")
    }
}
