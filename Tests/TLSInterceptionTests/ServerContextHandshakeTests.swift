import COpenSSL
import Foundation
@testable import TLSInterception
import XCTest

/// Full TLS handshakes in memory between a plain OpenSSL client and the
/// server contexts the cache hands out.
final class ServerContextHandshakeTests: XCTestCase {
    private var authority: CertificateAuthority!
    private var cache: LeafCertificateCache!

    override func setUpWithError() throws {
        authority = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        cache = LeafCertificateCache(ca: authority)
    }

    private func handshake(clientTrusting authorityPEM: String, sni: String,
                           serverHost: String, alpn: Bool = true) throws -> HandshakeOutcome {
        let clientContext = try XCTUnwrap(makeClientContext(trusting: authorityPEM))
        defer { SSL_CTX_free(clientContext) }
        let client = try XCTUnwrap(SSL_new(clientContext))
        let server = try cache.context(forHost: serverHost).makeSSL()
        XCTAssertEqual(tw_SSL_set_tlsext_host_name(client, sni), 1)
        XCTAssertEqual(SSL_set1_host(client, sni), 1)
        if alpn { offerHTTP11(client) }
        return runHandshake(client: client, server: server)
    }

    func testClientTrustingOnlyTheAuthorityCompletesAndNegotiatesHTTP11() throws {
        let outcome = try handshake(clientTrusting: authority.certificatePEM, sni: "example.test", serverHost: "example.test")
        XCTAssertTrue(outcome.clientSucceeded)
        XCTAssertTrue(outcome.serverSucceeded)
        XCTAssertEqual(outcome.clientVerifyResult, Int(X509_V_OK))
        XCTAssertEqual(outcome.clientALPN, "http/1.1")
        XCTAssertEqual(outcome.serverALPN, "http/1.1")
        XCTAssertEqual(outcome.serverSawSNI, "example.test")
    }

    func testClientWithoutALPNStillCompletes() throws {
        let outcome = try handshake(clientTrusting: authority.certificatePEM, sni: "example.test",
                                    serverHost: "example.test", alpn: false)
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertNil(outcome.clientALPN)
    }

    func testClientOfferingOnlyH2GetsNoALPNButCompletes() throws {
        let clientContext = try XCTUnwrap(makeClientContext(trusting: authority.certificatePEM))
        defer { SSL_CTX_free(clientContext) }
        let client = try XCTUnwrap(SSL_new(clientContext))
        let server = try cache.context(forHost: "example.test").makeSSL()
        let h2Only: [UInt8] = [2] + Array("h2".utf8)
        XCTAssertEqual(SSL_set_alpn_protos(client, h2Only, UInt32(h2Only.count)), 0)
        XCTAssertEqual(SSL_set1_host(client, "example.test"), 1)
        let outcome = runHandshake(client: client, server: server)
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertNil(outcome.clientALPN)
    }

    /// With `tls.http2` the leaf's context picks h2 whatever the client's order, and
    /// still http/1.1 for a client that does not offer h2.
    func testHTTP2IsPickedWhenOfferedAndEnabled() throws {
        let h2Cache = LeafCertificateCache(ca: authority, offerHTTP2: true)
        func negotiate(_ offer: [String]) throws -> (client: String?, server: String?) {
            let clientContext = try XCTUnwrap(makeClientContext(trusting: authority.certificatePEM))
            defer { SSL_CTX_free(clientContext) }
            let client = try XCTUnwrap(SSL_new(clientContext))
            let server = try h2Cache.context(forHost: "example.test").makeSSL()
            let list = offer.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            XCTAssertEqual(SSL_set_alpn_protos(client, list, UInt32(list.count)), 0)
            XCTAssertEqual(SSL_set1_host(client, "example.test"), 1)
            let outcome = runHandshake(client: client, server: server)
            XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
            return (outcome.clientALPN, outcome.serverALPN)
        }
        XCTAssertEqual(try negotiate(["http/1.1", "h2"]).client, "h2")
        XCTAssertEqual(try negotiate(["h2"]).client, "h2")
        XCTAssertEqual(try negotiate(["http/1.1"]).client, "http/1.1")
        XCTAssertNil(try negotiate(["spdy/3"]).client)
    }

    func testClientTrustingAnotherAuthorityFailsVerificationWithAReason() throws {
        let other = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        let outcome = try handshake(clientTrusting: other.certificatePEM, sni: "example.test", serverHost: "example.test")
        XCTAssertFalse(outcome.clientSucceeded)
        XCTAssertFalse(outcome.serverSucceeded)
        XCTAssertEqual(outcome.clientVerifyResult, Int(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY))
        XCTAssertEqual(outcome.clientVerifyDescription, "unable to get local issuer certificate")
    }

    func testLeafForAnotherHostFailsTheClientsHostnameCheck() throws {
        let outcome = try handshake(clientTrusting: authority.certificatePEM, sni: "example.test", serverHost: "other.test")
        XCTAssertFalse(outcome.clientSucceeded)
        XCTAssertEqual(outcome.clientVerifyResult, Int(X509_V_ERR_HOSTNAME_MISMATCH))
        XCTAssertEqual(outcome.clientVerifyDescription, "hostname mismatch")
    }

