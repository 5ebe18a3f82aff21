/// Whether a plaintext connection on a reverse listener with `h2c` speaks HTTP/2 with prior
/// knowledge (RFC 9113 §3.3): it does exactly when its first bytes are the client
/// connection preface. Pure: the buffered prefix in, a verdict out.
///
/// Rules:
/// - Decided on the preface's 24 bytes at most; bytes are looked at, never consumed (the
///   HTTP/2 session reads the preface itself, the HTTP/1 parser its request line).
/// - A prefix that still matches the preface waits for more (`needMore`); the first byte
///   that differs makes it HTTP/1.1, whose parser then answers whatever it is.
/// - `Upgrade: h2c` (RFC 7540 §3.2, removed by RFC 9113) is not looked for: such a request
///   is an HTTP/1.1 request whose hop-by-hop Upgrade is not passed on.
enum HTTP2PriorKnowledge: Equatable {
    case http2
    case http1
    case needMore

    /// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func classify(_ prefix: UnsafeRawBufferPointer) -> HTTP2PriorKnowledge {
        let n = min(prefix.count, preface.count)
        for i in 0..<n where prefix[i] != preface[i] { return .http1 }
        return n == preface.count ? .http2 : .needMore
    }
}
