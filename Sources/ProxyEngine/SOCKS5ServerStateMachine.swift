import HTTP1

/// The server side of a SOCKS5 handshake (RFC 1928, with RFC 1929 username/password), without
/// sockets: bytes in, replies and a decision out. `ClientSession` drives it on a `socks5`
/// listener; once it yields `.connect`, the connection goes on as after an HTTP CONNECT, and
/// the session answers with `connectSucceeded` or `connectFailed` instead of an HTTP status.
///
/// Rules:
/// - Messages are parsed only when whole; `received` says how many bytes it consumed, and
///   bytes past the message wait for the next state (a client may pipeline its request
///   after the greeting, as curl does not but others do).
/// - With credentials configured only method 0x02 (username/password) is offered; without,
///   only 0x00 (none). A client offering neither gets `05 FF` and the connection closes.
/// - A failed authentication is answered `01 01` and closes; nothing of the attempt is kept.
/// - Only CONNECT is served: BIND and UDP ASSOCIATE get reply 07 (command not supported), an
///   unknown address type 08, and the connection closes after the reply.
/// - Anything that is not SOCKS5 closes without a reply (there is no way to say why).
/// - `done` and `failed` are final; no event after them yields an action.
struct SOCKS5ServerStateMachine {
    enum State: Equatable {
        case greeting
        case authenticating
        case awaitingRequest
        /// The request was parsed; the driver is connecting to `target`.
        case connecting(HTTPAuthority)
        case done
        case failed
    }

    /// RFC 1928 §6 reply codes the server sends.
    enum Reply: UInt8, Equatable {
        case succeeded = 0x00
        case generalFailure = 0x01
        case notAllowed = 0x02
        case networkUnreachable = 0x03
        case hostUnreachable = 0x04
        case connectionRefused = 0x05
        case ttlExpired = 0x06
        case commandNotSupported = 0x07
        case addressTypeNotSupported = 0x08

        /// The reply for a CONNECT that failed with `code` (the proxy's transport vocabulary).
        init(failure code: TransportError.Code) {
            switch code {
            case .upstreamDNSFailed, .upstreamTimeout: self = .hostUnreachable
            case .upstreamConnectFailed: self = .connectionRefused
            case .loopDetected: self = .notAllowed
            default: self = .generalFailure
            }
        }
    }

    enum Action: Equatable {
        /// Send these bytes to the client.
        case reply([UInt8])
        /// Connect to the target, then call `connectSucceeded` or `connectFailed`.
        case connect(HTTPAuthority)
        /// Close once what was written is out; `reason` is for the log line, never the client.
        case close(reason: String)
    }

    private(set) var state: State = .greeting
    let credentials: SOCKS5Credentials?

    init(credentials: SOCKS5Credentials?) {
        self.credentials = credentials
    }

    static let version: UInt8 = 0x05
    static let noAuthentication: UInt8 = 0x00
    static let usernamePassword: UInt8 = 0x02
    static let noAcceptableMethod: UInt8 = 0xFF
    static let authVersion: UInt8 = 0x01

    var isFinished: Bool { state == .done || state == .failed }

    /// Bytes arrived; `bytes` are all that is buffered. Returns how many of them were consumed
    /// (0 while a message is incomplete) and what to do.
    mutating func received(_ bytes: [UInt8]) -> (consumed: Int, actions: ActionList<Action>) {
        var consumed = 0
        var actions = ActionList<Action>()
        // One message per state; a message that moves to the next state may leave the next
        // one's bytes behind, so parse on while something is consumed.
        while true {
            let rest = bytes[consumed...]
            guard let (n, step) = parseOne(rest) else { break }
            consumed += n
            actions.append(contentsOf: step)
            if n == 0 || isFinished || !canContinue { break }
        }
        return (consumed, actions)
    }

    /// States that read another message from the client.
    private var canContinue: Bool { state == .greeting || state == .authenticating || state == .awaitingRequest }