    func testTLS11ClientIsRefused() throws {
        let clientContext = try XCTUnwrap(makeClientContext(trusting: authority.certificatePEM))
        defer { SSL_CTX_free(clientContext) }
        XCTAssertEqual(SSL_CTX_ctrl(clientContext, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(TLS1_1_VERSION), nil), 1)
        let client = try XCTUnwrap(SSL_new(clientContext))
        let server = try cache.context(forHost: "example.test").makeSSL()
        let outcome = runHandshake(client: client, server: server)
        XCTAssertFalse(outcome.clientSucceeded)
        XCTAssertFalse(outcome.serverSucceeded)
    }

    /// Tapwire connects to and verifies the CONNECT host only, so a certificate for another
    /// SNI name would vouch for a host nobody checked: such a ClientHello is refused.
    func testSSLFromTheCacheRefusesAnSNIOtherThanTheConnectHost() throws {
        let clientContext = try XCTUnwrap(makeClientContext(trusting: authority.certificatePEM))
        defer { SSL_CTX_free(clientContext) }
        let client = try XCTUnwrap(SSL_new(clientContext))
        XCTAssertEqual(tw_SSL_set_tlsext_host_name(client, "example.test"), 1)
        XCTAssertEqual(SSL_set1_host(client, "example.test"), 1)
        offerHTTP11(client)
        // CONNECT named an address; the client's SNI names another host.
        let server = try cache.makeSSL(forHost: "127.0.0.1")
        SSL_up_ref(server)
        defer { SSL_free(server) }
        let outcome = runHandshake(client: client, server: server)
        XCTAssertFalse(outcome.clientSucceeded)
        XCTAssertFalse(outcome.serverSucceeded)
        XCTAssertEqual(LeafCertificateCache.refusedServerName(server), "example.test")
        XCTAssertEqual(cache.count, 1, "no certificate was made for the SNI name")
    }

    /// The same host in SNI, whatever its case or a trailing dot, is no mismatch.
    func testSSLFromTheCacheAcceptsTheConnectHostInSNI() throws {
        let clientContext = try XCTUnwrap(makeClientContext(trusting: authority.certificatePEM))
        defer { SSL_CTX_free(clientContext) }
        let client = try XCTUnwrap(SSL_new(clientContext))
        XCTAssertEqual(tw_SSL_set_tlsext_host_name(client, "Example.TEST."), 1)
        XCTAssertEqual(SSL_set1_host(client, "example.test"), 1)
        offerHTTP11(client)
        let outcome = runHandshake(client: client, server: try cache.makeSSL(forHost: "example.test"))
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertEqual(outcome.clientVerifyResult, Int(X509_V_OK))
        XCTAssertEqual(outcome.clientALPN, "http/1.1")
        XCTAssertEqual(cache.count, 1)
    }

    func testSSLFromTheCacheWithoutSNIPresentsTheConnectHost() throws {
        let clientContext = try XCTUnwrap(makeClientContext(trusting: authority.certificatePEM))
        defer { SSL_CTX_free(clientContext) }
        let client = try XCTUnwrap(SSL_new(clientContext))
        XCTAssertEqual(X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(client), "127.0.0.1"), 1)
        let outcome = runHandshake(client: client, server: try cache.makeSSL(forHost: "127.0.0.1"))
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertNil(outcome.serverSawSNI)
        XCTAssertEqual(cache.count, 1)
    }

    func testSSLKeepsItsCacheAliveUntilFreed() throws {
        weak var weakCache: LeafCertificateCache?
        let ssl: OpaquePointer = try {
            let temporary = LeafCertificateCache(ca: authority)
            weakCache = temporary
            return try temporary.makeSSL(forHost: "example.test")
        }()
        XCTAssertNotNil(weakCache)
        SSL_free(ssl)
        XCTAssertNil(weakCache)
    }

    func testOpenSSLVerifyAcceptsTheLeafForItsHostname() throws {
        let tool = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: tool) else { throw XCTSkip("no openssl CLI") }
        let directory = try makeTemporaryDirectory(self)
        let leaf = try XCTUnwrap(leafCertificate(try cache.context(forHost: "example.test")))
        defer { X509_free(leaf) }
        try pem(ofCertificate: leaf).write(toFile: directory + "/leaf.pem", atomically: true, encoding: .utf8)
        try authority.certificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)

        let accepted = try runTool(tool, ["verify", "-CAfile", directory + "/ca.pem", "-purpose", "sslserver",
                                          "-verify_hostname", "example.test", directory + "/leaf.pem"])
        XCTAssertTrue(accepted.hasSuffix(": OK\n"), accepted)
        let refused = try runTool(tool, ["verify", "-CAfile", directory + "/ca.pem", "-purpose", "sslserver",
                                         "-verify_hostname", "other.test", directory + "/leaf.pem"])
        XCTAssertTrue(refused.contains("hostname mismatch"), refused)
    }
}
