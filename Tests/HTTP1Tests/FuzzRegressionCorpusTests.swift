import Foundation
import XCTest
@testable import HTTP1

/// The HTTP/1 fuzz target's invariants, checked in the ordinary test run on its seed
/// corpus (Fuzz/corpus/http1), so a change that breaks them fails here too and not only
/// under libFuzzer: a shorter prefix of a head is incomplete, an accepted head's wire
/// form re-parses to the same head, and a body frames the same however reads are cut.
final class FuzzRegressionCorpusTests: XCTestCase {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus/http1").standardizedFileURL

    func seeds() throws -> [(String, [UInt8])] {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        return try names.map { ($0, [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent($0)))) }
    }

    func testSeedCorpusIsThere() throws {
        let seeds = try seeds()
        XCTAssertGreaterThanOrEqual(seeds.count, 30)
        XCTAssertTrue(seeds.contains { $0.0 == "post-chunked" })
    }

    func testRequestSeedsKeepTheFuzzInvariants() throws {
        var accepted = 0
        for (name, bytes) in try seeds() {
            guard case .complete(let head, let length)? = try? Wire.parseRequest(bytes) else { continue }
            accepted += 1
            checkPrefixes(name, bytes, length: length) { prefix throws(HTTPParseError) in
                if case .complete = try Wire.parseRequest(prefix) { return true } else { return false }
            }
            let wire = head.serialized()
            guard case .complete(let again, let n)? = try? Wire.parseRequest(wire) else {
                XCTFail("\(name): serialized head refused"); continue
            }
            XCTAssertEqual(again, head, name)
            XCTAssertEqual(n, wire.count, name)
            if let framing = try? head.bodyFraming() { checkSplits(name, framing, Array(bytes[length...])) }
        }
        XCTAssertGreaterThanOrEqual(accepted, 10, "too few seeds accepted to mean anything")
    }

    func testResponseSeedsKeepTheFuzzInvariants() throws {
        var accepted = 0
        for (name, bytes) in try seeds() {
            guard case .complete(let head, let length)? = try? Wire.parseResponse(bytes) else { continue }
            accepted += 1
            checkPrefixes(name, bytes, length: length) { prefix throws(HTTPParseError) in
                if case .complete = try Wire.parseResponse(prefix) { return true } else { return false }
            }
            let wire = head.serialized()
            guard case .complete(let again, let n)? = try? Wire.parseResponse(wire) else {
                XCTFail("\(name): serialized head refused"); continue
            }
            XCTAssertEqual(again, head, name)
            XCTAssertEqual(n, wire.count, name)
            for method in ["GET", "HEAD", "CONNECT"] {
                if let framing = try? head.bodyFraming(requestMethod: method) { checkSplits(name, framing, Array(bytes[length...])) }
            }
        }
        XCTAssertGreaterThanOrEqual(accepted, 5, "too few seeds accepted to mean anything")
    }

    /// Every proper prefix of a complete head is incomplete (never refused, never complete).
    private func checkPrefixes(_ name: String, _ bytes: [UInt8], length: Int,
                               isComplete: ([UInt8]) throws(HTTPParseError) -> Bool) {
        for cut in 0..<length {
            do throws(HTTPParseError) {
                let complete = try isComplete(Array(bytes[..<cut]))
                XCTAssertFalse(complete, "\(name): complete at \(cut) of \(length)")
            } catch {
                XCTFail("\(name): prefix of \(cut) bytes refused: \(error.reason)")
            }
        }
    }

    /// One read, one byte per read and three-byte reads give the same body and end.
    private func checkSplits(_ name: String, _ framing: BodyFraming, _ body: [UInt8]) {
        let whole = runFramer(framing, [body])
        let bytewise = runFramer(framing, body.map { [$0] })
        let threes = runFramer(framing, stride(from: 0, to: body.count, by: 3).map { Array(body[$0..<min($0 + 3, body.count)]) })
        for other in [bytewise, threes] {
            XCTAssertEqual(other.error == nil, whole.error == nil, name)
            XCTAssertEqual(other.complete, whole.complete, name)
            if whole.error == nil {
                XCTAssertEqual(other.consumed, whole.consumed, name)
                XCTAssertEqual(other.payload, whole.payload, name)
            }
        }
    }
}
