import COpenSSL
import ProxyEngine
import TLSInterception

/// TLS with an `https` parent proxy, verified as an origin is (`tls.upstreamCAFile`,
/// `tls.insecureUpstream`); made whether or not anything is intercepted.
struct ParentTLS: ClientTLS {
    let context: UpstreamTLSContext

    func clientSSL(forHost host: String) throws -> OpaquePointer {
        try context.makeSSL(host: host)
    }

    func failureDescription(ssl: OpaquePointer?, error: UInt) -> String {
        Self.describeFailure(ssl: ssl, error: error)
    }

    func free(ssl: OpaquePointer) { SSL_free(ssl) }

    /// The certificate verification result, else OpenSSL's text for `error`.
    static func describeFailure(ssl: OpaquePointer?, error: UInt) -> String {
        if let ssl {
            let verify = UpstreamTLSContext.describeVerifyError(ssl)
            if verify != "ok" { return verify }
        }
        guard error != 0 else { return "the connection closed during the handshake" }
        var buf = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(error, &buf, buf.count)
        return String(cString: buf)
    }
}
