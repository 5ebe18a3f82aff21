import CZlib

/// permessage-deflate (RFC 7692) as the 101 answer negotiated it: whether each side keeps
/// its compression context from one message to the next.
public struct PerMessageDeflate: Equatable, Sendable {
    /// The server resets its compressor after each message (`server_no_context_takeover`).
    public var serverNoContextTakeover = false
    /// The client resets its compressor after each message (`client_no_context_takeover`).
    public var clientNoContextTakeover = false

    public init(serverNoContextTakeover: Bool = false, clientNoContextTakeover: Bool = false) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
    }

    /// The extensions the server's `Sec-WebSocket-Extensions` fields accepted: nil for none,
    /// permessage-deflate with its parameters, or an error for an extension not understood
    /// here (its frames could not be read). Window sizes need nothing: inflating with the
    /// largest window reads a stream made with any smaller one.
    public static func negotiated(_ fieldValues: [String]) throws -> PerMessageDeflate? {
        var result: PerMessageDeflate?
        for value in fieldValues {
            for ext in value.split(separator: ",") {
                let parts = ext.split(separator: ";").map { $0.trimmingSpaces }
                guard let name = parts.first, !name.isEmpty else { continue }
                guard name.lowercased() == "permessage-deflate", result == nil else {
                    throw WebSocketParseError("the extension \(name) is not understood")
                }
                var deflate = PerMessageDeflate()
                for parameter in parts.dropFirst() {
                    let key = parameter.split(separator: "=", maxSplits: 1).first.map { String($0).trimmingSpaces.lowercased() } ?? ""
                    switch key {
                    case "server_no_context_takeover": deflate.serverNoContextTakeover = true
                    case "client_no_context_takeover": deflate.clientNoContextTakeover = true
                    case "server_max_window_bits", "client_max_window_bits": break
                    default: throw WebSocketParseError("permessage-deflate: the parameter \(key) is not understood")
                    }
                }
                result = deflate
            }
        }
        return result
    }

    /// Whether messages sent by this side keep the compression context.
    public func takesOverContext(fromClient: Bool) -> Bool {
        fromClient ? !clientNoContextTakeover : !serverNoContextTakeover
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

/// A raw inflate stream (zlib, no header) that lives as long as the connection, so that
/// context takeover works: each message's compressed bytes, then the `00 00 FF FF` tail the
/// sender removed (RFC 7692 §7.2.2), go through one `z_stream`. A class: zlib keeps a
/// pointer to the `z_stream`, which must not move, so it is allocated here and freed in
/// `deinit`, its only owner (also when `init` throws: `deinit` runs then too, as every
/// stored property is set). Its output goes through a buffer made per call, so an idle
/// connection holds only zlib's own state and window.
final class RawInflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private var ready = false
    private static let outputStep = 64 * 1024
    /// zlib's largest window (15 bits): what context takeover may refer back into.
    private static let windowBytes = 1 << 15

    init() throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = inflateInit2_(stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            throw WebSocketParseError("permessage-deflate: zlib could not start (\(status))")
        }
        ready = true
    }

    deinit {
        if ready { inflateEnd(stream) }
        stream.deallocate()
    }

    /// Forgets the context (the sender resets its compressor after each message).
    func reset() { inflateReset(stream) }

    /// After a final block: zlib takes no more input until reset, and a reset forgets the
    /// window. A sender may end a message with a final block and still keep its context
    /// (RFC 7692 §7.2.3.3), so the window is carried over as the new stream's dictionary,
    /// which raw inflate accepts at any time; a sender without takeover resets it anyway.
    private func startAgainKeepingTheWindow() {
        withUnsafeTemporaryAllocation(of: Bytef.self, capacity: RawInflater.windowBytes) { window in
            guard let base = window.baseAddress else { inflateReset(stream); return }
            var length = uInt(0)
            let kept = inflateGetDictionary(stream, base, &length) == Z_OK
            inflateReset(stream)
            if kept && length > 0 { _ = inflateSetDictionary(stream, base, length) }
        }
    }

    /// Inflates `input`, handing each piece of output to `output`; true when the sender
    /// ended the deflate stream (a final block), after which the rest of the input is
    /// ignored and the stream starts again, keeping its window.
    @discardableResult
    func inflate(_ input: UnsafeRawBufferPointer, _ output: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let base = input.baseAddress, input.count > 0 else { return false }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        defer { stream.pointee.next_in = nil; stream.pointee.avail_in = 0 }
        return try withUnsafeTemporaryAllocation(byteCount: RawInflater.outputStep, alignment: 1) { scratch in
            try inflate(into: scratch, output)
        }
    }

    private func inflate(into scratch: UnsafeMutableRawBufferPointer, _ output: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        while true {
            stream.pointee.next_out = scratch.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(scratch.count)
            let status = CZlib.inflate(stream, Z_SYNC_FLUSH)
            let produced = scratch.count - Int(stream.pointee.avail_out)
            if produced > 0 { try output(UnsafeRawBufferPointer(rebasing: scratch[0..<produced])) }
            switch status {
            case Z_STREAM_END:
                startAgainKeepingTheWindow()
                return true
            case Z_OK:
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return false }
            case Z_BUF_ERROR:
                // No progress possible: all input taken, nothing more to write.
                return false
            default:
                let why = stream.pointee.msg.map { String(cString: $0) } ?? "error \(status)"
                throw WebSocketParseError("permessage-deflate: \(why)")
            }
        }
    }
}
