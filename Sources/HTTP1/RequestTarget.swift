// Classifying a request-target into the form a proxy acts on (RFC 9112 §3.2).

public enum ProxyRequestForm: Sendable, Equatable {
    /// `GET http://host[:port]/path?q HTTP/1.1`: forward. `originTarget` is `/path?q` (`/` when empty).
    case absolute(HTTPAuthority, originTarget: String)
    /// `CONNECT host:port`.
    case authority(HTTPAuthority)
    /// `GET /path`: addressed to the proxy itself (admin endpoints).
    case origin(path: String)
    /// `OPTIONS *`.
    case asterisk
}

extension HTTPRequestHead {
    /// Classifies the request-target. Throws `.malformed` for a target that fits no
    /// form, an absolute-form with a scheme other than http/https, a missing or
    /// invalid host or port (0, > 65535, non-digits), userinfo, or CONNECT without
    /// authority-form.
    public func proxyForm() throws(HTTPParseError) -> ProxyRequestForm {
        // On the target's bytes where they are: `Array(target.utf8)` would allocate and copy
        // per request, on the event loop.
        let method = self.method, target = self.target
        return try HTTPHeaders.withUTF8(target) { t in
            Result { () throws(HTTPParseError) -> ProxyRequestForm in
                if method == "CONNECT" {
                    let (host, port) = try RequestTarget.parseHostPort(t, scheme: "").get()
                    return .authority(HTTPAuthority(scheme: "", host: host, port: port))
                }
                guard let first = t.first else { throw HTTPParseError(.malformed, "empty request-target") }
                if first == UInt8(ascii: "/") { return .origin(path: target) }
                if t.count == 1 && first == UInt8(ascii: "*") {
                    guard method == "OPTIONS" else { throw HTTPParseError(.malformed, "asterisk-form is only for OPTIONS") }
                    return .asterisk
                }
                return try RequestTarget.parseAbsolute(t)
            }
        }.get()
    }
}

