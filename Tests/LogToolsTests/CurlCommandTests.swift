import XCTest
@testable import LogTools
import ResponseSerialization

final class CurlCommandTests: XCTestCase {
    func testQuotingRedactionCommentsAndCurlDefaultsLeftOut() throws {
        let record = RecordedRequestTests.record(
            headers: #"[["Content-Type","application/json"],["Authorization","[redacted]"],["X-Empty",""],["X-Quote","it's"]]"#,
            bodySize: 20, body: #"{"q":"it's $HOME `x`"}"#, url: "http://h/a?b=[1]")
        let text = CurlCommand.render(try RecordedRequest(record: record))
        XCTAssertTrue(text.contains("# redacted in the log, sent as [redacted] (fill in the real value): header Authorization"), text)
        XCTAssertTrue(text.contains(#"-H 'X-Quote: it'\''s'"#), text)
        XCTAssertTrue(text.contains("-H 'X-Empty;'"), "an empty value, which `X-Empty:` would remove: \(text)")
        XCTAssertTrue(text.contains("-H 'User-Agent:'") && text.contains("-H 'Accept:'"), text)
        XCTAssertTrue(text.contains(#"--data-binary '{"q":"it'\''s $HOME `x`"}'"#), text)
        XCTAssertTrue(text.contains("--globoff"), "brackets in the URL are not curl globs: \(text)")
    }

    func testBinaryBodyGoesThroughPrintf() {
        let text = CurlCommand.render(RecordedRequest(id: "x", method: "PUT", url: "http://h/", headers: [],
                                                      body: [0, 0x41, 0x27, 0x25, 0xFF], bodyMissing: nil, redactions: [], notes: []))
        XCTAssertTrue(text.hasPrefix("# tapwire curl x: PUT http://h/\nprintf '\\000A\\047\\045\\377' |\n  curl"), text)
        XCTAssertTrue(text.contains("--data-binary @-"), text)
    }

    func testMissingBodyIsSaidNotGuessed() throws {
        let text = CurlCommand.render(try RecordedRequest(record: RecordedRequestTests.record(headers: "[]", bodySize: 12)))
        XCTAssertTrue(text.contains("# the body is left out: the record holds none of its 12 bytes"), text)
        XCTAssertFalse(text.contains("--data"), text)
    }
}
