// CONTRACT (filled in by the HTTP1 work): signatures here are what ProxyEngine calls.

/// Where a proxied request goes, from its request-target.
public struct HTTPAuthority: Sendable, Hashable, CustomStringConvertible {
    public var scheme: String   // "http", "https" (authority-form: "")
    /// Host without brackets: `example.com`, `127.0.0.1`, `::1`.
    public var host: String
    public var port: Int
    public init(scheme: String, host: String, port: Int) { self.scheme = scheme; self.host = host; self.port = port }
    /// `host:port`, bracketing IPv6 literals.
    public var description: String { fatalError("unimplemented") }
}

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
        fatalError("unimplemented")
    }

    /// The head to send upstream for an absolute-form request: origin-form target,
    /// `Host` replaced by the authority from the target (the target wins over a
    /// conflicting Host), hop-by-hop fields removed (see `removingHopByHop`).
    public func forwardedRequestHead(authority: HTTPAuthority, originTarget: String, keepUpgrade: Bool) -> HTTPRequestHead {
        fatalError("unimplemented")
    }

    /// Whether the client asked to close after this exchange (HTTP/1.0 without
    /// keep-alive, or `Connection: close`).
    public var wantsClose: Bool { fatalError("unimplemented") }

    /// The head's wire form: request-line, fields, CRLF.
    public func serialized() -> [UInt8] { fatalError("unimplemented") }
}

extension HTTPResponseHead {
    public var wantsClose: Bool { fatalError("unimplemented") }
    public func serialized() -> [UInt8] { fatalError("unimplemented") }
}

extension HTTPHeaders {
    /// Drops hop-by-hop fields: Connection and every field it names, Proxy-Connection,
    /// Keep-Alive, TE, Trailer, Transfer-Encoding is KEPT (framing is forwarded verbatim),
    /// Proxy-Authorization, Proxy-Authenticate, and Upgrade unless `keepUpgrade`
    /// (then `Connection: upgrade` is kept too).
    public func removingHopByHop(keepUpgrade: Bool) -> HTTPHeaders {
        fatalError("unimplemented")
    }
}