/// Request-target syntax (RFC 9112 §3.2, RFC 3986 §3.2).
enum RequestTarget {
    static func parseAbsolute(_ t: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> ProxyRequestForm {
        // scheme ":" "//"
        guard let colon = t.firstIndex(of: UInt8(ascii: ":")) else {
            throw HTTPParseError(.malformed, "request-target fits no form")
        }
        // Compared on the bytes: lowercased() allocated a string per request.
        let scheme: String
        if colon == 4 && t[0] | 0x20 == UInt8(ascii: "h") && t[1] | 0x20 == UInt8(ascii: "t")
            && t[2] | 0x20 == UInt8(ascii: "t") && t[3] | 0x20 == UInt8(ascii: "p") {
            scheme = "http"
        } else if colon == 5 && t[0] | 0x20 == UInt8(ascii: "h") && t[1] | 0x20 == UInt8(ascii: "t")
            && t[2] | 0x20 == UInt8(ascii: "t") && t[3] | 0x20 == UInt8(ascii: "p") && t[4] | 0x20 == UInt8(ascii: "s") {
            scheme = "https"
        } else {
            throw HTTPParseError(.malformed, "unsupported scheme in request-target")
        }
        guard t.count >= colon + 3, t[colon + 1] == UInt8(ascii: "/"), t[colon + 2] == UInt8(ascii: "/") else {
            throw HTTPParseError(.malformed, "absolute-form without authority")
        }
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < t.count {
            let c = t[authorityEnd]
            if c == UInt8(ascii: "/") || c == UInt8(ascii: "?") || c == UInt8(ascii: "#") { break }
            authorityEnd += 1
        }
        let (host, port) = try parseHostPort(UnsafeBufferPointer(rebasing: t[authorityStart..<authorityEnd]), scheme: scheme).get()

        // A fragment is never sent on the wire by a correct client; drop it rather than forward it.
        var end = authorityEnd
        while end < t.count && t[end] != UInt8(ascii: "#") { end += 1 }
        var origin = String(decoding: t[authorityEnd..<end], as: UTF8.self)
        if origin.isEmpty || origin.utf8.first == UInt8(ascii: "?") { origin = "/" + origin }
        return .absolute(HTTPAuthority(scheme: scheme, host: host, port: port), originTarget: origin)
    }

    /// `host[:port]` (absolute-form, port defaults by scheme) or `host:port`
    /// (authority-form, scheme "", port required). Host is lowercased.
    ///
    /// Index loops over the bytes rather than generic slice searches and `lowercased()`
    /// (Unicode-aware, a new string), since this runs on the loop per request. Every byte a
    /// host may hold is ASCII, so lowering ASCII letters is the same as `lowercased()`.
    static func parseHostPort(_ a: UnsafeBufferPointer<UInt8>, scheme: String) -> Result<(String, Int), HTTPParseError> {
        let n = a.count
        for i in 0..<n where a[i] == UInt8(ascii: "@") {
            return .failure(HTTPParseError(.malformed, "userinfo in request-target"))
        }
        let hostStart: Int, hostEnd: Int, restStart: Int
        if n > 0 && a[0] == UInt8(ascii: "[") {
            var close = 1
            while close < n && a[close] != UInt8(ascii: "]") { close += 1 }
            guard close < n else { return .failure(HTTPParseError(.malformed, "unterminated IPv6 literal")) }
            hostStart = 1
            hostEnd = close
            restStart = close + 1
            var sawColon = false
            for i in hostStart..<hostEnd {
                let c = a[i]
                if c == UInt8(ascii: ":") {
                    sawColon = true
                } else if ByteClass.hexValue(c) == nil && c != UInt8(ascii: ".") {
                    return .failure(HTTPParseError(.malformed, "invalid IPv6 literal"))
                }
            }
            guard sawColon else { return .failure(HTTPParseError(.malformed, "invalid IPv6 literal")) }
        } else {
            var colon = 0
            while colon < n && a[colon] != UInt8(ascii: ":") { colon += 1 }
            hostStart = 0
            hostEnd = colon
            restStart = colon
            for i in 0..<colon where !isRegNameByte(a[i]) {
                return .failure(HTTPParseError(.malformed, "invalid host"))
            }
        }
        guard hostEnd > hostStart else { return .failure(HTTPParseError(.malformed, "missing host")) }
        let host = String(unsafeUninitializedCapacity: hostEnd - hostStart) { out in
            for i in hostStart..<hostEnd { out[i - hostStart] = asciiLower(a[i]) }
            return hostEnd - hostStart
        }

        let rest = n - restStart
        if rest == 0 || (rest == 1 && a[restStart] == UInt8(ascii: ":")) {
            // RFC 3986 §3.2.3: an empty port means the scheme's default.
            switch scheme {
            case "http": return .success((host, 80))
            case "https": return .success((host, 443))
            default: return .failure(HTTPParseError(.malformed, "CONNECT target without port"))
            }
        }
        guard a[restStart] == UInt8(ascii: ":") else { return .failure(HTTPParseError(.malformed, "invalid authority")) }
        guard rest - 1 <= 5 else { return .failure(HTTPParseError(.malformed, "invalid port")) }
        var port = 0
        for i in (restStart + 1)..<n {
            guard ByteClass.isDigit(a[i]) else { return .failure(HTTPParseError(.malformed, "invalid port")) }
            port = port * 10 + Int(a[i] - 48)
        }
        guard (1...65535).contains(port) else { return .failure(HTTPParseError(.malformed, "invalid port")) }
        return .success((host, port))
    }

    /// unreserved / pct-encoded / sub-delims (RFC 3986 reg-name and IPv4).
    static func isRegNameByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        // Spelled out: `"-._~%…".utf8.contains(c)` was a generic search per dot of every host.
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"),
             UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }
}
