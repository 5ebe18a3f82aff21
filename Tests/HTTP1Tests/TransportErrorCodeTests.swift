import Foundation
import HTTP1
import XCTest

/// Transport-failure codes are one vocabulary: the enum the engine writes, the record's
/// `error.code`, and the table docs/records.md gives readers who filter on it.
final class TransportErrorCodeTests: XCTestCase {
    func testTheRecordsDocListsEveryCodeTheEngineWrites() throws {
        let doc = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/records.md")
        let text = try String(contentsOf: doc, encoding: .utf8)
        guard let start = text.range(of: "### `error` codes"),
              let end = text.range(of: "\n### ", range: start.upperBound..<text.endIndex) else {
            return XCTFail("docs/records.md no longer has the `error` codes section")
        }
        let section = text[start.upperBound..<end.lowerBound]
        let listed = Set(section.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `"), let close = line.dropFirst(3).firstIndex(of: "`") else { return nil }
            return String(line[line.index(line.startIndex, offsetBy: 3)..<close])
        })
        XCTAssertEqual(listed, Set(TransportError.Code.allCases.map(\.rawValue)),
                       "docs/records.md's table and TransportError.Code differ")
    }

    func testAnErrorIsWrittenAsItsCodeAndMessage() {
        XCTAssertEqual(TransportError(.upstreamReset, "connection reset").description, "upstreamReset: connection reset")
        XCTAssertEqual(TransportError(code: .shuttingDown, message: "").description, "shuttingDown")
    }
}
