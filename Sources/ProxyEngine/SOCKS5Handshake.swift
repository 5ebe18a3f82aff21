import Foundation
import HTTP1

/// Opening a tunnel through a SOCKS5 parent (RFC 1928), without sockets.
///
/// Rules:
/// - The greeting offers "no authentication" and, with credentials set, also
///   username/password (RFC 1929); the parent picks.
/// - A pick of username/password without credentials set, method `0xFF` (nothing
///   acceptable) and a refused username/password are `upstreamProxyAuthFailed`.
/// - The CONNECT names the origin by its host name (the parent resolves it, as curl's
///   `socks5h`), or by address for an IP literal.
/// - Reply codes: `0x00` opens the tunnel; `0x03` network and `0x04` host unreachable and
///   `0x05` connection refused are the origin's failures seen by the parent
///   (`upstreamConnectFailed`); `0x06` TTL expired is `upstreamTimeout`; `0x01` general
///   failure, `0x02` not allowed by the ruleset, `0x07` command and `0x08` address type
///   not supported, and any other code are `upstreamProxyFailed`. Each message names the code.
/// - Bytes that break the protocol (another version, a reserved byte set, an unknown
///   address type) and a close mid-handshake are `upstreamProxyFailed`.
/// - Bytes after the reply (the bound address included) are the origin's.
struct SOCKS5Handshake {
    enum State: Equatable {
        case greeting
        case authenticating
        case connecting
        case done
    }

    let target: HTTPAuthority
    let parent: ParentProxy
    private(set) var state: State = .greeting

    init(target: HTTPAuthority, parent: ParentProxy) {
        self.target = target
        self.parent = parent
    }

    static let version: UInt8 = 5
    static let noAuthentication: UInt8 = 0
    static let usernamePassword: UInt8 = 2
    static let noAcceptableMethod: UInt8 = 0xFF

    /// The greeting: the methods offered.
    func greeting() -> [UInt8] {
        parent.credentials == nil ? [Self.version, 1, Self.noAuthentication]
                                  : [Self.version, 2, Self.noAuthentication, Self.usernamePassword]
    }

    /// RFC 1929's request; user and password of at most 255 bytes each (the configuration
    /// refuses longer ones).
    private func authentication() -> [UInt8] {
        let user = Array((parent.credentials?.user ?? "").utf8.prefix(255))
        let password = Array((parent.credentials?.password ?? "").utf8.prefix(255))
        return [1, UInt8(user.count)] + user + [UInt8(password.count)] + password
    }

    /// Sends the CONNECT once the method (and authentication) is settled. A name longer than
    /// the 255 bytes SOCKS5 can carry fails rather than being cut: the parent would be asked
    /// for another host than the one the record names.
    private mutating func connect() -> ParentHandshakeStep {
        guard Self.isAddress(target.host) || target.host.utf8.count <= 255 else {
            state = .done
            return .failed(TransportError(.upstreamProxyFailed,
                "the host name \(target.host.prefix(64))… is \(target.host.utf8.count) bytes, longer than the 255 a SOCKS5 parent (\(parent.via)) can be asked for"),
                answer: nil)
        }
        state = .connecting
        return .send(consumed: 2, connectRequest())
    }

