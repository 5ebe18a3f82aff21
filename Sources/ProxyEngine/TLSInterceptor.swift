/// What the engine needs to intercept HTTPS after CONNECT; the certificates
/// and trust decisions live outside the engine (TLSInterception).
/// SSL objects are passed as the opaque `SSL *` and owned by the bufferevent
/// they are given to (freed with it).
public protocol TLSInterceptor: Sendable {
    /// Whether CONNECT to `host` is decrypted (`tls.intercept` minus `tls.ignore`).
    func intercepts(host: String) -> Bool
    /// A server-side `SSL *` presenting a leaf certificate for `host` to the client.
    func serverSSL(forHost host: String) throws -> OpaquePointer
    /// A client-side `SSL *` that verifies the origin `host` (SNI, hostname check, ALPN http/1.1).
    func clientSSL(forHost host: String) throws -> OpaquePointer
    /// A client-side `SSL *` like `clientSSL(forHost:)` that also offers `h2` in ALPN.
    func clientSSLOfferingHTTP2(forHost host: String) throws -> OpaquePointer
    /// The protocol ALPN settled on for a handshaken `SSL *` (`"h2"`, `"http/1.1"`), nil if none.
    func negotiatedProtocol(ssl: OpaquePointer) -> String?
    /// Frees an `SSL *` from `serverSSL` that was never given to a bufferevent.
    func free(ssl: OpaquePointer)
    /// Why a handshake failed: the certificate verification result or the OpenSSL error text.
    func failureDescription(ssl: OpaquePointer?, error: UInt) -> String
}

extension TLSInterceptor {
    /// An interceptor that cannot offer HTTP/2 to origins offers HTTP/1.1 alone.
    public func clientSSLOfferingHTTP2(forHost host: String) throws -> OpaquePointer {
        try clientSSL(forHost: host)
    }
}
