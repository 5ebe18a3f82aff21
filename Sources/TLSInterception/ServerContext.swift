import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TLS server `SSL_CTX` presenting a leaf certificate for one host, signed
/// by the Tapwire CA: TLS 1.2 minimum, no renegotiation. ALPN picks `h2` when the client
/// offers it and `offerHTTP2` is set (`tls.http2`), else `http/1.1`; a client offering
/// neither gets no ALPN and speaks HTTP/1.1.
///
/// Each leaf has its own fresh EC P-256 key (a few tens of microseconds to
/// make): a key leaked from one leaf cannot impersonate other hosts.
///
/// `SSL_CTX` is reference counted and safe to share between threads once
/// configured; `SSL_new(sslContext)` takes its own reference, so the engine
/// only needs to keep this object alive until its `SSL` is created.
public final class ServerContext: @unchecked Sendable {
    /// Leaf lifetime cap: 397 days, the CA/Browser Forum limit (Apple allows 398).
    public static let maximumLifetimeSeconds = 397 * 86_400
    /// Backdating absorbs clock skew between this host and the client.
    public static let backdateSeconds = 3600

    /// The canonical host (lower-cased DNS name or canonical IP text).
    public let host: String
    /// Seconds since 1970.
    public let notBefore: Int
    /// Seconds since 1970; never later than the CA's own notAfter.
    public let notAfter: Int
    /// Borrowed `SSL_CTX *`, valid while this object lives.
    public var sslContext: OpaquePointer { context }

    private let context: OpaquePointer

    init(host: HostName, authority: CertificateAuthority, now: Int, offerHTTP2: Bool) throws(TLSSetupError) {
        let key = try PrivateKey.generateP256()
        let certificate = try ServerContext.makeLeaf(host: host, key: key, authority: authority, now: now)

        guard let method = TLS_server_method(), let context = SSL_CTX_new(method) else {
            throw .openSSL(operation: "SSL_CTX_new(server)", details: drainOpenSSLErrors())
        }
        // Owned from here; freed by deinit or, on a failed init, below.
        var configured = false
        defer { if !configured { SSL_CTX_free(context) } }
        try CertificateBuilding.check(tw_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION),
                                      "SSL_CTX_set_min_proto_version")
        tw_SSL_CTX_disable_renegotiation(context)
        try CertificateBuilding.check(SSL_CTX_use_certificate(context, certificate.pointer), "SSL_CTX_use_certificate")
        try CertificateBuilding.check(SSL_CTX_use_PrivateKey(context, key.pointer), "SSL_CTX_use_PrivateKey")
        try CertificateBuilding.check(SSL_CTX_check_private_key(context), "SSL_CTX_check_private_key")
        if offerHTTP2 {
            SSL_CTX_set_alpn_select_cb(context, selectHTTP2ThenHTTP11, nil)
        } else {
            SSL_CTX_set_alpn_select_cb(context, selectHTTP11, nil)
        }
        try CertificateBuilding.check(Int32(tw_SSL_CTX_set_tlsext_servername_callback(context, followClientSNI)),
                                      "SSL_CTX_set_tlsext_servername_callback")

