import Foundation
import ResponseSerialization
import XCTest

/// The msgpack fuzz target's invariants, checked in the ordinary test run on its seed
/// corpus (Fuzz/corpus/msgpack): a refusal names an offset inside the input; what is
/// accepted writes valid JSON that reads back as the same value, no proper prefix of it is
/// accepted, and a byte after it is reported where it starts.
final class MsgPackFuzzRegressionCorpusTests: XCTestCase {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Fuzz/corpus/msgpack").standardizedFileURL

    func testSeedsKeepTheFuzzTargetsInvariants() throws {
        var accepted = 0, refused = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted() {
            let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(name)))
            let value: JSON
            do {
                value = try MsgPackDecoder.decode(bytes)
            } catch {
                refused += 1
                XCTAssert(error.offset >= 0 && error.offset <= bytes.count, "\(name): offset \(error.offset)")
                continue
            }
            accepted += 1
            XCTAssertNil(try? MsgPackDecoder.decode(Array(bytes.dropLast())), "\(name): a proper prefix decoded")
            XCTAssertThrowsError(try MsgPackDecoder.decode(bytes + [0xC0])) { error in
                XCTAssertEqual((error as? MsgPackError)?.offset, bytes.count, name)
            }
            var text: [UInt8] = []
            JSONWriter.write(value, into: &text)
            XCTAssertEqual(try JSONParser.parse(text), value, "\(name): \(String(decoding: text, as: UTF8.self))")
        }
        XCTAssertGreaterThan(accepted, 10)
        XCTAssertGreaterThan(refused, 4)
    }
}
