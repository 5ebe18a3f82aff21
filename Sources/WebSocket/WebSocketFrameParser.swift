/// A frame's head (RFC 6455 §5.2).
public struct WebSocketFrameHeader: Equatable, Sendable {
    public var fin: Bool
    /// RSV1: set on the first frame of a message compressed by permessage-deflate (RFC 7692).
    public var compressed: Bool
    public var opcode: WebSocketOpcode
    public var masked: Bool
    public var length: UInt64
}

/// What the frame parser reports, frame by frame: the head, the payload in slices
/// (unmasked), the end. A class, so that the parser (a value) can call it while
/// being mutated itself.
public protocol WebSocketFrameVisitor: AnyObject {
    /// A frame begins; returns whether its payload is wanted (an unwanted payload is skipped
    /// without being unmasked, and `payload` is not called for it).
    func frameBegan(_ header: WebSocketFrameHeader) throws -> Bool
    /// The next slice of the payload, unmasked; valid only during the call.
    func payload(_ bytes: UnsafeRawBufferPointer) throws
    func frameEnded() throws
}

/// One direction's frames, parsed from chunks of any size as they arrive: never more than
/// a frame head (14 bytes) is kept between chunks. Pure, and the chunk is only read: a
/// masked payload is unmasked as it is copied into the parser's own buffer (at most
/// `unmaskSliceBytes` at a time), an unmasked one is handed on in place. So the log's
/// workers parse the copy the engine queued as it is, where unmasking in place made each
/// worker copy every chunk first (the queued event still shares it).
///
/// Rules (a broken one throws, and the direction is not parsed further):
/// - RSV2 and RSV3 are never set (no extension here defines them); RSV1 is the visitor's
///   to judge (permessage-deflate).
/// - Opcodes 3–7 and 11–15 are reserved.
/// - Control frames are not fragmented and carry at most 125 bytes.
/// - Frames from the client are masked, frames from the server are not (§5.1).
/// - A 64-bit length has its top bit clear.
public struct WebSocketFrameParser: Sendable {
    /// Frames in this direction come from the client (and so are masked).
    public let fromClient: Bool
    /// The head being read: up to 14 bytes, kept across chunks.
    private var head: [UInt8] = []
    private var remaining: UInt64 = 0
    private var inPayload = false
    private var wanted = false
    private var mask: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
    private var maskOffset = 0
    private var masked = false
    /// Where masked payload slices are unmasked; grows to `unmaskSliceBytes` at most, and is
    /// kept between chunks only up to `keptUnmaskBytes`: a parser lives as long as its
    /// connection, and one large message must not leave 64 KiB with every idle one.
    private var unmasked: [UInt8] = []
    static let unmaskSliceBytes = 64 * 1024
    static let keptUnmaskBytes = 4 * 1024
    /// Tests: the unmask buffer kept between chunks.
    var unmaskBufferBytes: Int { unmasked.count }

    public init(fromClient: Bool) {
        self.fromClient = fromClient
        head.reserveCapacity(14)
    }

    /// Parses `chunk`, reporting to `visitor`.
    public mutating func parse(_ chunk: UnsafeRawBufferPointer, _ visitor: some WebSocketFrameVisitor) throws {
        guard let base = chunk.baseAddress else { return }
        var i = 0
        let n = chunk.count
        while i < n {
            if inPayload {
                let take = Int(min(UInt64(n - i), remaining))
                if wanted && take > 0 {
                    if masked {
                        try unmask(base + i, count: take, visitor)
                    } else {
                        try visitor.payload(UnsafeRawBufferPointer(start: base + i, count: take))
                    }
                }
                i += take
                remaining -= UInt64(take)
                if remaining == 0 { try endFrame(visitor) }
                continue
            }
            head.append(chunk[i])
            i += 1
            guard let needed = headLength(), head.count == needed else { continue }
            try beginFrame(visitor)
        }
    }

    /// The whole head's length once its first two bytes are in.
    private func headLength() -> Int? {
        guard head.count >= 2 else { return nil }
        let len7 = head[1] & 0x7F
        let extended = len7 == 126 ? 2 : len7 == 127 ? 8 : 0
        return 2 + extended + (head[1] & 0x80 != 0 ? 4 : 0)
    }

