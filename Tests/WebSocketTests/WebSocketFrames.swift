import CZlib
import WebSocket

/// Builds frames as a client or server would send them, for the parser's tests and fuzz seeds.
enum WebSocketFrames {
    static func frame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0,
                      mask: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        if payload.count < 126 {
            out.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            out.append(maskBit | 126)
            out += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            out.append(maskBit | 127)
            for k in (0..<8).reversed() { out.append(UInt8((UInt64(payload.count) >> (8 * UInt64(k))) & 0xFF)) }
        }
        if let mask {
            out += mask
            out += payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
        } else {
            out += payload
        }
        return out
    }

    static func text(_ s: String, fin: Bool = true, mask: [UInt8]? = nil) -> [UInt8] { frame(1, Array(s.utf8), fin: fin, mask: mask) }
}

/// A raw deflater keeping its context, as a permessage-deflate sender does: each message
/// flushed with Z_SYNC_FLUSH and its `00 00 FF FF` tail removed.
final class MessageDeflater {
    private let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
    let takeover: Bool

    init(takeover: Bool = true) {
        self.takeover = takeover
        stream.initialize(to: z_stream())
        deflateInit2_(stream, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
    }

    deinit { deflateEnd(stream); stream.deallocate() }

    func compress(_ input: [UInt8]) -> [UInt8] {
        let output = run(input, flush: Z_SYNC_FLUSH)
        if !takeover { deflateReset(stream) }
        return Array(output.dropLast(4))
    }

    /// `input` through the deflater in one call, ending with `flush`; all it wrote.
    private func run(_ input: [UInt8], flush: Int32) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: input.count + 1024)
        var input = input
        let produced = input.withUnsafeMutableBytes { inp in
            output.withUnsafeMutableBytes { out -> Int in
                stream.pointee.next_in = inp.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_in = uInt(inp.count)
                stream.pointee.next_out = out.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(out.count)
                deflate(stream, flush)
                return out.count - Int(stream.pointee.avail_out)
            }
        }
        return Array(output[0..<produced])
    }

    /// A message ended with a final block instead of a flush (RFC 7692 §7.2.3.3): its bytes
    /// have no `00 00 FF FF` tail to remove, and a sender keeping its context starts the next
    /// message with this one as its dictionary.
    func compressEndingWithAFinalBlock(_ input: [UInt8]) -> [UInt8] {
        let output = run(input, flush: Z_FINISH)
        deflateReset(stream)
        if takeover {
            var input = input
            input.withUnsafeMutableBytes { _ = deflateSetDictionary(stream, $0.baseAddress?.assumingMemoryBound(to: Bytef.self), uInt($0.count)) }
        }
        return output
    }
}
