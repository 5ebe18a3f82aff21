import XCTest
@testable import HTTP1

/// The word-at-a-time searches agree with a plain byte loop at every offset and length.
final class ByteSearchTests: XCTestCase {
    private func naiveFirstIndex(of target: UInt8, _ bytes: [UInt8], _ from: Int, _ to: Int) -> Int? {
        (from..<to).first { bytes[$0] == target }
    }

    private func naiveFirstControl(_ bytes: [UInt8], _ from: Int, _ to: Int) -> Int {
        (from..<to).first { bytes[$0] < 0x20 || bytes[$0] == 0x7f } ?? to
    }

    func testFirstIndexMatchesByteLoop() {
        var rng = SeededGenerator(seed: 99)
        let palette: [UInt8] = [0x0a, 0x0d, 0x0b, 0x8a, 0xff, 0x00, 0x61, 0x09, 0x0a ^ 0x80]
        for _ in 0..<500 {
            let count = Int.random(in: 0...40, using: &rng)
            let bytes = (0..<count).map { _ in palette.randomElement(using: &rng) ?? 0 }
            let from = Int.random(in: 0...count, using: &rng)
            let to = Int.random(in: from...count, using: &rng)
            bytes.withUnsafeBytes { buffer in
                XCTAssertEqual(ByteSearch.firstIndex(of: 0x0a, in: buffer, from: from, to: to),
                               naiveFirstIndex(of: 0x0a, bytes, from, to), "\(bytes) \(from) \(to)")
                XCTAssertEqual(ByteSearch.firstIndex(of: 0x0d, in: buffer, from: from, to: to),
                               naiveFirstIndex(of: 0x0d, bytes, from, to), "\(bytes) \(from) \(to)")
            }
        }
    }

    func testFirstControlMatchesByteLoop() {
        var rng = SeededGenerator(seed: 5)
        let palette: [UInt8] = [0x1f, 0x20, 0x7f, 0x7e, 0x80, 0xff, 0x00, 0x09, 0x0d, 0x41, 0x9f]
        for _ in 0..<500 {
            let count = Int.random(in: 0...40, using: &rng)
            let bytes = (0..<count).map { _ in palette.randomElement(using: &rng) ?? 0 }
            let from = Int.random(in: 0...count, using: &rng)
            let to = Int.random(in: from...count, using: &rng)
            bytes.withUnsafeBytes { buffer in
                XCTAssertEqual(ByteSearch.firstControl(in: buffer, from: from, to: to),
                               naiveFirstControl(bytes, from, to), "\(bytes) \(from) \(to)")
            }
        }
    }

    func testEveryByteClassifiedAsTheRFCSays() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for c in 0...255 {
            let b = UInt8(c)
            XCTAssertEqual(ByteClass.isToken(b), tchar.contains(b), "byte \(c)")
            XCTAssertEqual(ByteClass.isFieldValue(b), b == 9 || (b >= 0x20 && b != 0x7f), "byte \(c)")
        }
    }
}
