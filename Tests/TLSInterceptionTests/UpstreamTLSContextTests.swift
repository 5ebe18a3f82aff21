import COpenSSL
import Foundation
@testable import TLSInterception
import XCTest

/// The origin side: an UpstreamTLSContext trusting a test CA through
/// `upstreamCAFile`, against servers whose certificates come from that CA or another.
final class UpstreamTLSContextTests: XCTestCase {
    private var originAuthority: CertificateAuthority!
    private var origins: LeafCertificateCache!

    override func setUpWithError() throws {
        originAuthority = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        origins = LeafCertificateCache(ca: originAuthority)
    }

    private func connect(_ upstream: UpstreamTLSContext, to host: String,
                         server: LeafCertificateCache? = nil) throws -> HandshakeOutcome {
        let client = try upstream.makeSSL(host: host)
        let serverSSL: OpaquePointer
        do {
            serverSSL = try (server ?? origins).context(forHost: host).makeSSL()
        } catch {
            SSL_free(client)
            throw error
        }
        return runHandshake(client: client, server: serverSSL)
    }

    func testExtraCAFileVerifiesItsServersAndNegotiatesHTTP11() throws {
        let upstream = try UpstreamTLSContext(upstreamCAFile: originAuthority.certificatePath)
        let outcome = try connect(upstream, to: "example.test")
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertEqual(outcome.clientVerifyResult, Int(X509_V_OK))
        XCTAssertEqual(outcome.clientVerifyDescription, "ok")
        XCTAssertEqual(outcome.clientALPN, "http/1.1")
        XCTAssertEqual(outcome.serverSawSNI, "example.test")
    }

    func testServerFromAnotherCAIsRejected() throws {
        let otherAuthority = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        let upstream = try UpstreamTLSContext(upstreamCAFile: originAuthority.certificatePath)
        let outcome = try connect(upstream, to: "example.test", server: LeafCertificateCache(ca: otherAuthority))
        XCTAssertFalse(outcome.clientSucceeded)
        XCTAssertEqual(outcome.clientVerifyDescription, "unable to get local issuer certificate")
    }

    func testWithoutTheExtraFileOurTestCAIsNotTrusted() throws {
        let upstream = try UpstreamTLSContext()
        let outcome = try connect(upstream, to: "example.test")
        XCTAssertFalse(outcome.clientSucceeded)
        XCTAssertEqual(outcome.clientVerifyResult, Int(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY))
    }

    func testCertificateForAnotherNameIsRejected() throws {
        let upstream = try UpstreamTLSContext(upstreamCAFile: originAuthority.certificatePath)
        let client = try XCTUnwrap(SSL_new(upstream.sslContext))
        try upstream.configure(ssl: client, host: "example.test")
        let server = try origins.context(forHost: "other.test").makeSSL()
        let outcome = runHandshake(client: client, server: server)
        XCTAssertFalse(outcome.clientSucceeded)
        XCTAssertEqual(outcome.clientVerifyDescription, "hostname mismatch")
    }

    func testIPLiteralIsVerifiedByAddressAndSendsNoSNI() throws {
        let upstream = try UpstreamTLSContext(upstreamCAFile: originAuthority.certificatePath)
        let outcome = try connect(upstream, to: "127.0.0.1")
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertNil(outcome.serverSawSNI)

        let client = try XCTUnwrap(SSL_new(upstream.sslContext))
        try upstream.configure(ssl: client, host: "127.0.0.2")
        let server = try origins.context(forHost: "127.0.0.1").makeSSL()
        let mismatch = runHandshake(client: client, server: server)
        XCTAssertFalse(mismatch.clientSucceeded)
        XCTAssertEqual(mismatch.clientVerifyDescription, "IP address mismatch")
    }

    func testIPv6LiteralInBracketsIsVerified() throws {
        let upstream = try UpstreamTLSContext(upstreamCAFile: originAuthority.certificatePath)
        let outcome = try connect(upstream, to: "[::1]")
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertNil(outcome.serverSawSNI)
    }

    func testInsecureAcceptsAnyCertificateButStillSendsSNI() throws {
        let otherAuthority = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        let upstream = try UpstreamTLSContext(insecure: true)
        let outcome = try connect(upstream, to: "example.test", server: LeafCertificateCache(ca: otherAuthority))
        XCTAssertTrue(outcome.clientSucceeded && outcome.serverSucceeded)
        XCTAssertEqual(outcome.serverSawSNI, "example.test")
    }

    func testMissingOrInvalidCAFileIsRefusedNamingIt() throws {
        let directory = try makeTemporaryDirectory(self)
        XCTAssertThrowsError(try UpstreamTLSContext(upstreamCAFile: directory + "/missing.pem")) { error in
            XCTAssertEqual(error as? TLSSetupError,
                           .file(path: directory + "/missing.pem", reason: "No such file or directory"))
        }
        let junk = directory + "/junk.pem"
        try "junk\n".write(toFile: junk, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try UpstreamTLSContext(upstreamCAFile: junk)) { error in
            guard case .unreadableCertificate(let path, _)? = error as? TLSSetupError else {
                return XCTFail("unexpected \(error)")
            }
            XCTAssertEqual(path, junk)
        }
        XCTAssertEqual(ERR_peek_error(), 0)
    }

    func testInvalidHostIsRefusedRatherThanLeftUnchecked() throws {
        let upstream = try UpstreamTLSContext()
        let client = try XCTUnwrap(SSL_new(upstream.sslContext))
        defer { SSL_free(client) }
        XCTAssertThrowsError(try upstream.configure(ssl: client, host: "bad host")) { error in
            guard case .invalidHost? = error as? TLSSetupError else { return XCTFail("unexpected \(error)") }
        }
    }
}
