/// Whether a message asks for its connection to close after it (RFC 9112 §9.6).
enum ConnectionOptions {
    static func wantsClose(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        if headers.listContains(name: "connection", token: "close") { return true }
        return version == .http1_0 && !headers.listContains(name: "connection", token: "keep-alive")
    }
}

extension HTTPRequestHead {
    /// Whether the client asked to close after this exchange (HTTP/1.0 without
    /// keep-alive, or `Connection: close`).
    public var wantsClose: Bool { ConnectionOptions.wantsClose(version: version, headers: headers) }
}

extension HTTPResponseHead {
    /// Whether the origin closes after this response (HTTP/1.0 without keep-alive, or
    /// `Connection: close`).
    public var wantsClose: Bool { ConnectionOptions.wantsClose(version: version, headers: headers) }
}

extension HTTPRequestHead {
    /// Whether this request's upgrade is passed on to the origin: it asks with
    /// `Connection: upgrade` and an `Upgrade` field, is not HTTP/1.0 (whose Upgrade must be
    /// ignored, RFC 9110 §7.8), and offers some protocol other than `h2c`. `Upgrade: h2c`
    /// alone is never honoured: an origin's 101 would turn the connection into HTTP/2 that
    /// only a tunnel could carry, uninspected. Such a request goes on as HTTP/1.1 with its
    /// hop-by-hop Upgrade dropped. (The list is looked into only when Connection names upgrade.)
    public var forwardsUpgrade: Bool {
        guard version != .http1_0, headers.listContains(name: "connection", token: "upgrade"),
              headers.contains(name: "upgrade") else { return false }
        return headers.tokens(name: "upgrade").contains { $0.lowercased() != "h2c" }
    }
}
