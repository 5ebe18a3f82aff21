import HTTP1

/// What a parent handshake (`HTTPConnectHandshake`, `SOCKS5Handshake`) wants next, after
/// being given what the parent sent so far. `consumed` bytes of that belong to the
/// handshake and are dropped from the input; whatever follows them is the origin's.
enum ParentHandshakeStep: Equatable {
    /// Wait for more bytes from the parent.
    case needMore
    /// Send these bytes to the parent, then wait for its answer.
    case send(consumed: Int, [UInt8])
    /// The parent's tunnel to the origin is open.
    case established(consumed: Int)
    /// The parent refused or failed. `answer` is the parent's own HTTP answer (head and
    /// the body received with it), to be passed on to a client still waiting for one.
    case failed(TransportError, answer: [UInt8]?)
}

/// The handshake a parent proxy takes to open a tunnel: CONNECT for an HTTP(S) parent,
/// SOCKS5 for a SOCKS5 one. `UpstreamConnection` drives it on the connected socket.
enum ParentHandshake {
    case http(HTTPConnectHandshake)
    case socks5(SOCKS5Handshake)

    init(target: HTTPAuthority, parent: ParentProxy, maxAnswerBytes: Int) {
        self = parent.kind == .socks5 ? .socks5(SOCKS5Handshake(target: target, parent: parent))
            : .http(HTTPConnectHandshake(target: target, parent: parent, maxAnswerBytes: maxAnswerBytes))
    }

    /// What is sent first.
    var opening: [UInt8] {
        switch self {
        case .http(let h): return h.request()
        case .socks5(let s): return s.greeting()
        }
    }

    mutating func received(_ bytes: UnsafeRawBufferPointer) -> ParentHandshakeStep {
        switch self {
        case .http(var h): defer { self = .http(h) }; return h.received(bytes)
        case .socks5(var s): defer { self = .socks5(s) }; return s.received(bytes)
        }
    }

    /// The parent closed the connection; `bytes` is what it sent and nobody consumed.
    mutating func closed(_ bytes: UnsafeRawBufferPointer) -> ParentHandshakeStep {
        switch self {
        case .http(var h): defer { self = .http(h) }; return h.closed(bytes)
        case .socks5(var s): defer { self = .socks5(s) }; return s.closed()
        }
    }
}

/// A parent's own answer to CONNECT, passed on to the client as it came.
enum ParentAnswer {
    /// Its head, for the record.
    static func head(_ answer: [UInt8]) -> HTTPResponseHead? {
        answer.withUnsafeBytes { raw in
            guard case .complete(let head, _)? = try? HTTPHeadParser.parseResponseHead(raw, maxHeadBytes: raw.count) else { return nil }
            return head
        }
    }
}
