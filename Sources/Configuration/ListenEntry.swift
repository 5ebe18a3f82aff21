import Foundation
import HTTP1
import ProxyEngine
import ResponseSerialization

/// One `listen` entry: a `HOST:PORT` string (a forward proxy), or an object naming its mode
/// (`reverse`, `socks5`) and, optionally, a `replay` source of its own.
struct ListenEntry {
    var address: String
    var mode: ListenerMode
    var replay: ReplaySettings?

    /// Reads `listen[i]`; nil (errors reported) when it is not usable.
    static func read(_ v: JSON, _ path: String, _ r: ConfigReader) -> ListenEntry? {
        if case .string(let text) = v { return ListenEntry(address: text, mode: .forward, replay: nil) }
        guard case .object = v else {
            r.fail(path, "expected \"HOST:PORT\" or an object with address and mode, found \(ConfigReader.describe(v))")
            return nil
        }
        guard let o = r.object(v, path, allowed: ["address", "mode", "upstream", "keepHost", "users", "replay", "protocols"]) else { return nil }
        let before = r.errors.count
        let address = r.string(o["address"], "\(path).address")
        if o["address"] == nil { r.fail("\(path).address", "required, a numeric HOST:PORT such as 127.0.0.1:9000") }
        let modeName = r.string(o["mode"], "\(path).mode") ?? "forward"
        var mode = ListenerMode.forward
        switch modeName {
        case "forward":
            for key in ["upstream", "keepHost", "users", "protocols"] where o[key] != nil {
                r.fail("\(path).\(key)", "only applies to mode \(key == "users" ? "socks5" : "reverse")")
            }
        case "reverse":
            if o["users"] != nil { r.fail("\(path).users", "only applies to mode socks5") }
            let keepHost = r.bool(o["keepHost"], "\(path).keepHost") ?? false
            let h2c = readProtocols(o["protocols"], "\(path).protocols", r)
            if h2c, o["replay"] != nil {
                r.fail("\(path).protocols", "h2c cannot be combined with replay on the same listener (replay answers HTTP/1.1 only)")
            }
            if let text = r.string(o["upstream"], "\(path).upstream") {
                if let authority = upstreamAuthority(text) {
                    mode = .reverse(ReverseUpstream(authority: authority, keepHost: keepHost, h2c: h2c))
                } else {
                    r.fail("\(path).upstream", "expected http://HOST[:PORT] or https://HOST[:PORT] without a path, found \"\(text)\"")
                }
            } else if o["upstream"] == nil {
                r.fail("\(path).upstream", "required for mode reverse: the origin requests go to, such as http://127.0.0.1:3000")
            }
        case "socks5":
            for key in ["upstream", "keepHost", "protocols"] where o[key] != nil { r.fail("\(path).\(key)", "only applies to mode reverse") }
            var users: SOCKS5Credentials?
            if let file = r.string(o["users"], "\(path).users") {
                switch readUsers(file) {
                case .success(let table): users = table
                case .failure(let why): r.fail("\(path).users", why.message)
                }
            }
            mode = .socks5(users)
        default:
            r.fail("\(path).mode", "expected \"forward\", \"reverse\" or \"socks5\", found \"\(modeName)\"")
        }
        let replay = o["replay"].flatMap { ReplaySettings.read($0, "\(path).replay", r) }
        guard r.errors.count == before, let address else { return nil }
        return ListenEntry(address: address, mode: mode, replay: replay)
    }

    /// A reverse listener's `protocols`: a non-empty list of `"http/1.1"` and `"h2c"` that
    /// includes `"http/1.1"` (a client that does not open with the HTTP/2 preface is always
    /// answered in HTTP/1.1). True when it lists `h2c`.
    static func readProtocols(_ v: JSON?, _ path: String, _ r: ConfigReader) -> Bool {
        guard let v else { return false }
        guard case .array(let items) = v, !items.isEmpty else {
            r.fail(path, "expected a list such as [\"http/1.1\", \"h2c\"], found \(ConfigReader.describe(v))")
            return false
        }
        var h2c = false, http1 = false
        for (i, item) in items.enumerated() {
            switch r.string(item, "\(path)[\(i)]") {
            case "http/1.1"?: http1 = true
            case "h2c"?: h2c = true
            case let other?:
                r.fail("\(path)[\(i)]", "expected \"http/1.1\" or \"h2c\", found \"\(other)\" (h2 over TLS is offered by tls.intercept, not here)")
            case nil: break
            }
        }
        if !http1 { r.fail(path, "must include \"http/1.1\": a client without the HTTP/2 preface is answered in HTTP/1.1") }
        return h2c
    }

    /// `http://host[:port]` or `https://…`, an optional `/` and nothing after it.
    static func upstreamAuthority(_ text: String) -> HTTPAuthority? {
        guard text.hasPrefix("http://") || text.hasPrefix("https://") else { return nil }
        let target = text.hasSuffix("/") ? text : text + "/"
        guard case .absolute(let authority, let originTarget)? = try? HTTPRequestHead(method: "GET", target: target).proxyForm(),
              originTarget == "/", !authority.host.isEmpty else { return nil }
        return authority
    }

    struct UsersFileError: Error { var message: String }

    /// A `users` file: `user:pass` lines (the password is everything after the first `:`),
    /// empty lines and `#` comments skipped. Refused when group or others may read it, since it
    /// holds passwords in the clear.
    static func readUsers(_ path: String) -> Result<SOCKS5Credentials, UsersFileError> {
        var st = stat()
        guard stat(path, &st) == 0 else {
            return .failure(UsersFileError(message: "\(path): \(String(cString: strerror(errno)))"))
        }
        if st.st_mode & 0o077 != 0 {
            return .failure(UsersFileError(message: "\(path) may be read by group or others (mode \(String(st.st_mode & 0o777, radix: 8))): chmod 600 it"))
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(UsersFileError(message: "\(path) cannot be read"))
        }
        var table: [String: String] = [:]
        // "\r\n" is one Character in Swift, so splitting on "\n" alone would not split a file
        // with CRLF line ends.
        let lines = String(decoding: data, as: UTF8.self).split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }
        for (i, raw) in lines.enumerated() {
            let line = raw.hasSuffix("\r") ? raw.dropLast() : raw
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let colon = line.firstIndex(of: ":") else {
                return .failure(UsersFileError(message: "\(path) line \(i + 1): expected user:password"))
            }
            let user = String(line[..<colon]), password = String(line[line.index(after: colon)...])
            // RFC 1929 carries each in one length byte.
            guard !user.isEmpty, user.utf8.count <= 255, password.utf8.count <= 255 else {
                return .failure(UsersFileError(message: "\(path) line \(i + 1): user and password must be 1 to 255 bytes (RFC 1929)"))
            }
            if table[user] != nil { return .failure(UsersFileError(message: "\(path) line \(i + 1): user \(user) listed twice")) }
            table[user] = password
        }
        guard !table.isEmpty else { return .failure(UsersFileError(message: "\(path) lists no user")) }
        return .success(SOCKS5Credentials(table))
    }
}