    private static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// CONNECT to the origin: by address for an IP literal, else by name (at most 255 bytes,
    /// `connect` checks).
    private func connectRequest() -> [UInt8] {
        var out: [UInt8] = [Self.version, 1, 0]
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, target.host, &v4) == 1 {
            out.append(1)
            withUnsafeBytes(of: &v4) { out.append(contentsOf: $0) }
        } else if inet_pton(AF_INET6, target.host, &v6) == 1 {
            out.append(4)
            withUnsafeBytes(of: &v6) { out.append(contentsOf: $0) }
        } else {
            let name = Array(target.host.utf8.prefix(255))
            out.append(3)
            out.append(UInt8(name.count))
            out.append(contentsOf: name)
        }
        out.append(UInt8(truncatingIfNeeded: target.port >> 8))
        out.append(UInt8(truncatingIfNeeded: target.port))
        return out
    }

    /// Everything the parent sent since the last step that consumed bytes.
    mutating func received(_ bytes: UnsafeRawBufferPointer) -> ParentHandshakeStep {
        switch state {
        case .greeting:
            guard bytes.count >= 2 else { return .needMore }
            guard bytes[0] == Self.version else { return violation("its greeting answer is not SOCKS5 (version \(bytes[0]))") }
            switch bytes[1] {
            case Self.noAuthentication:
                return connect()
            case Self.usernamePassword where parent.credentials != nil:
                state = .authenticating
                return .send(consumed: 2, authentication())
            case Self.usernamePassword, Self.noAcceptableMethod:
                state = .done
                let why = parent.credentials == nil ? "asks for a username and password and none are set"
                                                    : "accepts none of the offered methods (no authentication, username/password)"
                return .failed(TransportError(.upstreamProxyAuthFailed, "the SOCKS5 parent \(parent.via) \(why)"), answer: nil)
            default:
                return violation("it chose method \(bytes[1]), which was not offered")
            }
        case .authenticating:
            guard bytes.count >= 2 else { return .needMore }
            guard bytes[0] == 1 else { return violation("its authentication answer has version \(bytes[0])") }
            guard bytes[1] == 0 else {
                state = .done
                return .failed(TransportError(.upstreamProxyAuthFailed,
                    "the SOCKS5 parent \(parent.via) refused the username and password (status \(bytes[1]))"), answer: nil)
            }
            return connect()
        case .connecting:
            guard bytes.count >= 5 else { return .needMore }
            guard bytes[0] == Self.version, bytes[2] == 0 else { return violation("its CONNECT reply is malformed") }
            let addressLength: Int
            switch bytes[3] {
            case 1: addressLength = 4
            case 3: addressLength = 1 + Int(bytes[4])
            case 4: addressLength = 16
            default: return violation("its CONNECT reply has address type \(bytes[3])")
            }
            let length = 4 + addressLength + 2
            guard bytes.count >= length else { return .needMore }
            state = .done
            if bytes[1] == 0 { return .established(consumed: length) }
            return .failed(Self.replyError(bytes[1], target: target, via: parent.via), answer: nil)
        case .done:
            return .needMore
        }
    }

    /// The parent closed the connection mid-handshake.
    mutating func closed() -> ParentHandshakeStep {
        state = .done
        return .failed(TransportError(.upstreamProxyFailed,
            "the SOCKS5 parent \(parent.via) closed the connection before the tunnel to \(target) was open"), answer: nil)
    }

    private mutating func violation(_ why: String) -> ParentHandshakeStep {
        state = .done
        return .failed(TransportError(.upstreamProxyFailed, "the SOCKS5 parent \(parent.via) broke the protocol: \(why)"), answer: nil)
    }

    /// RFC 1928 §6's reply codes.
    static func replyError(_ code: UInt8, target: HTTPAuthority, via: String) -> TransportError {
        let (errorCode, text): (TransportError.Code, String) = switch code {
        case 1: (.upstreamProxyFailed, "general SOCKS server failure")
        case 2: (.upstreamProxyFailed, "connection not allowed by ruleset")
        case 3: (.upstreamConnectFailed, "network unreachable")
        case 4: (.upstreamConnectFailed, "host unreachable")
        case 5: (.upstreamConnectFailed, "connection refused")
        case 6: (.upstreamTimeout, "TTL expired")
        case 7: (.upstreamProxyFailed, "command not supported")
        case 8: (.upstreamProxyFailed, "address type not supported")
        default: (.upstreamProxyFailed, "unknown reply")
        }
        return TransportError(errorCode, "the SOCKS5 parent \(via) could not connect to \(target): \(text) (reply \(code))")
    }
}
