import Foundation
import XCTest
@testable import WebSocket

/// The websocket fuzz target's invariants (Fuzz/WebSocketFuzz) on its seed corpus
/// (Fuzz/corpus/websocket), in the ordinary test run: the first byte picks the options, the
/// stream in chunks and whole gives the same messages, error and control frames.
final class WebSocketFuzzRegressionCorpusTests: XCTestCase {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus/websocket").standardizedFileURL

    struct Outcome: Equatable {
        var messages: [WebSocketMessage] = []
        var failed = false
        var close: WebSocketClose?
        var pings: UInt64 = 0
    }

    func run(_ stream: [UInt8], options: UInt8, chunk: Int) -> Outcome {
        let deflate: PerMessageDeflate? = options & 2 == 0 ? nil
            : PerMessageDeflate(serverNoContextTakeover: options & 4 != 0, clientNoContextTakeover: options & 8 != 0)
        var parser = WebSocketMessageParser(fromClient: options & 1 != 0, deflate: deflate, keepBytes: 64, maxDecodedBytes: 1 << 16)
        var outcome = Outcome()
        var i = 0
        while i < stream.count {
            let piece = Array(stream[i..<min(stream.count, i + chunk)])
            i += piece.count
            do { try piece.withUnsafeBytes { try parser.parse($0, into: &outcome.messages) } } catch {
                outcome.failed = true
                break
            }
        }
        outcome.close = parser.close
        outcome.pings = parser.pings
        return outcome
    }

    func testSeedsKeepTheInvariants() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        XCTAssertGreaterThanOrEqual(names.count, 8)
        for name in names {
            let input = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(name)))
            guard let options = input.first else { continue }
            let stream = Array(input.dropFirst())
            let whole = run(stream, options: options, chunk: max(1, stream.count))
            for chunk in [1, 2, 3, 7, 64] {
                XCTAssertEqual(run(stream, options: options, chunk: chunk), whole, "\(name), chunks of \(chunk)")
            }
            for m in whole.messages {
                XCTAssertLessThanOrEqual(m.payload.count, 64, name)
                XCTAssertTrue(m.truncated || UInt64(m.payload.count) == m.size, name)
            }
            XCTAssertEqual(whole.failed, name == "reserved-opcode", name)
        }
    }
}
