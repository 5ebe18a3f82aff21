import COpenSSL
import Foundation
@testable import TLSInterception
import XCTest

final class CertificateAuthorityTests: XCTestCase {
    func testCreatesKeyWithMode0600AndCertificateWith0644InA0700Directory() throws {
        let state = try makeTemporaryDirectory(self) + "/state"
        let directory = state + "/ca"
        let authority = try CertificateAuthority.loadOrCreate(directory: directory)

        XCTAssertTrue(authority.wasCreated)
        XCTAssertEqual(fileMode(directory), 0o700)
        let mask = umask(0)
        umask(mask)
        XCTAssertEqual(fileMode(state), 0o755 & ~Int(mask), "only the CA directory itself is made private")
        XCTAssertEqual(fileMode(directory + "/ca.key"), 0o600)
        XCTAssertEqual(fileMode(directory + "/ca.pem"), 0o644)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp-") }
        XCTAssertEqual(leftovers, [])
        XCTAssertEqual(try String(contentsOfFile: directory + "/ca.pem", encoding: .utf8), authority.certificatePEM)
        XCTAssertTrue(authority.certificatePEM.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
    }

    func testCertificateIsASelfSignedP256AuthorityWithTheExpectedNameAndLifetime() throws {
        let authority = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        let certificate = try XCTUnwrap(parseCertificate(pem: authority.certificatePEM))
        defer { X509_free(certificate) }

        XCTAssertGreaterThanOrEqual(X509_check_ca(certificate), 1)
        XCTAssertEqual(verify(leaf: certificate, authorityPEM: authority.certificatePEM, purpose: X509_PURPOSE_ANY), X509_V_OK)
        let publicKey = try XCTUnwrap(X509_get0_pubkey(certificate))
        XCTAssertEqual(EVP_PKEY_get_base_id(publicKey), EVP_PKEY_EC)
        XCTAssertEqual(EVP_PKEY_get_bits(publicKey), 256)

        let name = commonName(of: certificate)
        XCTAssertTrue(name.hasPrefix("Tapwire Local CA "), name)
        XCTAssertLessThanOrEqual(name.utf8.count, 64)
        XCTAssertTrue(authority.subjectName.contains("O=Tapwire"), authority.subjectName)
        XCTAssertTrue(authority.subjectName.contains("CN=\(name)"), authority.subjectName)

        let tenYears = 3652 * 86_400
        let lifetime = lifetimeSeconds(of: certificate)
        XCTAssertGreaterThan(lifetime, tenYears)
        XCTAssertLessThanOrEqual(lifetime, tenYears + 3600)
        XCTAssertEqual(authority.fingerprintSHA256.count, 32 * 3 - 1)
    }

    func testTwoAuthoritiesGetDifferentNamesAndSerials() throws {
        let first = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        let second = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        XCTAssertNotEqual(first.subjectName, second.subjectName)
        XCTAssertNotEqual(first.fingerprintSHA256, second.fingerprintSHA256)
        let a = try XCTUnwrap(parseCertificate(pem: first.certificatePEM))
        let b = try XCTUnwrap(parseCertificate(pem: second.certificatePEM))
        defer { X509_free(a); X509_free(b) }
        XCTAssertNotEqual(ASN1_INTEGER_cmp(X509_get0_serialNumber(a), X509_get0_serialNumber(b)), 0)
    }

    func testSecondLoadReusesTheSameAuthority() throws {
        let directory = try makeTemporaryDirectory(self)
        let created = try CertificateAuthority.loadOrCreate(directory: directory)
        let loaded = try CertificateAuthority.loadOrCreate(directory: directory)

        XCTAssertFalse(loaded.wasCreated)
        XCTAssertEqual(loaded.fingerprintSHA256, created.fingerprintSHA256)
        XCTAssertEqual(loaded.certificatePEM, created.certificatePEM)
        XCTAssertEqual(loaded.subjectName, created.subjectName)
    }

    func testKeyOfAnotherAuthorityIsRefused() throws {
        let directory = try makeTemporaryDirectory(self)
        let other = try makeTemporaryDirectory(self)
        _ = try CertificateAuthority.loadOrCreate(directory: directory)
        _ = try CertificateAuthority.loadOrCreate(directory: other)
        try replaceFile(directory + "/ca.key", with: try Data(contentsOf: URL(fileURLWithPath: other + "/ca.key")))

        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: directory)) { error in
            XCTAssertEqual(error as? TLSSetupError,
                           .keyMismatch(keyPath: directory + "/ca.key", certificatePath: directory + "/ca.pem"))
            XCTAssertTrue("\(error)".contains("does not match"), "\(error)")
        }
    }

    func testCorruptedKeyIsRefusedNamingTheFile() throws {
        let directory = try makeTemporaryDirectory(self)
        _ = try CertificateAuthority.loadOrCreate(directory: directory)
        try replaceFile(directory + "/ca.key", with: Data("-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n".utf8))

        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: directory)) { error in
            guard case .unreadableKey(let path, _)? = error as? TLSSetupError else {
                return XCTFail("unexpected \(error)")
            }
            XCTAssertEqual(path, directory + "/ca.key")
            XCTAssertTrue("\(error)".hasPrefix(directory + "/ca.key: not an unencrypted PEM private key"), "\(error)")
        }
        // The error queue was drained: the next OpenSSL user on this thread starts clean.
        XCTAssertEqual(ERR_peek_error(), 0)
    }

    func testEncryptedKeyIsRefusedWithoutPrompting() throws {
        let tool = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: tool) else { throw XCTSkip("no openssl CLI") }
        let directory = try makeTemporaryDirectory(self)
        _ = try CertificateAuthority.loadOrCreate(directory: directory)
        let encrypted = directory + "/encrypted.key"
        let made = try runTool(tool, ["pkey", "-in", directory + "/ca.key", "-aes256", "-passout", "pass:secret",
                                      "-out", encrypted])
        XCTAssertFalse(made.contains("[exit"), made)
        XCTAssertEqual(rename(encrypted, directory + "/ca.key"), 0)
        XCTAssertEqual(chmod(directory + "/ca.key", 0o600), 0)

        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: directory)) { error in
            guard case .unreadableKey(let path, _)? = error as? TLSSetupError else {
                return XCTFail("unexpected \(error)")
            }
            XCTAssertEqual(path, directory + "/ca.key")
        }
    }

    func testCorruptedCertificateIsRefused() throws {
        let directory = try makeTemporaryDirectory(self)
        _ = try CertificateAuthority.loadOrCreate(directory: directory)
        try replaceFile(directory + "/ca.pem", with: Data("not a certificate\n".utf8), mode: 0o644)

        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: directory)) { error in
            guard case .unreadableCertificate(let path, _)? = error as? TLSSetupError else {
                return XCTFail("unexpected \(error)")
            }
            XCTAssertEqual(path, directory + "/ca.pem")
        }
    }

    func testKeyReadableByOthersIsRefused() throws {
        let directory = try makeTemporaryDirectory(self)
        _ = try CertificateAuthority.loadOrCreate(directory: directory)
        XCTAssertEqual(chmod(directory + "/ca.key", 0o644), 0)

        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: directory)) { error in
            XCTAssertEqual(error as? TLSSetupError, .insecureKeyPermissions(path: directory + "/ca.key", mode: 0o644))
        }
    }

    func testHalfAnAuthorityIsReportedNotReplaced() throws {
        let directory = try makeTemporaryDirectory(self)
        _ = try CertificateAuthority.loadOrCreate(directory: directory)
        let keyBefore = try Data(contentsOf: URL(fileURLWithPath: directory + "/ca.key"))
        try FileManager.default.removeItem(atPath: directory + "/ca.pem")

        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: directory)) { error in
            XCTAssertEqual(error as? TLSSetupError, .incompleteAuthority(directory: directory, missing: "ca.pem"))
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: directory + "/ca.key")), keyBefore)
    }

    func testDirectoryPathThatIsAFileIsRefused() throws {
        let path = try makeTemporaryDirectory(self) + "/file"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data()))
        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: path)) { error in
            XCTAssertEqual(error as? TLSSetupError, .directory(path: path, reason: "not a directory"))
        }
    }

    func testDescriptionNeverContainsTheKey() throws {
        let directory = try makeTemporaryDirectory(self)
        let authority = try CertificateAuthority.loadOrCreate(directory: directory)
        let keyText = try String(contentsOfFile: directory + "/ca.key", encoding: .utf8)
        XCTAssertTrue(keyText.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let keyBody = keyText.split(separator: "\n")[1]

        var dumped = ""
        dump(authority, to: &dumped)
        for text in ["\(authority)", String(reflecting: authority), dumped, authority.certificatePEM] {
            XCTAssertFalse(text.contains("PRIVATE KEY"), text)
            XCTAssertFalse(text.contains(keyBody), text)
        }
        XCTAssertTrue("\(authority)".contains(authority.fingerprintSHA256))
    }

    func testOpenSSLCommandLineParsesTheAuthority() throws {
        let tool = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: tool) else { throw XCTSkip("no openssl CLI") }
        let directory = try makeTemporaryDirectory(self)
        _ = try CertificateAuthority.loadOrCreate(directory: directory)

        let text = try runTool(tool, ["x509", "-in", directory + "/ca.pem", "-noout", "-text"])
        XCTAssertTrue(text.contains("CA:TRUE, pathlen:0"), text)
        XCTAssertTrue(text.contains("Certificate Sign, CRL Sign"), text)
        XCTAssertTrue(text.contains("X509v3 Subject Key Identifier"), text)
        XCTAssertTrue(text.contains("prime256v1") || text.contains("P-256"), text)
        XCTAssertTrue(text.contains("ecdsa-with-SHA256"), text)
        XCTAssertTrue(text.contains("O = Tapwire"), text)
        let keyCheck = try runTool(tool, ["pkey", "-in", directory + "/ca.key", "-noout", "-check"])
        XCTAssertTrue(keyCheck.contains("Key is valid"), keyCheck)
    }

    func testImportedRSA2048AuthorityIssuesVerifiableLeaves() throws {
        let tool = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: tool) else { throw XCTSkip("no openssl CLI") }
        let directory = try makeTemporaryDirectory(self)
        let made = try runTool(tool, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "30",
                                      "-keyout", directory + "/ca.key", "-out", directory + "/ca.pem",
                                      "-subj", "/CN=Imported RSA CA",
                                      "-addext", "basicConstraints=critical,CA:TRUE",
                                      "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        XCTAssertFalse(made.contains("[exit"), made)
        XCTAssertEqual(chmod(directory + "/ca.key", 0o600), 0)

        let authority = try CertificateAuthority.loadOrCreate(directory: directory)
        XCTAssertFalse(authority.wasCreated)
        XCTAssertEqual(authority.subjectName, "CN=Imported RSA CA")
        let context = try LeafCertificateCache(ca: authority).context(forHost: "example.test")
        let leaf = try XCTUnwrap(leafCertificate(context))
        defer { X509_free(leaf) }
        XCTAssertEqual(verify(leaf: leaf, authorityPEM: authority.certificatePEM), X509_V_OK)
        XCTAssertEqual(X509_get_signature_nid(leaf), NID_sha256WithRSAEncryption)
        // The imported CA lives 30 days, so its leaves may not outlive it.
        XCTAssertLessThanOrEqual(context.notAfter, authority.notAfter)
        XCTAssertLessThan(context.notAfter - Int(time(nil)), 31 * 86_400)
    }

    func testNonAuthorityCertificateIsRefused() throws {
        let tool = "/usr/bin/openssl"
        guard FileManager.default.isExecutableFile(atPath: tool) else { throw XCTSkip("no openssl CLI") }
        let directory = try makeTemporaryDirectory(self)
        let made = try runTool(tool, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                      "-days", "30", "-keyout", directory + "/ca.key", "-out", directory + "/ca.pem",
                                      "-subj", "/CN=leaf.test", "-addext", "basicConstraints=critical,CA:FALSE"])
        XCTAssertFalse(made.contains("[exit"), made)
        XCTAssertEqual(chmod(directory + "/ca.key", 0o600), 0)
        XCTAssertThrowsError(try CertificateAuthority.loadOrCreate(directory: directory)) { error in
            XCTAssertEqual(error as? TLSSetupError, .notAnAuthority(path: directory + "/ca.pem"))
        }
    }

    private func replaceFile(_ path: String, with data: Data, mode: Int = 0o600) throws {
        try data.write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(chmod(path, mode_t(mode)), 0)
    }
}

func runTool(_ path: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self) + (process.terminationStatus == 0 ? "" : "\n[exit \(process.terminationStatus)]")
}