        self.host = host.text
        self.notBefore = CertificateBuilding.secondsSince1970(X509_getm_notBefore(certificate.pointer)) ?? now
        self.notAfter = CertificateBuilding.secondsSince1970(X509_getm_notAfter(certificate.pointer)) ?? now
        self.context = context
        configured = true
    }

    deinit { SSL_CTX_free(context) }

    /// A new server-side `SSL` for one client connection, owned by the caller
    /// (e.g. handed to `bufferevent_openssl_filter_new` with
    /// `BEV_OPT_CLOSE_ON_FREE`). It holds its own reference to the context,
    /// so this object may be released (or evicted) afterwards.
    public func makeSSL() throws(TLSSetupError) -> OpaquePointer {
        guard let ssl = withExtendedLifetime(self, { SSL_new(context) }) else {
            throw .openSSL(operation: "SSL_new(server)", details: drainOpenSSLErrors())
        }
        SSL_set_accept_state(ssl)
        return ssl
    }

    static func makeLeaf(host: HostName, key: PrivateKey, authority: CertificateAuthority,
                         now: Int) throws(TLSSetupError) -> Certificate {
        let certificate = try CertificateBuilding.newCertificate()
        try CertificateBuilding.setRandomSerial(certificate)
        try CertificateBuilding.addSubjectEntry(certificate, field: "CN",
                                                value: String(decoding: host.text.utf8.prefix(64), as: UTF8.self))
        try CertificateBuilding.check(X509_set_issuer_name(certificate.pointer,
                                                           X509_get_subject_name(authority.certificate.pointer)),
                                      "X509_set_issuer_name")
        try setValidity(certificate, authority: authority, now: now)
        try CertificateBuilding.check(X509_set_pubkey(certificate.pointer, key.pointer), "X509_set_pubkey")
        try CertificateBuilding.addExtension(certificate, nid: NID_basic_constraints, value: "critical,CA:FALSE",
                                             issuer: authority.certificate)
        try CertificateBuilding.addExtension(certificate, nid: NID_key_usage, value: "critical,digitalSignature",
                                             issuer: authority.certificate)
        try CertificateBuilding.addExtension(certificate, nid: NID_ext_key_usage, value: "serverAuth",
                                             issuer: authority.certificate)
        try CertificateBuilding.addExtension(certificate, nid: NID_subject_key_identifier, value: "hash",
                                             issuer: authority.certificate)
        // "issuer" is only a fallback for an imported CA without a key identifier.
        try CertificateBuilding.addExtension(certificate, nid: NID_authority_key_identifier, value: "keyid,issuer",
                                             issuer: authority.certificate)
        try CertificateBuilding.addSubjectAltName(certificate, host: host)
        try CertificateBuilding.sign(certificate, with: authority.key)
        return certificate
    }

    /// notBefore = now − 1 h; notAfter = now + 397 days, or the CA's notAfter if sooner.
    private static func setValidity(_ certificate: Certificate, authority: CertificateAuthority,
                                    now: Int) throws(TLSSetupError) {
        let notBefore = time_t(now - backdateSeconds)
        let notAfter = time_t(min(now + maximumLifetimeSeconds, authority.notAfter))
        guard ASN1_TIME_set(X509_getm_notBefore(certificate.pointer), notBefore) != nil,
              ASN1_TIME_set(X509_getm_notAfter(certificate.pointer), notAfter) != nil else {
            throw .openSSL(operation: "ASN1_TIME_set", details: drainOpenSSLErrors())
        }
    }
}

/// ALPN: pick `http/1.1` from the client's list, or decline ALPN entirely.
private func selectHTTP11(_ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                          _ outLength: UnsafeMutablePointer<UInt8>?, _ input: UnsafePointer<UInt8>?,
                          _ inputLength: UInt32, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    selectALPN(preferring: [ALPNName.http11], out, outLength, input, inputLength)
}

/// ALPN: `h2` if the client offers it (whatever its own order), else `http/1.1`, else none.
private func selectHTTP2ThenHTTP11(_ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                                   _ outLength: UnsafeMutablePointer<UInt8>?, _ input: UnsafePointer<UInt8>?,
                                   _ inputLength: UInt32, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    selectALPN(preferring: [ALPNName.h2, ALPNName.http11], out, outLength, input, inputLength)
}

private enum ALPNName {
    static let h2 = Array("h2".utf8)
    static let http11 = Array("http/1.1".utf8)
}

/// The first of `preferring` the client's list holds. `out` points into the client's own
/// list, which OpenSSL keeps alive for the duration of the callback as required.
private func selectALPN(preferring: [[UInt8]], _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                        _ outLength: UnsafeMutablePointer<UInt8>?, _ input: UnsafePointer<UInt8>?,
                        _ inputLength: UInt32) -> Int32 {
    guard let out, let outLength, let input else { return SSL_TLSEXT_ERR_NOACK }
    let list = UnsafeBufferPointer(start: input, count: Int(inputLength))
    for wanted in preferring {
        var index = 0
        while index < list.count {
            let length = Int(list[index])
            let start = index + 1
            guard start + length <= list.count else { break }
            if length == wanted.count && list[start..<(start + length)].elementsEqual(wanted) {
                out.pointee = input + start
                outLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
            index = start + length
        }
    }
    return SSL_TLSEXT_ERR_NOACK
}

/// Frees an `SSL` from `makeSSL` that was never handed to a bufferevent (which would own it).
public func freeSSL(_ ssl: OpaquePointer) { SSL_free(ssl) }

/// The protocol ALPN settled on for `ssl` (`"h2"`, `"http/1.1"`), nil when none was.
/// The bytes are OpenSSL's, copied before returning.
public func negotiatedALPN(_ ssl: OpaquePointer) -> String? {
    var data: UnsafePointer<UInt8>?
    var length: UInt32 = 0
    SSL_get0_alpn_selected(ssl, &data, &length)
    guard let data, length > 0 else { return nil }
    return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
}
