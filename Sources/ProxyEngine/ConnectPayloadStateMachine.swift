/// What Tapwire does with the bytes a client sends through a CONNECT (HTTP's, and SOCKS5's):
/// the one decision every inbound path takes after its CONNECT is answered. Pure: the
/// routes and the first bytes in, a decision out.
///
/// Rules:
/// - A host in `tls.ignore` or `capture.blindTunnels` is a blind tunnel whatever it carries
///   (`route`), decided before any byte.
/// - Otherwise the client's first bytes decide: a TLS record (0x16) for a host in
///   `tls.intercept` → intercepted TLS; a plain HTTP/1 request line → decoded as HTTP
///   exchanges (and WebSocket messages after an upgrade); anything else → a blind tunnel.
///   TLS to a host outside `tls.intercept` is a blind tunnel too.
/// - Bytes are looked at, never consumed: the decision needs at most
///   `requestLinePrefixBytes`, and a shorter prefix that could still be a request line
///   waits for more (`nil`).
/// - When the origin speaks first (SSH, SMTP), the client closes, or nothing decides
///   within `limits.clientIdleTimeout`, the tunnel is blind.
/// - Decided once: later events return the same decision.
public struct ConnectPayloadStateMachine: Equatable, Sendable {
    /// How a CONNECT is handled before any byte: `blind` keeps the bytes unread.
    public enum Route: Equatable, Sendable {
        case blind
        /// The first bytes decide; `interceptsTLS`: the host is in `tls.intercept` (minus `tls.ignore`).
        case inspect(interceptsTLS: Bool)
    }

    public enum Decision: Equatable, Sendable {
        case interceptTLS
        case decodeHTTP
        case blindTunnel
    }

    public enum State: Equatable, Sendable {
        case waiting(interceptsTLS: Bool)
        case decided(Decision)
    }

    /// The longest prefix the decision needs: a method (at most `maxMethodBytes`), a space
    /// and the first byte of the target.
    public static let maxMethodBytes = 24
    public static let requestLinePrefixBytes = maxMethodBytes + 2

    /// The entry point for every inbound CONNECT: `keepsBlind` is `tls.ignore` or
    /// `capture.blindTunnels` matching the host, `interceptsTLS` is `tls.intercept` minus `tls.ignore`.
    public static func route(interceptsTLS: Bool, keepsBlind: Bool) -> Route {
        keepsBlind ? .blind : .inspect(interceptsTLS: interceptsTLS)
    }

    public private(set) var state: State

    public init(interceptsTLS: Bool) {
        state = .waiting(interceptsTLS: interceptsTLS)
    }

    public var decision: Decision? {
        if case .decided(let d) = state { return d }
        return nil
    }

    /// The client's bytes so far (the whole buffered prefix, not just the new ones): the
    /// decision, or nil while the prefix could still be either.
    public mutating func clientSent(_ prefix: UnsafeRawBufferPointer) -> Decision? {
        guard case .waiting(let interceptsTLS) = state else { return decision }
        guard let first = prefix.first else { return nil }
        if first == 0x16 { return decide(interceptsTLS ? .interceptTLS : .blindTunnel) }
        switch Self.requestLine(prefix) {
        case .some(true): return decide(.decodeHTTP)
        case .some(false): return decide(.blindTunnel)
        case nil: return nil
        }
    }

    /// The origin sent bytes before the client decided anything.
    public mutating func upstreamSpokeFirst() -> Decision { decideIfWaiting(.blindTunnel) }

    /// The client closed (or reset) before its bytes decided.
    public mutating func clientEnded() -> Decision { decideIfWaiting(.blindTunnel) }

    /// Nothing decided within `limits.clientIdleTimeout`.
    public mutating func timedOut() -> Decision { decideIfWaiting(.blindTunnel) }

    private mutating func decideIfWaiting(_ d: Decision) -> Decision {
        if case .decided(let earlier) = state { return earlier }
        return decide(d)
    }

    private mutating func decide(_ d: Decision) -> Decision {
        state = .decided(d)
        return d
    }

    /// Whether `prefix` starts an HTTP/1 request line: an upper-case method (letters, `-`,
    /// `_`; not HTTP/2's `PRI`), one space, then `/` (origin-form), `*`, or a letter
    /// (absolute-form). Nil while too short to tell.
    static func requestLine(_ prefix: UnsafeRawBufferPointer) -> Bool? {
        var i = 0
        while i < prefix.count {
            let b = prefix[i]
            if b == 0x20 {
                // HTTP/2's connection preface (`PRI * HTTP/2.0`) is not HTTP/1.
                guard i > 0, !(i == 3 && prefix[0] == UInt8(ascii: "P") && prefix[1] == UInt8(ascii: "R")
                               && prefix[2] == UInt8(ascii: "I")) else { return false }
                guard i + 1 < prefix.count else { return nil }
                let t = prefix[i + 1]
                return t == UInt8(ascii: "/") || t == UInt8(ascii: "*") || (t | 0x20 >= UInt8(ascii: "a") && t | 0x20 <= UInt8(ascii: "z"))
            }
            let isMethodByte = (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
            guard isMethodByte, i < maxMethodBytes else { return false }
            i += 1
        }
        return nil
    }
}
