import COpenSSL
import Foundation
@testable import TLSInterception
import XCTest

final class LeafCertificateCacheTests: XCTestCase {
    private var authority: CertificateAuthority!

    override func setUpWithError() throws {
        authority = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
    }

    func testDNSLeafVerifiesAgainstTheAuthorityAndMatchesOnlyItsHost() throws {
        let cache = LeafCertificateCache(ca: authority)
        let context = try cache.context(forHost: "example.test")
        let leaf = try XCTUnwrap(leafCertificate(context))
        defer { X509_free(leaf) }

        XCTAssertEqual(verify(leaf: leaf, authorityPEM: authority.certificatePEM), X509_V_OK)
        XCTAssertEqual(X509_check_host(leaf, "example.test", 0, 0, nil), 1)
        XCTAssertEqual(X509_check_host(leaf, "other.test", 0, 0, nil), 0)
        XCTAssertEqual(X509_check_host(leaf, "sub.example.test", 0, 0, nil), 0)
        XCTAssertEqual(commonName(of: leaf), "example.test")
        XCTAssertEqual(X509_check_ca(leaf), 0)
        XCTAssertNotEqual(X509_get_extended_key_usage(leaf) & UInt32(XKU_SSL_SERVER), 0)
        XCTAssertNotEqual(X509_get_key_usage(leaf) & UInt32(KU_DIGITAL_SIGNATURE), 0)
        XCTAssertNotNil(X509_get0_authority_key_id(leaf))
        XCTAssertEqual(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256)
    }

    func testIPv4LeafHasAnIPAddressSANNotADNSName() throws {
        let leaf = try XCTUnwrap(leafCertificate(try LeafCertificateCache(ca: authority).context(forHost: "127.0.0.1")))
        defer { X509_free(leaf) }
        XCTAssertEqual(verify(leaf: leaf, authorityPEM: authority.certificatePEM), X509_V_OK)
        XCTAssertEqual(X509_check_ip_asc(leaf, "127.0.0.1", 0), 1)
        XCTAssertEqual(X509_check_ip_asc(leaf, "127.0.0.2", 0), 0)
        XCTAssertEqual(commonName(of: leaf), "127.0.0.1")
        // No DNS-name SAN: only the CN fallback could match the text as a name.
        XCTAssertEqual(X509_check_host(leaf, "127.0.0.1", 0, UInt32(X509_CHECK_FLAG_NEVER_CHECK_SUBJECT), nil), 0)
    }

    /// A CONNECT to "1.2.3.4." first must not leave a DNS-SAN leaf for the address 1.2.3.4.
    func testATrailingDotAddressSharesTheAddresssIPLeaf() throws {
        let cache = LeafCertificateCache(ca: authority)
        let dotted = try cache.context(forHost: "1.2.3.4.")
        XCTAssertTrue(try cache.context(forHost: "1.2.3.4") === dotted)
        let leaf = try XCTUnwrap(leafCertificate(dotted))
        defer { X509_free(leaf) }
        XCTAssertEqual(X509_check_ip_asc(leaf, "1.2.3.4", 0), 1)
    }

    func testIPv6LeafMatchesTheAddressWithOrWithoutBrackets() throws {
        let cache = LeafCertificateCache(ca: authority)
        let context = try cache.context(forHost: "::1")
        let leaf = try XCTUnwrap(leafCertificate(context))
        defer { X509_free(leaf) }
        XCTAssertEqual(verify(leaf: leaf, authorityPEM: authority.certificatePEM), X509_V_OK)
        XCTAssertEqual(X509_check_ip_asc(leaf, "::1", 0), 1)
        XCTAssertEqual(X509_check_ip_asc(leaf, "0:0:0:0:0:0:0:1", 0), 1)
        XCTAssertEqual(X509_check_ip_asc(leaf, "::2", 0), 0)
        XCTAssertTrue(try cache.context(forHost: "[0:0::1]") === context)
    }

    func testLeafLivesAtMost397DaysAndIsBackdatedOneHour() throws {
        let before = Int(time(nil))
        let context = try LeafCertificateCache(ca: authority).context(forHost: "example.test")
        let after = Int(time(nil))
        let leaf = try XCTUnwrap(leafCertificate(context))
        defer { X509_free(leaf) }

        XCTAssertLessThanOrEqual(context.notAfter - before, 397 * 86_400)
        XCTAssertGreaterThanOrEqual(context.notAfter - after, 397 * 86_400 - 1)
        XCTAssertLessThanOrEqual(before - context.notBefore, 3600)
        XCTAssertGreaterThanOrEqual(after - context.notBefore, 3600)
        // Span including the backdating stays under Apple's 398-day limit.
        XCTAssertLessThanOrEqual(lifetimeSeconds(of: leaf), 397 * 86_400 + 3600)
        XCTAssertLessThan(lifetimeSeconds(of: leaf), 398 * 86_400)
    }

