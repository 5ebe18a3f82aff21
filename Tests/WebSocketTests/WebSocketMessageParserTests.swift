import Foundation
import XCTest
@testable import WebSocket

final class WebSocketMessageParserTests: XCTestCase {
    typealias P = WebSocketMessageParser
    let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    func parser(client: Bool = false, deflate: PerMessageDeflate? = nil, keep: Int = 1 << 20, maxDecoded: Int = 8 << 20) -> P {
        P(fromClient: client, deflate: deflate, keepBytes: keep, maxDecodedBytes: maxDecoded)
    }

    /// Feeds `bytes` in chunks of `size` (a copy, as the engine hands over).
    func feed(_ p: inout P, _ bytes: [UInt8], chunk size: Int = .max) throws -> [WebSocketMessage] {
        var out: [WebSocketMessage] = []
        var i = 0
        while i < bytes.count {
            let piece = Array(bytes[i..<min(bytes.count, i + max(1, min(size, bytes.count)))])
            i += piece.count
            try piece.withUnsafeBytes { try p.parse($0, into: &out) }
        }
        return out
    }

    func texts(_ messages: [WebSocketMessage]) -> [String] { messages.map { String(decoding: $0.payload, as: UTF8.self) } }

    func testAServerTextFrameIsOneMessage() throws {
        var p = parser()
        let m = try feed(&p, WebSocketFrames.text(#"{"a":1}"#))
        XCTAssertEqual(texts(m), [#"{"a":1}"#])
        XCTAssertEqual(m.first?.opcode, .text)
        XCTAssertEqual(m.first?.size, 7)
        XCTAssertEqual(m.first?.truncated, false)
        XCTAssertEqual(p.messages, 1)
    }

    func testMaskedClientFramesParseTheSameInChunksOfAnySize() throws {
        let payload = String(repeating: "0123456789abcdef", count: 20) + "!"
        let stream = WebSocketFrames.text(payload, fin: false, mask: mask) + WebSocketFrames.frame(0, Array("tail".utf8), mask: mask)
            + WebSocketFrames.frame(2, Array(0..<200).map { UInt8($0) } + [255], mask: [1, 2, 3, 4])
        for size in [1, 2, 3, 5, 7, 8, 13, 64, 1000] {
            var p = parser(client: true)
            let m = try feed(&p, stream, chunk: size)
            XCTAssertEqual(m.count, 2, "chunk \(size)")
            XCTAssertEqual(m.first.map { String(decoding: $0.payload, as: UTF8.self) }, payload + "tail", "chunk \(size)")
            XCTAssertEqual(m.last?.opcode, .binary)
            XCTAssertEqual(m.last?.payload, Array(0..<200).map { UInt8($0) } + [255], "chunk \(size)")
        }
    }

    /// The chunk is only read (the engine's queued copy is shared): masked payloads, kept or
    /// inflated (through the 64 KiB unmask buffer, past it here), in chunks that split the
    /// mask anywhere, come out whole and unmasked, and the chunks are as they were.
    func testMaskedPayloadsComeOutUnmaskedAndTheChunksAreNotWritten() throws {
        let payload = (0..<(2 * 65_536 + 4099)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let noise = (0..<(3 * 65_536)).map { UInt8(truncatingIfNeeded: ($0 &* 2_654_435_761) >> 13) }
        let deflater = MessageDeflater()
        let stream = WebSocketFrames.frame(2, payload, mask: mask) + WebSocketFrames.text("next", mask: [9, 8, 7, 6])
            + WebSocketFrames.frame(2, deflater.compress(noise), rsv: 4, mask: [5, 6, 7, 8])
            + WebSocketFrames.frame(9, Array("ping".utf8), mask: [1, 2, 3, 4])
            + WebSocketFrames.frame(2, Array(payload[0..<13]), fin: false, mask: [0xAA, 0xBB, 0xCC, 0xDD])
            + WebSocketFrames.frame(0, Array(payload[13..<40]), mask: [0x11, 0x22, 0x33, 0x44])
        for size in [stream.count, 70_001, 4099, 7, 1] {
            var p = parser(client: true, deflate: PerMessageDeflate())
            var out: [WebSocketMessage] = []
            var i = 0
            while i < stream.count {
                let piece = Array(stream[i..<min(stream.count, i + size)])
                try piece.withUnsafeBytes { try p.parse($0, into: &out) }
                XCTAssertEqual(piece, Array(stream[i..<min(stream.count, i + size)]), "chunk \(size) at \(i) was written to")
                i += piece.count
            }
            XCTAssertEqual(out.count, 4, "chunk \(size)")
            XCTAssertEqual(out.first?.payload, payload, "chunk \(size)")
            XCTAssertEqual(out.dropFirst().first.map { String(decoding: $0.payload, as: UTF8.self) }, "next", "chunk \(size)")
            XCTAssertEqual(out.dropFirst(2).first?.payload, noise, "chunk \(size): inflated")
            XCTAssertEqual(out.last?.payload, Array(payload[0..<40]), "chunk \(size): fragments")
            XCTAssertEqual(p.pings, 1)
        }
    }

    /// The unmask buffer a small message leaves is kept for the next chunk; the one a large
    /// message grew is let go, since the parser lives as long as its connection.
    func testTheUnmaskBufferKeptBetweenChunksStaysSmall() throws {
        var p = parser(client: true)
        _ = try feed(&p, WebSocketFrames.text(String(repeating: "a", count: 1000), mask: mask))
        XCTAssertGreaterThan(p.unmaskBufferBytes, 0, "kept for the next small message")
        XCTAssertLessThanOrEqual(p.unmaskBufferBytes, WebSocketFrameParser.keptUnmaskBytes)
        let big = try feed(&p, WebSocketFrames.frame(2, [UInt8](repeating: 7, count: 200_000), mask: mask))
        XCTAssertEqual(big.first?.payload.count, 200_000)
        XCTAssertLessThanOrEqual(p.unmaskBufferBytes, WebSocketFrameParser.keptUnmaskBytes, "a large message's buffer was kept")
    }

    func testFragmentsAreReassembledAroundControlFrames() throws {
        var p = parser()
        let stream = WebSocketFrames.text("Hel", fin: false) + WebSocketFrames.frame(9, Array("ping".utf8))
            + WebSocketFrames.frame(0, Array("lo, ".utf8), fin: false) + WebSocketFrames.frame(10, [])
            + WebSocketFrames.frame(0, Array("world".utf8))
        XCTAssertEqual(texts(try feed(&p, stream, chunk: 3)), ["Hello, world"])
        XCTAssertEqual(p.pings, 1)
        XCTAssertEqual(p.pongs, 1)
    }

    func testTheFirstCloseKeepsItsCodeAndReason() throws {
        var p = parser()
        _ = try feed(&p, WebSocketFrames.frame(8, [0x0F, 0xA1] + Array("bye now".utf8)) + WebSocketFrames.frame(8, [0x03, 0xE8]))
        XCTAssertEqual(p.close, WebSocketClose(code: 4001, reason: "bye now"))
        var empty = parser()
        _ = try feed(&empty, WebSocketFrames.frame(8, []))
        XCTAssertEqual(empty.close, WebSocketClose(code: nil, reason: nil))
    }

    func testAMessageLargerThanKeepBytesIsCountedWholeAndKeptCut() throws {
        var p = parser(client: true, keep: 10)
        let big = [UInt8](repeating: 0x61, count: 70_000)
        let m = try feed(&p, WebSocketFrames.frame(2, big, fin: false, mask: mask) + WebSocketFrames.frame(0, big, mask: mask), chunk: 4096)
        XCTAssertEqual(m.first?.size, 140_000)
        XCTAssertEqual(m.first?.payload, [UInt8](repeating: 0x61, count: 10))
        XCTAssertEqual(m.first?.truncated, true)
    }

    func testCompressedMessagesInflateWithContextTakeover() throws {
        let deflater = MessageDeflater()
        let first = Array(#"{"greeting":"hello hello hello hello"}"#.utf8)
        let second = Array(#"{"greeting":"hello hello hello hello","n":2}"#.utf8)
        let c1 = deflater.compress(first), c2 = deflater.compress(second)
        XCTAssertLessThan(c2.count, second.count / 2, "the second refers back to the first")
        let stream = WebSocketFrames.frame(1, c1, rsv: 4) + WebSocketFrames.frame(1, Array(c2.prefix(5)), fin: false, rsv: 4)
            + WebSocketFrames.frame(0, Array(c2.dropFirst(5)))
        for size in [1, 4, 1000] {
            var p = parser(deflate: PerMessageDeflate())
            let m = try feed(&p, stream, chunk: size)
            XCTAssertEqual(m.map(\.payload), [first, second], "chunk \(size)")
            XCTAssertEqual(m.map(\.compressed), [true, true])
            XCTAssertEqual(m.last?.size, UInt64(second.count))
        }
    }

    /// A sender may end a message with a final block and keep its context: the next message
    /// refers back into the first one's bytes, which the window must still hold.
    func testAMessageEndedWithAFinalBlockKeepsTheContext() throws {
        let deflater = MessageDeflater()
        let first = Array(#"{"greeting":"hello hello hello hello","from":"a final block"}"#.utf8)
        let second = Array(#"{"greeting":"hello hello hello hello","from":"a final block","n":2}"#.utf8)
        let c1 = deflater.compressEndingWithAFinalBlock(first), c2 = deflater.compress(second)
        XCTAssertLessThan(c2.count, second.count / 2, "the second refers back to the first")
        let stream = WebSocketFrames.frame(1, c1, rsv: 4) + WebSocketFrames.frame(1, c2, rsv: 4)
        for size in [1, 7, 1000] {
            var p = parser(deflate: PerMessageDeflate())
            let m = try feed(&p, stream, chunk: size)
            XCTAssertEqual(m.map(\.payload), [first, second], "chunk \(size)")
        }
    }

    func testNoContextTakeoverResetsBetweenMessages() throws {
        let deflater = MessageDeflater(takeover: false)
        let a = Array("abcabcabcabc".utf8), b = Array("abcabcabcabc!".utf8)
        var p = parser(client: true, deflate: PerMessageDeflate(clientNoContextTakeover: true))
        let stream = WebSocketFrames.frame(1, deflater.compress(a), rsv: 4, mask: mask) + WebSocketFrames.frame(2, deflater.compress(b), rsv: 4, mask: mask)
        XCTAssertEqual(try feed(&p, stream).map(\.payload), [a, b])
    }

    func testInflatingStopsAtMaxDecodedBytes() throws {
        let deflater = MessageDeflater()
        let bomb = [UInt8](repeating: 0x20, count: 1 << 20)
        var p = parser(deflate: PerMessageDeflate(), keep: 100, maxDecoded: 4096)
        let m = try feed(&p, WebSocketFrames.frame(1, deflater.compress(bomb), rsv: 4))
        XCTAssertEqual(m.first?.truncated, true)
        XCTAssertEqual(m.first?.payload.count, 100)
        XCTAssertLessThan(m.first?.size ?? .max, 1 << 20)
        XCTAssertGreaterThan(m.first?.size ?? 0, 4096)
        // With context takeover the next compressed message cannot be read.
        XCTAssertThrowsError(try feed(&p, WebSocketFrames.frame(1, deflater.compress(Array("x".utf8)), rsv: 4)))
        // Without it, parsing goes on.
        let reset = MessageDeflater(takeover: false)
        var q = parser(deflate: PerMessageDeflate(serverNoContextTakeover: true), keep: 100, maxDecoded: 4096)
        _ = try feed(&q, WebSocketFrames.frame(1, reset.compress(bomb), rsv: 4))
        XCTAssertEqual(texts(try feed(&q, WebSocketFrames.frame(1, reset.compress(Array("ok".utf8)), rsv: 4))), ["ok"])
    }

    func testMalformedFramesThrowWithAReason() {
        let cases: [(String, Bool, [UInt8], PerMessageDeflate?)] = [
            ("reserved opcode", false, WebSocketFrames.frame(3, []), nil),
            ("RSV2", false, WebSocketFrames.frame(1, [], rsv: 2), nil),
            ("unmasked client frame", true, WebSocketFrames.frame(1, Array("x".utf8)), nil),
            ("masked server frame", false, WebSocketFrames.frame(1, Array("x".utf8), mask: [1, 2, 3, 4]), nil),
            ("long control", false, WebSocketFrames.frame(9, [UInt8](repeating: 0, count: 126)), nil),
            ("fragmented control", false, WebSocketFrames.frame(9, [], fin: false), nil),
            ("lone continuation", false, WebSocketFrames.frame(0, Array("x".utf8)), nil),
            ("interleaved messages", false, WebSocketFrames.text("a", fin: false) + WebSocketFrames.text("b"), nil),
            ("RSV1 without deflate", false, WebSocketFrames.frame(1, [0], rsv: 4), nil),
            ("RSV1 on a continuation", false, WebSocketFrames.frame(1, [], fin: false, rsv: 4) + WebSocketFrames.frame(0, [], rsv: 4), PerMessageDeflate()),
            ("RSV1 on a ping", false, WebSocketFrames.frame(9, [], rsv: 4), PerMessageDeflate()),
            ("1-byte close", false, WebSocketFrames.frame(8, [3]), nil),
            ("bad deflate data", false, WebSocketFrames.frame(1, [0xFF, 0xFF, 0xFF, 0xFF], rsv: 4), PerMessageDeflate()),
            ("64-bit length with its top bit", false, [0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0], nil),
        ]
        for (name, client, bytes, deflate) in cases {
            var p = parser(client: client, deflate: deflate)
            XCTAssertThrowsError(try feed(&p, bytes), name) { error in
                XCTAssertFalse((error as? WebSocketParseError)?.message.isEmpty ?? true, name)
            }
        }
    }

    func testNegotiationReadsTheServersAnswer() throws {
        XCTAssertNil(try PerMessageDeflate.negotiated([]))
        XCTAssertEqual(try PerMessageDeflate.negotiated(["permessage-deflate"]), PerMessageDeflate())
        XCTAssertEqual(try PerMessageDeflate.negotiated(["permessage-deflate; server_no_context_takeover; client_max_window_bits=10"]),
                       PerMessageDeflate(serverNoContextTakeover: true))
        XCTAssertEqual(try PerMessageDeflate.negotiated(["PerMessage-Deflate;client_no_context_takeover"]),
                       PerMessageDeflate(clientNoContextTakeover: true))
        XCTAssertThrowsError(try PerMessageDeflate.negotiated(["x-webkit-deflate-frame"]))
        XCTAssertThrowsError(try PerMessageDeflate.negotiated(["permessage-deflate; mystery"]))
    }
}

final class WebSocketFuzzRegressionTests: XCTestCase {
    func testAMessageCompletedBeforeAnErrorInTheSameChunkIsKept() throws {
        let stream = Array(Data(base64Encoded: "AIEReyJoZWxsbyI6IncAAP//b3JsZIgLAgPoIn0=")!.dropFirst())
        struct Outcome: Equatable { var messages: [WebSocketMessage]; var error: WebSocketParseError? }
        func run(_ size: Int) -> Outcome {
            var p = WebSocketMessageParser(fromClient: false, deflate: nil, keepBytes: 64, maxDecodedBytes: 1 << 16)
            var out: [WebSocketMessage] = []
            var i = 0
            while i < stream.count {
                let piece = Array(stream[i..<min(stream.count, i + size)])
                i += piece.count
                do { try piece.withUnsafeBytes { try p.parse($0, into: &out) } } catch {
                    return Outcome(messages: out, error: error as? WebSocketParseError)
                }
            }
            return Outcome(messages: out, error: nil)
        }
        XCTAssertEqual(run(1), run(stream.count))
        XCTAssertEqual(run(1).messages.count, 1, "the message before the malformed frame is kept")
    }
}
