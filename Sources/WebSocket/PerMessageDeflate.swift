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
/// `deinit`, its only owner.
final class RawInflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)
    private var ready = false

    init() throws {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = inflateInit2_(stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else {
            stream.deallocate()
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

    /// Inflates `input`, handing each piece of output to `output`; true when the sender
    /// ended the deflate stream (a final block), after which the rest of the input is
    /// ignored and the stream is reset.
    @discardableResult
    func inflate(_ input: UnsafeRawBufferPointer, _ output: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard let base = input.baseAddress, input.count > 0 else { return false }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        defer { stream.pointee.next_in = nil; stream.pointee.avail_in = 0 }
        while true {
            let (status, produced) = scratch.withUnsafeMutableBytes { out -> (Int32, Int) in
                stream.pointee.next_out = out.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(out.count)
                let status = CZlib.inflate(stream, Z_SYNC_FLUSH)
                return (status, out.count - Int(stream.pointee.avail_out))
            }
            if produced > 0 { try scratch.withUnsafeBytes { try output(UnsafeRawBufferPointer(rebasing: $0[0..<produced])) } }
            switch status {
            case Z_STREAM_END:
                inflateReset(stream)
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
