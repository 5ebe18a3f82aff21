import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The client `SSL_CTX` for connections to origins: TLS 1.2 minimum, ALPN
/// `http/1.1` (a connection that can speak HTTP/2 offers `h2` too: `offerHTTP2(ssl:)`), and (unless `insecure`) peer verification against the system
/// trust store plus an optional extra CA file (`tls.upstreamCAFile`); without
/// `systemTrust`, against that file alone (`tapwire replay` checking the
/// proxy's leaf against Tapwire's own CA).
/// Hostname checks are per connection: call `configure(ssl:host:)` on each
/// `SSL` before the handshake.
public final class UpstreamTLSContext: @unchecked Sendable {
    public let insecure: Bool
    public let upstreamCAFile: String?
    /// Borrowed `SSL_CTX *`, valid while this object lives.
    public var sslContext: OpaquePointer { context }

    private let context: OpaquePointer

    public init(upstreamCAFile: String? = nil, insecure: Bool = false, systemTrust: Bool = true) throws(TLSSetupError) {
        guard let method = TLS_client_method(), let context = SSL_CTX_new(method) else {
            throw .openSSL(operation: "SSL_CTX_new(client)", details: drainOpenSSLErrors())
        }
        var configured = false
        defer { if !configured { SSL_CTX_free(context) } }
        try CertificateBuilding.check(tw_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION),
                                      "SSL_CTX_set_min_proto_version")
        tw_SSL_CTX_disable_renegotiation(context)
        let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
        // Unlike nearly every other OpenSSL call, 0 means success here.
        guard SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count)) == 0 else {
            throw .openSSL(operation: "SSL_CTX_set_alpn_protos", details: drainOpenSSLErrors())
        }
        if insecure {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        } else {
            if systemTrust {
                try CertificateBuilding.check(SSL_CTX_set_default_verify_paths(context), "SSL_CTX_set_default_verify_paths")
            }
            if let upstreamCAFile {
                guard access(upstreamCAFile, R_OK) == 0 else {
                    throw .file(path: upstreamCAFile, reason: errnoText())
                }
                guard SSL_CTX_load_verify_file(context, upstreamCAFile) == 1 else {
                    throw .unreadableCertificate(path: upstreamCAFile, reason: drainOpenSSLErrors())
                }
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        }
        self.insecure = insecure
        self.upstreamCAFile = upstreamCAFile
        self.context = context
        configured = true
    }

    deinit { SSL_CTX_free(context) }

    /// A new client-side `SSL` for a connection to `host`, already passed
    /// through `configure(ssl:host:)`; owned by the caller.
    public func makeSSL(host: String) throws(TLSSetupError) -> OpaquePointer {
        guard let ssl = withExtendedLifetime(self, { SSL_new(context) }) else {
            throw .openSSL(operation: "SSL_new(client)", details: drainOpenSSLErrors())
        }
        do {
            try configure(ssl: ssl, host: host)
        } catch {
            SSL_free(ssl)
            throw error
        }
        SSL_set_connect_state(ssl)
        return ssl
    }

    /// Prepares an `SSL` made from `sslContext` for `host`: SNI for DNS
    /// names (RFC 6066 forbids it for IP literals) and, unless insecure, the
    /// name or address the certificate must match. Throws rather than
    /// continuing without a hostname check.
    public func configure(ssl: OpaquePointer, host: String) throws(TLSSetupError) {
        let name = try HostName(host)
        if !name.isIPAddress {
            try CertificateBuilding.check(tw_SSL_set_tlsext_host_name(ssl, name.text), "SSL_set_tlsext_host_name")
        }
        guard !insecure else { return }
        if name.isIPAddress {
            guard let parameters = SSL_get0_param(ssl) else {
                throw .openSSL(operation: "SSL_get0_param", details: drainOpenSSLErrors())
            }
            try CertificateBuilding.check(X509_VERIFY_PARAM_set1_ip_asc(parameters, name.text),
                                          "X509_VERIFY_PARAM_set1_ip_asc")
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            try CertificateBuilding.check(SSL_set1_host(ssl, name.text), "SSL_set1_host")
        }
    }

    /// Offers `h2` before `http/1.1` on one connection; the origin picks. Only the engine's
    /// exchanges, which can drive HTTP/2, ask (an upgrade request or `tapwire replay` cannot).
    public static func offerHTTP2(ssl: OpaquePointer) throws(TLSSetupError) {
        let alpn: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)
        // 0 means success here, as for the context's list.
        guard SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count)) == 0 else {
            throw .openSSL(operation: "SSL_set_alpn_protos", details: drainOpenSSLErrors())
        }
    }

    /// The verification result of a finished (or failed) handshake as
    /// OpenSSL words it, e.g. "unable to get local issuer certificate" or
    /// "hostname mismatch"; "ok" when verification passed.
    public static func describeVerifyError(_ ssl: OpaquePointer) -> String {
        stringFromCString(X509_verify_cert_error_string(SSL_get_verify_result(ssl)))
    }
}