    func testLongHostKeepsFullSANButCommonNameIsCutTo64Bytes() throws {
        let label = String(repeating: "a", count: 63)
        let host = "\(label).\(label).example.test"
        let leaf = try XCTUnwrap(leafCertificate(try LeafCertificateCache(ca: authority).context(forHost: host)))
        defer { X509_free(leaf) }
        XCTAssertEqual(commonName(of: leaf), String(host.prefix(64)))
        XCTAssertEqual(X509_check_host(leaf, host, 0, 0, nil), 1)
        XCTAssertEqual(verify(leaf: leaf, authorityPEM: authority.certificatePEM), X509_V_OK)
    }

    func testHostNamesAreCaseInsensitiveAndIgnoreATrailingDot() throws {
        let cache = LeafCertificateCache(ca: authority)
        let context = try cache.context(forHost: "Example.TEST.")
        XCTAssertEqual(context.host, "example.test")
        XCTAssertTrue(try cache.context(forHost: "example.test") === context)
        XCTAssertEqual(cache.count, 1)
    }

    func testHostsThatCouldInjectNamesAreRefused() {
        let cache = LeafCertificateCache(ca: authority)
        for host in ["", "a,DNS:evil.test", "evil.test:443", "*.example.test", "a..b", "white space.test",
                     "fe80::1%eth0", String(repeating: "a", count: 64) + ".test", "caf\u{e9}.test"] {
            XCTAssertThrowsError(try cache.context(forHost: host), host) { error in
                guard case .invalidHost? = error as? TLSSetupError else { return XCTFail("\(host): \(error)") }
            }
        }
        XCTAssertEqual(cache.count, 0)
    }

    func testEachLeafHasItsOwnKeyAndSerial() throws {
        let cache = LeafCertificateCache(ca: authority)
        let a = try XCTUnwrap(leafCertificate(try cache.context(forHost: "a.test")))
        defer { X509_free(a) }
        let b = try XCTUnwrap(leafCertificate(try cache.context(forHost: "b.test")))
        defer { X509_free(b) }
        XCTAssertNotEqual(EVP_PKEY_eq(X509_get0_pubkey(a), X509_get0_pubkey(b)), 1)
        XCTAssertNotEqual(ASN1_INTEGER_cmp(X509_get0_serialNumber(a), X509_get0_serialNumber(b)), 0)
        ERR_clear_error()
    }

    func testLeastRecentlyUsedHostIsEvictedAtCapacity() throws {
        let cache = LeafCertificateCache(ca: authority, capacity: 2)
        let a = try cache.context(forHost: "a.test")
        let b = try cache.context(forHost: "b.test")
        XCTAssertTrue(try cache.context(forHost: "a.test") === a)  // a is now the most recent
        _ = try cache.context(forHost: "c.test")                    // evicts b

        XCTAssertEqual(cache.count, 2)
        XCTAssertEqual(cache.statistics, .init(hits: 1, misses: 3, evictions: 1))
        XCTAssertTrue(try cache.context(forHost: "a.test") === a)
        let newB = try cache.context(forHost: "b.test")             // regenerated, evicts c
        XCTAssertFalse(newB === b)
        XCTAssertEqual(cache.statistics, .init(hits: 2, misses: 4, evictions: 2))
        XCTAssertEqual(cache.count, 2)
    }

    func testConcurrentRequestsForOneHostShareOneContext() throws {
        let cache = LeafCertificateCache(ca: authority, capacity: 8)
        let results = ContextCollector()
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            let host = index % 2 == 0 ? "even.test" : "odd.test"
            if let context = try? cache.context(forHost: host) { results.append(host, context) }
        }
        XCTAssertEqual(results.count, 16)
        XCTAssertEqual(results.distinctContexts(for: "even.test"), 1)
        XCTAssertEqual(results.distinctContexts(for: "odd.test"), 1)
        XCTAssertEqual(cache.count, 2)
    }
}

private final class ContextCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [(String, ServerContext)] = []

    func append(_ host: String, _ context: ServerContext) {
        lock.lock(); defer { lock.unlock() }
        items.append((host, context))
    }

    var count: Int { lock.lock(); defer { lock.unlock() }; return items.count }

    func distinctContexts(for host: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return Set(items.filter { $0.0 == host }.map { ObjectIdentifier($0.1) }).count
    }
}
