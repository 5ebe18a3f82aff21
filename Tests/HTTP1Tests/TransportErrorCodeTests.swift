import Foundation
import HTTP1
import XCTest

/// Transport-failure codes are one vocabulary: the enum the engine writes, the record's
/// `error.code`, and the list the README gives readers who filter on it.
final class TransportErrorCodeTests: XCTestCase {
    func testTheReadmeListsEveryCodeTheEngineWrites() throws {
        let readme = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let start = text.range(of: "- `error` is the transport failure"),
              let end = text.range(of: "`TransportError.Code`", range: start.upperBound..<text.endIndex) else {
            return XCTFail("README.md no longer has the transport failure paragraph")
        }
        let paragraph = text[start.upperBound..<end.lowerBound]
        for code in TransportError.Code.allCases {
            XCTAssertTrue(paragraph.contains("`\(code.rawValue)`"), "README.md does not list \(code)")
        }
    }

    func testAnErrorIsWrittenAsItsCodeAndMessage() {
        XCTAssertEqual(TransportError(.upstreamReset, "connection reset").description, "upstreamReset: connection reset")
        XCTAssertEqual(TransportError(code: .shuttingDown, message: "").description, "shuttingDown")
    }
}
