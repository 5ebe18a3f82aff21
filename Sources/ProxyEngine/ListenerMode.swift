import HTTP1

/// What a listener's clients speak, from a `listen` entry (docs/configuration.md).
/// A plain `HOST:PORT` string is `forward`.
public enum ListenerMode: Sendable, Equatable {
    /// An HTTP proxy: absolute-form requests and CONNECT (the default).
    case forward
    /// Clients talk to the listener as to the origin itself: every request, origin-form,
    /// goes to `upstream`.
    case reverse(ReverseUpstream)
    /// A SOCKS5 server (RFC 1928); after its CONNECT the connection goes on as after an
    /// answered HTTP CONNECT.
    case socks5(SOCKS5Credentials?)

    /// The word a `listen` entry's `mode` gives.
    public var name: String {
        switch self {
        case .forward: return "forward"
        case .reverse: return "reverse"
        case .socks5: return "socks5"
        }
    }
}

/// The origin behind a reverse listener.
public struct ReverseUpstream: Sendable, Equatable {
    /// `http` or `https` (verified as any origin), host and port.
    public var authority: HTTPAuthority
    /// `keepHost`: the client's Host goes to the upstream as sent, instead of the upstream's.
    public var keepHost: Bool
    /// `protocols` lists `h2c`: a connection that opens with HTTP/2's preface is HTTP/2
    /// (prior knowledge, RFC 9113 §3.3); any other is HTTP/1.1.
    public var h2c: Bool
    public init(authority: HTTPAuthority, keepHost: Bool, h2c: Bool = false) {
        self.authority = authority
        self.keepHost = keepHost
        self.h2c = h2c
    }
}

/// The users a SOCKS5 listener accepts (RFC 1929 username/password), from its `users` file.
/// Compared whole, never logged.
public struct SOCKS5Credentials: Sendable, Equatable {
    private let passwords: [String: [UInt8]]
    public init(_ passwords: [String: String]) {
        self.passwords = passwords.mapValues { Array($0.utf8) }
    }
    public var count: Int { passwords.count }

    /// Whether `user` is listed with `password`; every byte of a same-length password is
    /// compared, so the time taken does not tell how much of it matched.
    func accepts(user: [UInt8], password: [UInt8]) -> Bool {
        guard let expected = passwords[String(decoding: user, as: UTF8.self)], expected.count == password.count else {
            return false
        }
        var difference: UInt8 = 0
        for (a, b) in zip(expected, password) { difference |= a ^ b }
        return difference == 0
    }
}
