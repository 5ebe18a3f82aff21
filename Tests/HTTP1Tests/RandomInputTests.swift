import XCTest
@testable import HTTP1

/// Seeded random and mutated inputs: the parsers must answer (head, incomplete or
/// a refusal) without trapping, and what they accept must be self-consistent.
final class RandomInputTests: XCTestCase {
    private static let alphabet = Wire.bytes("GET /HTTP1.0:\r\n \t;=,chunkedHost0123456789abcdefABCDEF") + [0, 0x7f, 0x80, 0xff, 0x0b]

    private func randomBytes(_ rng: inout SeededGenerator, maxCount: Int) -> [UInt8] {
        let count = Int.random(in: 0...maxCount, using: &rng)
        let biased = Bool.random(using: &rng)
        return (0..<count).map { _ in
            biased ? Self.alphabet.randomElement(using: &rng) ?? 0 : UInt8.random(in: 0...255, using: &rng)
        }
    }

    private static let seeds: [String] = [
        "GET / HTTP/1.1\r\nHost: h\r\n\r\n",
        "POST http://example.com:8080/p?q HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\nContent-Length: 5, 5\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n",
    ]

    private static let chunkedSeed = Wire.bytes("4;a=b\r\nWiki\r\n5\r\npedia\r\n0\r\nT: v\r\n\r\n")

    /// Flips, inserts and deletes a few bytes of a valid message.
    private func mutate(_ input: [UInt8], _ rng: inout SeededGenerator) -> [UInt8] {
        var bytes = input
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let position = Int.random(in: 0...bytes.count, using: &rng)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0 where position < bytes.count: bytes[position] = Self.alphabet.randomElement(using: &rng) ?? 0
            case 1: bytes.insert(UInt8.random(in: 0...255, using: &rng), at: position)
            default: if position < bytes.count { bytes.remove(at: position) }
            }
        }
        return bytes
    }

    private func exerciseHeadParsers(_ bytes: [UInt8]) -> Int {
        var accepted = 0
        if case .complete(let head, let length)? = try? Wire.parseRequest(bytes, max: 256) {
            accepted += 1
            XCTAssertLessThanOrEqual(length, min(bytes.count, 256))
            _ = try? head.bodyFraming()
            _ = try? head.proxyForm()
            _ = head.wantsClose
            // What we accept, we must be able to write and read back identically.
            let wire = head.serialized()
            if case .complete(let again, _)? = try? Wire.parseRequest(wire, max: 1024) {
                XCTAssertEqual(again, head)
            } else {
                XCTFail("serialized head does not parse back: \(wire)")
            }
        }
        if case .complete(let head, let length)? = try? Wire.parseResponse(bytes, max: 256) {
            accepted += 1
            XCTAssertLessThanOrEqual(length, min(bytes.count, 256))
            _ = try? head.bodyFraming(requestMethod: "GET")
        }
        return accepted
    }

    func testRandomBytesNeverTrapTheHeadParsers() {
        var rng = SeededGenerator(seed: 0x7A9_3133)
        for _ in 0..<3000 { _ = exerciseHeadParsers(randomBytes(&rng, maxCount: 300)) }
    }

    func testMutatedHeadsNeverTrapAndSomeStillParse() {
        var rng = SeededGenerator(seed: 42)
        var accepted = 0
        for i in 0..<4000 {
            let seed = Wire.bytes(Self.seeds[i % Self.seeds.count])
            accepted += exerciseHeadParsers(mutate(seed, &rng))
        }
        XCTAssertGreaterThan(accepted, 0, "mutations never produced a valid head: the test exercises nothing")
    }

    func testRandomBytesNeverTrapTheFramer() {
        var rng = SeededGenerator(seed: 7)
        let framings: [BodyFraming] = [.chunked, .contentLength(17), .closeDelimited, .none]
        for i in 0..<3000 {
            let bytes = i % 2 == 0 ? randomBytes(&rng, maxCount: 200) : mutate(Self.chunkedSeed, &rng)
            let split = Int.random(in: 0...bytes.count, using: &rng)
            let run = runFramer(framings[i % framings.count], [Array(bytes[..<split]), Array(bytes[split...])])
            XCTAssertLessThanOrEqual(run.consumed, bytes.count)
            XCTAssertLessThanOrEqual(run.payload.count, run.consumed)
        }
    }
}
