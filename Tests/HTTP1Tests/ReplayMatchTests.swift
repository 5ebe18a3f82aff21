import HTTP1
import XCTest

final class ReplayMatchTests: XCTestCase {
    func testIgnoredParametersAreDroppedAndTheOthersKeepTheirOrder() {
        let m = ReplayMatch(ignoreParams: ["ts", "nonce"])
        XCTAssertEqual(m.key(method: "GET", url: "http://h/a?b=1&ts=99&c=2&nonce=x"), "GET http://h/a?b=1&c=2")
        XCTAssertEqual(m.key(method: "GET", url: "http://h/a?ts=1"), m.key(method: "GET", url: "http://h/a?ts=2"))
        XCTAssertEqual(m.key(method: "GET", url: "http://h/a?ts=1"), "GET http://h/a")
        XCTAssertNotEqual(m.key(method: "GET", url: "http://h/a?b=1"), m.key(method: "GET", url: "http://h/a?b=2"))
        XCTAssertNotEqual(m.key(method: "GET", url: "http://h/a"), m.key(method: "POST", url: "http://h/a"))
        // A parameter named like an ignored one only by prefix is kept; a fragment never counts.
        XCTAssertEqual(m.key(method: "GET", url: "http://h/a?tsx=1#frag"), "GET http://h/a?tsx=1")
    }

    func testWithoutMethodAnyMethodMatches() {
        let m = ReplayMatch(method: false)
        XCTAssertEqual(m.key(method: "GET", url: "http://h/a"), m.key(method: "POST", url: "http://h/a"))
    }
}
