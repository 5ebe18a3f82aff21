import Foundation
import XCTest
@testable import ExchangeLog

/// Rotated logs are compressed with ISA-L and read back with zlib (and by `gzip`, which
/// is what an administrator uses): the two must agree on every size around the chunking.
final class GzipTests: XCTestCase {
    func roundTrip(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let plain = directory.path + "/in.jsonl", packed = directory.path + "/in.jsonl.gz"
        XCTAssertTrue(FileManager.default.createFile(atPath: plain, contents: Data(bytes)))
        try Gzip.compressFile(plain, to: packed, fileSystem: LogFileSystem())
        let compressed = [UInt8](try Data(contentsOf: URL(fileURLWithPath: packed)))
        XCTAssertEqual(Array(compressed.prefix(2)), [0x1F, 0x8B], "gzip magic", file: file, line: line)
        XCTAssertEqual(Gzip.decompress(compressed), bytes, "zlib reads it back (\(bytes.count) bytes)", file: file, line: line)

        let gunzip = Process()
        gunzip.executableURL = URL(fileURLWithPath: "/bin/sh")
        gunzip.arguments = ["-c", "gzip -dc '\(packed)' | cmp -s - '\(plain)'"]
        try gunzip.run()
        gunzip.waitUntilExit()
        XCTAssertEqual(gunzip.terminationStatus, 0, "gzip -dc gives the original \(bytes.count) bytes", file: file, line: line)
    }

    func testEmptySmallAndChunkBoundaries() throws {
        try roundTrip([])
        try roundTrip(Array("{\"kind\":\"http\"}\n".utf8))
        let line = Array(#"{"id":"000001a236ff2ec1-024295","kind":"http","result":{"success":{"score":0.97}}}"#.utf8) + [0x0A]
        for size in [Gzip.chunkSize - 1, Gzip.chunkSize, Gzip.chunkSize + 1, 3 * Gzip.chunkSize + 17] {
            var bytes: [UInt8] = []
            while bytes.count < size { bytes += line }
            try roundTrip(Array(bytes.prefix(size)))
        }
    }

    /// The archiver compresses in steps of `stepBytes`: output must not depend on where
    /// the steps fall.
    func testStepBoundaries() throws {
        let line = Array(#"{"id":"000001a236ff2ec1-024295","kind":"http","result":{"success":{"score":0.97}}}"#.utf8) + [0x0A]
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 * GzipFileCompressor.stepBytes + 1)
        while bytes.count < 2 * GzipFileCompressor.stepBytes + 1 { bytes += line }
        for size in [GzipFileCompressor.stepBytes, 2 * GzipFileCompressor.stepBytes + 1] {
            try roundTrip(Array(bytes.prefix(size)))
        }
    }

    func testIncompressibleInputLargerThanAChunk() throws {
        var state: UInt64 = 0x2545F4914F6CDD1D
        let bytes = (0..<(2 * Gzip.chunkSize + 5)).map { _ -> UInt8 in
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
        try roundTrip(bytes)
    }
}
