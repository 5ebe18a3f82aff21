import Foundation
import ResponseSerialization
import XCTest

/// The JSON fuzz target's invariants, checked in the ordinary test run on its seed
/// corpus (Fuzz/corpus/json): what is accepted is valid UTF-8, writes and re-parses to
/// an equal value, writes the same text again, and is refused one level below its depth.
final class JSONFuzzRegressionCorpusTests: XCTestCase {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus/json").standardizedFileURL

    func seeds() throws -> [(String, [UInt8])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        return try names.map { ($0, [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent($0)))) }
    }

    private func parse(_ bytes: [UInt8], maxDepth: Int = 512) -> JSON? {
        try? JSONParser.parse(bytes, allowFragments: true, maxDepth: maxDepth)
    }

    private func write(_ value: JSON) -> [UInt8] {
        var out: [UInt8] = []
        JSONWriter.write(value, into: &out)
        return out
    }

    private func depth(_ value: JSON) -> Int {
        switch value {
        case .array(let elements): return 1 + (elements.map(depth).max() ?? 0)
        case .object(let members): return 1 + (members.map { depth($0.value) }.max() ?? 0)
        default: return 0
        }
    }

    func testSeedsRoundTripAndRespectDepth() throws {
        var accepted = 0, refused = 0
        for (name, bytes) in try seeds() {
            guard let value = parse(bytes) else { refused += 1; continue }
            accepted += 1
            XCTAssertNotNil(String(validating: bytes, as: UTF8.self), "\(name): accepted invalid UTF-8")
            let written = write(value)
            XCTAssertEqual(parse(written), value, "\(name): round trip changed the value")
            XCTAssertEqual(parse(written).map(write), written, "\(name): writing is not stable")
            let d = depth(value)
            if d > 0 {
                XCTAssertEqual(parse(bytes, maxDepth: d), value, "\(name): refused at its own depth")
                XCTAssertNil(parse(bytes, maxDepth: d - 1), "\(name): accepted above the depth limit")
            }
        }
        XCTAssertGreaterThanOrEqual(accepted, 10, "too few seeds accepted")
        XCTAssertGreaterThanOrEqual(refused, 10, "too few hostile seeds")
    }

    func testDeepUnclosedSeedFailsOnDepthNotStack() throws {
        let bytes = try XCTUnwrap(seeds().first { $0.0 == "deep-unclosed" }?.1)
        XCTAssertThrowsError(try JSONParser.parse(bytes, maxDepth: 512)) { error in
            XCTAssertTrue(String(describing: error).contains("nesting deeper than 512"), "\(error)")
        }
    }
}
