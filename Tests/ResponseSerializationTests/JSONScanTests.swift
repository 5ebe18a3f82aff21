@testable import ResponseSerialization
import XCTest

/// The byte-class scans (CJSONScan, sixteen bytes a step) against byte-at-a-time
/// definitions, from every start to every end of random buffers, so that every lane of a
/// step and every tail length is reached with every kind of byte.
final class JSONScanTests: XCTestCase {
    /// Bytes on both sides of every class boundary the scans test.
    static let palette: [UInt8] = [0x00, 0x08, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x2F, 0x30, 0x35, 0x39,
                                   0x3A, 0x5B, 0x5C, 0x5D, 0x61, 0x7E, 0x7F, 0x80, 0xA0, 0xBF, 0xC3, 0xE2, 0xF0, 0xFF]

    func reference(_ bytes: [UInt8], _ start: Int, _ end: Int, stopsAt stops: (UInt8) -> Bool) -> Int {
        var i = start
        while i < end && !stops(bytes[i]) { i += 1 }
        return i
    }

    func testScansMatchByteAtATimeDefinitions() {
        var rng = JSONTestRandom(seed: 0x5CA_4)
        var checked = 0
        for round in 0..<300 {
            let count = round % 70
            // Mostly one class with a few others, so that long runs end at every lane.
            let run = Self.palette[Int(rng.next() % UInt64(Self.palette.count))]
            let bytes: [UInt8] = (0..<count).map { _ in
                rng.next() % 6 == 0 ? Self.palette[Int(rng.next() % UInt64(Self.palette.count))] : run
            }
            bytes.withUnsafeBufferPointer { buffer in
                guard let p = buffer.baseAddress else { return }
                for start in 0...count {
                    for end in start...count {
                        XCTAssertEqual(JSONCompactor.scanPlain(p, from: start, end: end),
                                       reference(bytes, start, end) { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 || $0 >= 0x80 },
                                       "scanPlain \(bytes) \(start)..<\(end)")
                        XCTAssertEqual(JSONCompactor.scanDigits(p, from: start, end: end),
                                       reference(bytes, start, end) { $0 < 0x30 || $0 > 0x39 }, "scanDigits \(bytes) \(start)..<\(end)")
                        XCTAssertEqual(JSONCompactor.scanWhitespace(p, from: start, end: end),
                                       reference(bytes, start, end) { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D) },
                                       "scanWhitespace \(bytes) \(start)..<\(end)")
                        checked += 1
                    }
                }
            }
        }
        XCTAssertGreaterThan(checked, 100_000)
    }
}
