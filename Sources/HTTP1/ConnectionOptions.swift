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