    private mutating func beginFrame(_ visitor: some WebSocketFrameVisitor) throws {
        let b0 = head[0], b1 = head[1]
        if b0 & 0x30 != 0 { throw WebSocketParseError("a frame with RSV2 or RSV3 set (no extension defines them)") }
        guard let opcode = WebSocketOpcode(rawValue: b0 & 0x0F) else {
            throw WebSocketParseError("a frame with the reserved opcode \(b0 & 0x0F)")
        }
        var length = UInt64(b1 & 0x7F)
        var at = 2
        if length == 126 {
            length = UInt64(head[2]) << 8 | UInt64(head[3])
            at = 4
        } else if length == 127 {
            length = 0
            for k in 2..<10 { length = length << 8 | UInt64(head[k]) }
            at = 10
            if length >> 63 != 0 { throw WebSocketParseError("a frame length with its most significant bit set") }
        }
        masked = b1 & 0x80 != 0
        if masked != fromClient {
            throw WebSocketParseError(fromClient ? "an unmasked frame from the client" : "a masked frame from the server")
        }
        if masked { mask = (head[at], head[at + 1], head[at + 2], head[at + 3]) }
        let fin = b0 & 0x80 != 0
        if opcode.isControl {
            if !fin { throw WebSocketParseError("a fragmented control frame (opcode \(opcode.rawValue))") }
            if length > 125 { throw WebSocketParseError("a control frame of \(length) bytes (at most 125)") }
        }
        head.removeAll(keepingCapacity: true)
        maskOffset = 0
        remaining = length
        wanted = try visitor.frameBegan(WebSocketFrameHeader(fin: fin, compressed: b0 & 0x40 != 0, opcode: opcode,
                                                             masked: masked, length: length))
        inPayload = true
        if length == 0 { try endFrame(visitor) }
    }

    private mutating func endFrame(_ visitor: some WebSocketFrameVisitor) throws {
        inPayload = false
        try visitor.frameEnded()
    }

    /// The mask's byte for payload offset `j`.
    @inline(__always)
    private func keyByte(_ j: Int) -> UInt8 {
        switch j & 3 {
        case 0: return mask.0
        case 1: return mask.1
        case 2: return mask.2
        default: return mask.3
        }
    }

    /// Hands `visitor` the `count` masked bytes at `source` unmasked, in slices of at most
    /// `unmaskSliceBytes` copied into `unmasked`.
    private mutating func unmask(_ source: UnsafeRawPointer, count: Int, _ visitor: some WebSocketFrameVisitor) throws {
        // Moved out for the calls, so that no access to `self` overlaps the buffer's.
        var buffer: [UInt8] = []
        swap(&buffer, &unmasked)
        defer {
            if buffer.count > Self.keptUnmaskBytes { buffer = [] }
            swap(&buffer, &unmasked)
        }
        var done = 0
        while done < count {
            let n = min(count - done, Self.unmaskSliceBytes)
            if buffer.count < n { buffer = [UInt8](repeating: 0, count: min(Self.unmaskSliceBytes, max(n, 2 * buffer.count))) }
            try buffer.withUnsafeMutableBytes { out in
                guard let p = out.baseAddress else { return }
                unmask(source + done, into: p, count: n)
                try visitor.payload(UnsafeRawBufferPointer(start: p, count: n))
            }
            done += n
        }
    }

    /// Writes `n` bytes from `source` XORed with the mask to `p`, continuing from
    /// `maskOffset`: eight bytes at a time, the key repeated in a word laid out in memory
    /// order from where the payload is.
    private mutating func unmask(_ source: UnsafeRawPointer, into p: UnsafeMutableRawPointer, count n: Int) {
        var word: UInt64 = 0
        for k in 0..<8 { word |= UInt64(keyByte(maskOffset + k)) << (8 * k) }
        word = word.littleEndian
        var i = 0
        while i + 8 <= n {
            let v = (source + i).loadUnaligned(as: UInt64.self)
            (p + i).storeBytes(of: v ^ word, as: UInt64.self)
            i += 8
        }
        while i < n {
            p.storeBytes(of: source.load(fromByteOffset: i, as: UInt8.self) ^ keyByte(maskOffset + i), toByteOffset: i, as: UInt8.self)
            i += 1
        }
        maskOffset = (maskOffset + n) & 3
    }
}
