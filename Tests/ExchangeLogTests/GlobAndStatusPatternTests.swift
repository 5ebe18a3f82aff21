import XCTest
@testable import ExchangeLog

/// The one glob and the one status pattern that rules, config validation and queries share.
final class GlobAndStatusPatternTests: XCTestCase {
    func testStarMatchesAnyRunAndQuestionMarkOneCharacter() {
        let cases: [(String, String, Bool)] = [
            ("*.example.com", "api.example.com", true), ("*.example.com", "example.com", false),
            ("*", "", true), ("", "", true), ("", "a", false), ("a*", "a", true), ("*a", "ba", true),
            ("/v1/*", "/v1/users/2", true), ("/v1/*/items", "/v1/a/b/items", true), ("/v1/*/items", "/v1/items", false),
            ("a?c", "abc", true), ("a?c", "ac", false), ("a?c", "abbc", false), ("??", "é!", true), ("?", "é", true),
            ("a**b", "ab", true), ("*b*b*", "abcbd", true), ("*b*b*", "abc", false), ("a*b?d", "axxbcd", true),
        ]
        for (pattern, text, expected) in cases {
            XCTAssertEqual(Glob(pattern).matches(text), expected, "\(pattern) vs \(text)")
        }
    }

    func testCaseInsensitiveGlobsFoldBothSides() {
        XCTAssertTrue(Glob("API.*.COM", caseInsensitive: true).matches("api.example.com"))
        XCTAssertFalse(Glob("API.*.COM").matches("api.example.com"))
        XCTAssertEqual(Glob("a*b?c").literals, ["a", "b", "c"])
        XCTAssertFalse(Glob("abc").hasWildcards)
        XCTAssertTrue(Glob("a?").hasWildcards)
    }

    /// Backtracking resumes only from the last `*`: a pattern made to blow up a naive matcher
    /// still answers (no timing asserted; a naive one would not finish).
    func testManyStarsAgainstALongNearMissAnswer() {
        let text = String(repeating: "a", count: 5000)
        XCTAssertFalse(Glob(String(repeating: "a*", count: 40) + "b").matches(text))
        XCTAssertTrue(Glob(String(repeating: "a*", count: 40)).matches(text))
    }

    func testStatusPatterns() {
        XCTAssertEqual(StatusPattern("404")?.range, 404...404)
        XCTAssertEqual(StatusPattern("4xx")?.range, 400...499)
        XCTAssertEqual(StatusPattern("5XX")?.range, 500...599)
        XCTAssertEqual(StatusPattern("200-299")?.range, 200...299)
        XCTAssertEqual(StatusPattern(" 201 ")?.range, 201...201)
        for bad in ["4x", "6xx", "299-200", "99", "1000", "abc", "", "2xx-3xx"] {
            XCTAssertNil(StatusPattern(bad), bad)
        }
        XCTAssertTrue(StatusPattern("2xx")!.matches(204))
        XCTAssertFalse(StatusPattern("2xx")!.matches(301))
        XCTAssertEqual(StatusPattern(range: 404...404).description, "404")
    }
}
