import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The steps shared by the CA and leaf certificates. Each throws with the
/// drained OpenSSL error queue on failure; the caller's owner objects free
/// whatever was already built.
enum CertificateBuilding {
    static func newCertificate() throws(TLSSetupError) -> Certificate {
        guard let pointer = X509_new() else {
            throw .openSSL(operation: "X509_new", details: drainOpenSSLErrors())
        }
        let certificate = Certificate(taking: pointer)
        // Version field value 2 means X.509 v3 (needed for extensions).
        try check(X509_set_version(certificate.pointer, 2), "X509_set_version")
        return certificate
    }

    /// 128 random bits, read as an unsigned number (DER adds a zero byte
    /// when the top bit is set, staying well inside the 20-octet limit).
    static func setRandomSerial(_ certificate: Certificate) throws(TLSSetupError) {
        var bytes = try randomBytes(16)
        if bytes.allSatisfy({ $0 == 0 }) { bytes[15] = 1 }  // serials must be positive
        guard let number = BN_bin2bn(bytes, Int32(bytes.count), nil) else {
            throw .openSSL(operation: "BN_bin2bn", details: drainOpenSSLErrors())
        }
        defer { BN_free(number) }
        guard BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate.pointer)) != nil else {
            throw .openSSL(operation: "BN_to_ASN1_INTEGER", details: drainOpenSSLErrors())
        }
    }

    static func randomBytes(_ count: Int) throws(TLSSetupError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        try check(RAND_bytes(&bytes, Int32(count)), "RAND_bytes")
        return bytes
    }

    /// Adds `field=value` to the certificate's subject name (UTF-8).
    static func addSubjectEntry(_ certificate: Certificate, field: String, value: String) throws(TLSSetupError) {
        guard let name = X509_get_subject_name(certificate.pointer) else {
            throw .openSSL(operation: "X509_get_subject_name", details: drainOpenSSLErrors())
        }
        let bytes = Array(value.utf8)
        try check(X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0),
                  "X509_NAME_add_entry_by_txt(\(field))")
    }

    /// notBefore = now + `startOffset` seconds, notAfter = now + `lifetime` seconds.
    static func setValidity(_ certificate: Certificate, startOffset: Int, lifetime: Int) throws(TLSSetupError) {
        guard X509_gmtime_adj(X509_getm_notBefore(certificate.pointer), startOffset) != nil,
              X509_gmtime_adj(X509_getm_notAfter(certificate.pointer), lifetime) != nil else {
            throw .openSSL(operation: "X509_gmtime_adj", details: drainOpenSSLErrors())
        }
    }

    /// Adds an extension written in OpenSSL's config syntax (only ever our
    /// own constant strings, never host input). `issuer` supplies the key
    /// identifier for authorityKeyIdentifier.
    static func addExtension(_ certificate: Certificate, nid: Int32, value: String,
                             issuer: Certificate) throws(TLSSetupError) {
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer.pointer, certificate.pointer, nil, nil, 0)
        guard let extensionPointer = X509V3_EXT_nconf_nid(nil, &context, nid, value) else {
            throw .openSSL(operation: "extension \(stringFromCString(OBJ_nid2sn(nid)))=\(value)",
                           details: drainOpenSSLErrors())
        }
        defer { X509_EXTENSION_free(extensionPointer) }
        try check(X509_add_ext(certificate.pointer, extensionPointer, -1), "X509_add_ext")
    }

    /// subjectAltName with exactly one entry, built structurally (not from
    /// config text) so no host string is ever parsed as OpenSSL syntax.
    static func addSubjectAltName(_ certificate: Certificate, host: HostName) throws(TLSSetupError) {
        guard let names = tw_GENERAL_NAMES_new() else {
            throw .openSSL(operation: "GENERAL_NAMES_new", details: drainOpenSSLErrors())
        }
        defer { tw_GENERAL_NAMES_free(names) }
        guard let name = GENERAL_NAME_new() else {
            throw .openSSL(operation: "GENERAL_NAME_new", details: drainOpenSSLErrors())
        }
        let type: Int32
        let bytes: [UInt8]
        let value: UnsafeMutablePointer<ASN1_STRING>?
        switch host.kind {
        case .dns:
            type = GEN_DNS
            bytes = Array(host.text.utf8)
            value = ASN1_IA5STRING_new()
        case .ipAddress(let address):
            type = GEN_IPADD
            bytes = address
            value = ASN1_OCTET_STRING_new()
        }
        guard let value else {
            GENERAL_NAME_free(name)
            throw .openSSL(operation: "ASN1_STRING_new", details: drainOpenSSLErrors())
        }
        // From here `name` owns `value`.
        GENERAL_NAME_set0_value(name, type, UnsafeMutableRawPointer(value))
        guard ASN1_STRING_set(value, bytes, Int32(bytes.count)) == 1 else {
            GENERAL_NAME_free(name)
            throw .openSSL(operation: "ASN1_STRING_set", details: drainOpenSSLErrors())
        }
        // From here `names` owns `name`.
        guard tw_sk_GENERAL_NAME_push(names, name) > 0 else {
            GENERAL_NAME_free(name)
            throw .openSSL(operation: "sk_GENERAL_NAME_push", details: drainOpenSSLErrors())
        }
        try check(X509_add1_ext_i2d(certificate.pointer, NID_subject_alt_name, UnsafeMutableRawPointer(names),
                                    0, UInt(X509V3_ADD_DEFAULT)),
                  "X509_add1_ext_i2d(subjectAltName)")
    }

    static func sign(_ certificate: Certificate, with key: PrivateKey) throws(TLSSetupError) {
        guard X509_sign(certificate.pointer, key.pointer, EVP_sha256()) > 0 else {
            throw .openSSL(operation: "X509_sign", details: drainOpenSSLErrors())
        }
    }

    static func check(_ result: Int32, _ operation: String) throws(TLSSetupError) {
        guard result == 1 else { throw .openSSL(operation: operation, details: drainOpenSSLErrors()) }
    }

    // MARK: Reading certificates

    static func pem(of certificate: Certificate) throws(TLSSetupError) -> String {
        let bio = try BIOHandle.memory()
        try check(PEM_write_bio_X509(bio.pointer, certificate.pointer), "PEM_write_bio_X509")
        return bio.contents()
    }

    /// RFC 2253 text, e.g. `CN=Tapwire Local CA host 1a2b3c4d,O=Tapwire`.
    static func subjectName(of certificate: Certificate) throws(TLSSetupError) -> String {
        let bio = try BIOHandle.memory()
        guard X509_NAME_print_ex(bio.pointer, X509_get_subject_name(certificate.pointer), 0,
                                 tw_XN_FLAG_RFC2253()) >= 0 else {
            throw .openSSL(operation: "X509_NAME_print_ex", details: drainOpenSSLErrors())
        }
        return bio.contents()
    }

    /// Upper-case hex pairs joined by ':', as `openssl x509 -fingerprint -sha256` prints.
    static func fingerprintSHA256(of certificate: Certificate) throws(TLSSetupError) -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        try check(X509_digest(certificate.pointer, EVP_sha256(), &digest, &length), "X509_digest")
        let hexDigits = Array("0123456789ABCDEF")
        return digest.prefix(Int(length))
            .map { String([hexDigits[Int($0 >> 4)], hexDigits[Int($0 & 0x0F)]]) }
            .joined(separator: ":")
    }

    /// Seconds since 1970 of an ASN1_TIME.
    static func secondsSince1970(_ time: UnsafePointer<ASN1_TIME>?) -> Int? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            _ = drainOpenSSLErrors()
            return nil
        }
        return Int(timegm(&parts))
    }
}
