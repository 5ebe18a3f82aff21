import Foundation
import XCTest
@testable import ResponseSerialization

/// The protobuf and gRPC fuzz targets' main invariants on their seed corpora
/// (Fuzz/corpus/protobuf, Fuzz/corpus/grpc), in the ordinary test run: a refusal names an
/// offset inside the input; an accepted message writes JSON that parses back the same;
/// gRPC messages tile the body and re-encode to it.
final class ProtobufFuzzRegressionCorpusTests: XCTestCase {
    static func corpus(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Fuzz/corpus/\(name)").standardizedFileURL
    }

    static func seeds(_ name: String) throws -> [(String, [UInt8])] {
        let directory = corpus(name)
        return try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted().map {
            ($0, [UInt8](try Data(contentsOf: directory.appendingPathComponent($0))))
        }
    }

    func testProtobufSeeds() throws {
        let seeds = try Self.seeds("protobuf")
        XCTAssertGreaterThanOrEqual(seeds.count, 10)
        var accepted = 0
        for (name, bytes) in seeds {
            do {
                let value = try ProtobufRawDecoder.decode(bytes)
                accepted += 1
                var written: [UInt8] = []
                JSONWriter.write(value, into: &written)
                XCTAssertEqual(try JSONParser.parse(written), value, name)
            } catch {
                XCTAssertTrue((0...bytes.count).contains(error.offset), "\(name): \(error)")
            }
        }
        XCTAssertGreaterThan(accepted, 5)
    }

    func testGRPCSeeds() throws {
        for (name, bytes) in try Self.seeds("grpc") {
            guard let split = try? GRPCMessages.split(bytes) else { continue }
            var rebuilt: [UInt8] = []
            for m in split.messages {
                let n = m.payload.count
                rebuilt += [m.compressed ? 1 : 0, UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
                rebuilt += bytes[m.payload]
            }
            XCTAssertEqual(rebuilt, Array(bytes.prefix(split.cutShort?.offset ?? bytes.count)), name)
        }
    }
}