    private mutating func parseOne(_ b: ArraySlice<UInt8>) -> (Int, ActionList<Action>)? {
        guard let first = b.first else { return nil }
        let s = b.startIndex
        switch state {
        case .greeting:
            guard first == Self.version else { return fail(0, "not a SOCKS5 greeting (first byte \(first))") }
            guard b.count >= 2 else { return nil }
            let n = Int(b[s + 1])
            guard b.count >= 2 + n else { return nil }
            let methods = b[(s + 2)..<(s + 2 + n)]
            let wanted = credentials == nil ? Self.noAuthentication : Self.usernamePassword
            guard methods.contains(wanted) else {
                state = .failed
                return (2 + n, ActionList(.reply([Self.version, Self.noAcceptableMethod]),
                                          .close(reason: credentials == nil ? "the client offers no method without authentication"
                                                                          : "the client does not offer username/password authentication")))
            }
            state = credentials == nil ? .awaitingRequest : .authenticating
            return (2 + n, ActionList(.reply([Self.version, wanted])))
        case .authenticating:
            guard first == Self.authVersion else { return fail(0, "not an RFC 1929 authentication (version \(first))") }
            guard b.count >= 2 else { return nil }
            let ulen = Int(b[s + 1])
            guard b.count >= 3 + ulen else { return nil }
            let plen = Int(b[s + 2 + ulen])
            let total = 3 + ulen + plen
            guard b.count >= total else { return nil }
            let user = Array(b[(s + 2)..<(s + 2 + ulen)])
            let password = Array(b[(s + 3 + ulen)..<(s + total)])
            guard let credentials, credentials.accepts(user: user, password: password) else {
                state = .failed
                return (total, ActionList(.reply([Self.authVersion, 0x01]), .close(reason: "wrong SOCKS5 username or password")))
            }
            state = .awaitingRequest
            return (total, ActionList(.reply([Self.authVersion, 0x00])))
        case .awaitingRequest:
            guard first == Self.version else { return fail(0, "not a SOCKS5 request (version \(first))") }
            guard b.count >= 4 else { return nil }
            let command = b[s + 1], addressType = b[s + 3]
            let host: String
            let addressEnd: Int
            switch addressType {
            case 0x01:
                guard b.count >= 4 + 4 + 2 else { return nil }
                host = b[(s + 4)..<(s + 8)].map(String.init).joined(separator: ".")
                addressEnd = 8
            case 0x04:
                guard b.count >= 4 + 16 + 2 else { return nil }
                host = Self.ipv6Text(Array(b[(s + 4)..<(s + 20)]))
                addressEnd = 20
            case 0x03:
                guard b.count >= 5 else { return nil }
                let length = Int(b[s + 4])
                guard b.count >= 5 + length + 2 else { return nil }
                let name = Array(b[(s + 5)..<(s + 5 + length)])
                // A name is printable ASCII: anything else could not be a host anyway, and would
                // reach the log and the resolver as it is.
                guard length > 0, name.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") }) else {
                    return failWithReply(5 + length + 2, .generalFailure, "an empty or unprintable host name")
                }
                host = String(decoding: name, as: UTF8.self)
                addressEnd = 5 + length
            default:
                // The message's length is unknown: nothing after it can be read anyway.
                return failWithReply(b.count, .addressTypeNotSupported, "address type \(addressType) is not one of IPv4, IPv6, name")
            }
            let total = addressEnd + 2
            let port = Int(b[s + addressEnd]) << 8 | Int(b[s + addressEnd + 1])
            switch command {
            case 0x01:
                guard port != 0 else { return failWithReply(total, .generalFailure, "port 0") }
                let target = HTTPAuthority(scheme: "", host: host, port: port)
                state = .connecting(target)
                return (total, ActionList(.connect(target)))
            case 0x02, 0x03:
                return failWithReply(total, .commandNotSupported, command == 0x02 ? "BIND is not supported" : "UDP ASSOCIATE is not supported")
            default:
                return failWithReply(total, .commandNotSupported, "unknown command \(command)")
            }
        case .connecting, .done, .failed:
            // The driver stops feeding bytes once the request was parsed.
            return nil
        }
    }

    private mutating func fail(_ consumed: Int, _ reason: String) -> (Int, ActionList<Action>) {
        state = .failed
        return (consumed, ActionList(.close(reason: reason)))
    }

    private mutating func failWithReply(_ consumed: Int, _ reply: Reply, _ reason: String) -> (Int, ActionList<Action>) {
        state = .failed
        return (consumed, ActionList(.reply(Self.reply(reply)), .close(reason: reason)))
    }

    /// The connection to the target is up: the success reply. The bound address is reported as
    /// 0.0.0.0:0, which clients of CONNECT ignore (the proxy's own address would tell nothing more).
    mutating func connectSucceeded() -> [UInt8] {
        guard case .connecting = state else { return [] }
        state = .done
        return Self.reply(.succeeded)
    }

    /// Connecting failed: the reply to send before closing.
    mutating func connectFailed(_ code: TransportError.Code) -> [UInt8] {
        guard case .connecting = state else { return [] }
        state = .failed
        return Self.reply(Reply(failure: code))
    }

    static func reply(_ code: Reply) -> [UInt8] {
        [version, code.rawValue, 0x00, 0x01, 0, 0, 0, 0, 0, 0]
    }

    /// RFC 5952 text of an IPv6 address: lower-case hex, the longest run of two or more zero
    /// groups shortened to `::`.
    static func ipv6Text(_ bytes: [UInt8]) -> String {
        let groups = stride(from: 0, to: 16, by: 2).map { Int(bytes[$0]) << 8 | Int(bytes[$0 + 1]) }
        var bestStart = -1, bestLength = 0, runStart = -1
        for i in 0...8 {
            if i < 8 && groups[i] == 0 {
                if runStart < 0 { runStart = i }
            } else if runStart >= 0 {
                if i - runStart > bestLength { bestStart = runStart; bestLength = i - runStart }
                runStart = -1
            }
        }
        let hex = groups.map { String($0, radix: 16) }
        guard bestLength >= 2 else { return hex.joined(separator: ":") }
        return hex[..<bestStart].joined(separator: ":") + "::" + hex[(bestStart + bestLength)...].joined(separator: ":")
    }
}
