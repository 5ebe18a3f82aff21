/// What the engine needs to intercept HTTPS after CONNECT; the certificates
/// and trust decisions live outside the engine (TLSInterception).
/// SSL objects are passed as the opaque `SSL *` and owned by the bufferevent
/// they are given to (freed with it).
public protocol TLSInterceptor: ClientTLS {
    /// Whether CONNECT to `host` is decrypted (`tls.intercept` minus `tls.ignore`).
    func intercepts(host: String) -> Bool
    /// A server-side `SSL *` presenting a leaf certificate for `host` to the client.
    func serverSSL(forHost host: String) throws -> OpaquePointer
    // `clientSSL(forHost:)` (from `ClientTLS`) verifies the origin `host`: SNI, hostname
    // check, ALPN http/1.1. `failureDescription` also names a client's refused SNI, and
    // `free(ssl:)` takes a `serverSSL` one too.
    /// A client-side `SSL *` like `clientSSL(forHost:)` that also offers `h2` in ALPN.
    func clientSSLOfferingHTTP2(forHost host: String) throws -> OpaquePointer
    /// The protocol ALPN settled on for a handshaken `SSL *` (`"h2"`, `"http/1.1"`), nil if none.
    func negotiatedProtocol(ssl: OpaquePointer) -> String?
}

extension TLSInterceptor {
    /// An interceptor that cannot offer HTTP/2 to origins offers HTTP/1.1 alone.
    public func clientSSLOfferingHTTP2(forHost host: String) throws -> OpaquePointer {
        try clientSSL(forHost: host)
    }
}
