import COpenSSL
import Configuration
import ExchangeLog
import Foundation
import ProxyEngine
import TLSInterception

/// The engine's `TLSInterceptor` from the config's `tls` block: which hosts are
/// decrypted, the leaf certificates shown to clients, and the trust used for origins.
struct HTTPSInterception: TLSInterceptor {
    let intercept: [Glob]
    let ignore: [Glob]
    /// nil when nothing is intercepted (only origins are verified: a reverse listener's https
    /// upstream), so no CA is created for nothing.
    let leaves: LeafCertificateCache?
    let upstream: UpstreamTLSContext

    /// nil when `tls.intercept` is empty and no origin needs TLS (`originTLS`, a reverse
    /// listener's https upstream): every CONNECT stays a blind tunnel. The CA is nil when only
    /// origins need TLS.
    static func make(_ tls: TapwireConfiguration.TLSConfig, originTLS: Bool = false) throws -> (HTTPSInterception, CertificateAuthority?)? {
        guard !tls.intercept.isEmpty || originTLS else { return nil }
        let ca = tls.intercept.isEmpty ? nil : try CertificateAuthority.loadOrCreate(directory: tls.caDirectory)
        let upstream = try UpstreamTLSContext(upstreamCAFile: tls.upstreamCAFile, insecure: tls.insecureUpstream)
        return (HTTPSInterception(intercept: tls.intercept.map { Glob($0, caseInsensitive: true) },
                                  ignore: tls.ignore.map { Glob($0, caseInsensitive: true) },
                                  leaves: ca.map { LeafCertificateCache(ca: $0, capacity: tls.leafCacheSize, offerHTTP2: tls.http2) }, upstream: upstream), ca)
    }

    func intercepts(host: String) -> Bool {
        Self.intercepts(host: host, intercept: intercept, ignore: ignore)
    }

    /// The same decision without a CA (`tapwire replay` asks it of the config alone).
    static func intercepts(host: String, config tls: TapwireConfiguration.TLSConfig) -> Bool {
        intercepts(host: host, intercept: tls.intercept.map { Glob($0, caseInsensitive: true) },
                   ignore: tls.ignore.map { Glob($0, caseInsensitive: true) })
    }

    private static func intercepts(host: String, intercept: [Glob], ignore: [Glob]) -> Bool {
        // One trailing dot names the same host (the certificate code drops it too): matched
        // as given, "localhost." escaped tls.ignore ["localhost"] and was decrypted.
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        return intercept.contains { $0.matches(name) } && !ignore.contains { $0.matches(name) }
    }

    func serverSSL(forHost host: String) throws -> OpaquePointer {
        guard let leaves else { throw InterceptionOff() }
        return try leaves.makeSSL(forHost: host)
    }

    func clientSSL(forHost host: String) throws -> OpaquePointer {
        try upstream.makeSSL(host: host)
    }

    func clientSSLOfferingHTTP2(forHost host: String) throws -> OpaquePointer {
        let ssl = try upstream.makeSSL(host: host)
        do { try UpstreamTLSContext.offerHTTP2(ssl: ssl) } catch {
            SSL_free(ssl)
            throw error
        }
        return ssl
    }

    func negotiatedProtocol(ssl: OpaquePointer) -> String? { negotiatedALPN(ssl) }

    func free(ssl: OpaquePointer) { SSL_free(ssl) }

    func failureDescription(ssl: OpaquePointer?, error: UInt) -> String {
        if let ssl {
            if let sni = LeafCertificateCache.refusedServerName(ssl) {
                return "the client asked (SNI) for \(sni), not the CONNECT host; refused, since only the CONNECT host is verified upstream"
            }
        }
        return ParentTLS.describeFailure(ssl: ssl, error: error)
    }
}

/// `serverSSL` without a CA: nothing is intercepted (`intercepts` is false for every host).
struct InterceptionOff: Error, CustomStringConvertible {
    var description: String { "tls.intercept is empty" }
}
