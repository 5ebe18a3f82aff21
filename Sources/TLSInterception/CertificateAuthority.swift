import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tapwire's own CA, kept as `ca.key` (mode 0600) and `ca.pem` (mode 0644)
/// in one directory. The private key is never printed: `description` and
/// every error name only the subject, fingerprint and file paths.
///
/// Immutable after `loadOrCreate`; OpenSSL objects are only read (signing
/// with a shared EVP_PKEY is thread-safe in OpenSSL 3), hence Sendable.
public final class CertificateAuthority: @unchecked Sendable, CustomStringConvertible {
    public static let keyFileName = "ca.key"
    public static let certificateFileName = "ca.pem"
    /// Ten years, counting leap days.
    static let lifetimeSeconds = 3652 * 86_400

    public let directory: String
    /// PEM text of the CA certificate (public; this is what users install).
    public let certificatePEM: String
    /// RFC 2253 subject, e.g. `CN=Tapwire Local CA myhost 1a2b3c4d,O=Tapwire`.
    public let subjectName: String
    /// SHA-256 of the DER certificate as `AB:CD:…`.
    public let fingerprintSHA256: String
    /// Seconds since 1970 of the certificate's notAfter.
    public let notAfter: Int
    /// True when this call generated the CA (the caller may want to say so once).
    public let wasCreated: Bool

    let key: PrivateKey
    let certificate: Certificate

    public var certificatePath: String { directory + "/" + Self.certificateFileName }
    public var keyPath: String { directory + "/" + Self.keyFileName }

    public var description: String {
        "CertificateAuthority(\(subjectName), SHA-256 \(fingerprintSHA256), \(certificatePath))"
    }

    private init(directory: String, key: PrivateKey, certificate: Certificate, wasCreated: Bool) throws(TLSSetupError) {
        self.directory = directory
        self.key = key
        self.certificate = certificate
        self.wasCreated = wasCreated
        self.certificatePEM = try CertificateBuilding.pem(of: certificate)
        self.subjectName = try CertificateBuilding.subjectName(of: certificate)
        self.fingerprintSHA256 = try CertificateBuilding.fingerprintSHA256(of: certificate)
        self.notAfter = CertificateBuilding.secondsSince1970(X509_getm_notAfter(certificate.pointer)) ?? 0
    }

    /// Loads `ca.key` + `ca.pem` from `directory`, or creates both when neither
    /// exists. Creates the directory (mode 0700) if needed. Concurrent callers
    /// (e.g. `tapwire run` and `tapwire ca export`) are serialised with a lock
    /// file so they can never write mismatched halves.
    public static func loadOrCreate(directory: String) throws(TLSSetupError) -> CertificateAuthority {
        try createDirectory(directory)
        let lock = try DirectoryLock(directory: directory)
        defer { lock?.release() }

        let keyPath = directory + "/" + keyFileName
        let certificatePath = directory + "/" + certificateFileName
        let keyExists = try fileExists(keyPath)
        let certificateExists = try fileExists(certificatePath)
        switch (keyExists, certificateExists) {
        case (true, true):
            return try load(directory: directory, keyPath: keyPath, certificatePath: certificatePath)
        case (false, false):
            return try create(directory: directory, keyPath: keyPath, certificatePath: certificatePath)
        case (true, false):
            throw .incompleteAuthority(directory: directory, missing: certificateFileName)
        case (false, true):
            throw .incompleteAuthority(directory: directory, missing: keyFileName)
        }
    }

    // MARK: Loading

    private static func load(directory: String, keyPath: String,
                             certificatePath: String) throws(TLSSetupError) -> CertificateAuthority {
        var status = stat()
        guard stat(keyPath, &status) == 0 else { throw .file(path: keyPath, reason: errnoText()) }
        let permissions = UInt32(status.st_mode) & 0o777
        guard permissions & 0o077 == 0 else { throw .insecureKeyPermissions(path: keyPath, mode: permissions) }

        let key = try readKey(keyPath)
        let certificate = try readCertificate(certificatePath)
        guard X509_check_private_key(certificate.pointer, key.pointer) == 1 else {
            _ = drainOpenSSLErrors()
            throw .keyMismatch(keyPath: keyPath, certificatePath: certificatePath)
        }
        guard X509_check_ca(certificate.pointer) >= 1 else {
            _ = drainOpenSSLErrors()
            throw .notAnAuthority(path: certificatePath)
        }
        let authority = try CertificateAuthority(directory: directory, key: key, certificate: certificate,
                                                 wasCreated: false)
        guard authority.notAfter > Int(time(nil)) else {
            throw .authorityExpired(path: certificatePath,
                                    notAfter: utcText(authority.notAfter))
        }
        return authority
    }

    private static func readKey(_ path: String) throws(TLSSetupError) -> PrivateKey {
        guard let bio = BIO_new_file(path, "r") else {
            throw .file(path: path, reason: drainOpenSSLErrors())
        }
        let file = BIOHandle(taking: bio)
        // A callback that supplies no passphrase: without it OpenSSL would
        // prompt on the terminal for an encrypted key.
        guard let key = PEM_read_bio_PrivateKey(file.pointer, nil, { _, _, _, _ in 0 }, nil) else {
            throw .unreadableKey(path: path, reason: drainOpenSSLErrors())
        }
        return PrivateKey(taking: key)
    }

    static func readCertificate(_ path: String) throws(TLSSetupError) -> Certificate {
        guard let bio = BIO_new_file(path, "r") else {
            throw .file(path: path, reason: drainOpenSSLErrors())
        }
        let file = BIOHandle(taking: bio)
        guard let certificate = PEM_read_bio_X509(file.pointer, nil, nil, nil) else {
            throw .unreadableCertificate(path: path, reason: drainOpenSSLErrors())
        }
        return Certificate(taking: certificate)
    }

    // MARK: Creating

    private static func create(directory: String, keyPath: String,
                               certificatePath: String) throws(TLSSetupError) -> CertificateAuthority {
        let key = try PrivateKey.generateP256()
        let certificate = try CertificateBuilding.newCertificate()
        try CertificateBuilding.setRandomSerial(certificate)
        let suffix = try CertificateBuilding.randomBytes(4).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        try CertificateBuilding.addSubjectEntry(certificate, field: "CN", value: commonName(suffix: suffix))
        try CertificateBuilding.addSubjectEntry(certificate, field: "O", value: "Tapwire")
        // Self-signed: issuer = subject.
        try CertificateBuilding.check(X509_set_issuer_name(certificate.pointer, X509_get_subject_name(certificate.pointer)),
                                      "X509_set_issuer_name")
        try CertificateBuilding.setValidity(certificate, startOffset: -3600, lifetime: lifetimeSeconds)
        try CertificateBuilding.check(X509_set_pubkey(certificate.pointer, key.pointer), "X509_set_pubkey")
        try CertificateBuilding.addExtension(certificate, nid: NID_basic_constraints,
                                             value: "critical,CA:TRUE,pathlen:0", issuer: certificate)
        try CertificateBuilding.addExtension(certificate, nid: NID_key_usage,
                                             value: "critical,keyCertSign,cRLSign", issuer: certificate)
        try CertificateBuilding.addExtension(certificate, nid: NID_subject_key_identifier,
                                             value: "hash", issuer: certificate)
        try CertificateBuilding.sign(certificate, with: key)

        // Key first: a crash in between leaves ca.key without ca.pem, which
        // loadOrCreate reports instead of silently replacing a key.
        try writeAtomically(path: keyPath, mode: 0o600, what: "PEM_write_bio_PrivateKey") { bio in
            PEM_write_bio_PrivateKey(bio, key.pointer, nil, nil, 0, nil, nil)
        }
        try writeAtomically(path: certificatePath, mode: 0o644, what: "PEM_write_bio_X509") { bio in
            PEM_write_bio_X509(bio, certificate.pointer)
        }
        syncDirectory(directory)
        return try CertificateAuthority(directory: directory, key: key, certificate: certificate, wasCreated: true)
    }

    /// "Tapwire Local CA <hostname> <8 hex digits>", cut to the 64-byte limit
    /// on commonName by shortening the host name.
    static func commonName(suffix: String) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        var host = gethostname(&buffer, buffer.count - 1) == 0 ? stringFromCBuffer(buffer) : "localhost"
        if host.isEmpty { host = "localhost" }
        let fixedBytes = "Tapwire Local CA  ".utf8.count + suffix.utf8.count
        let room = max(0, 64 - fixedBytes)
        let hostBytes = Array(host.utf8.prefix(room))
        let shortHost = String(decoding: hostBytes, as: UTF8.self)
        return "Tapwire Local CA \(shortHost) \(suffix)"
    }

    // MARK: Files

    /// mkdir -p: missing parents get 0755 (less the umask), the CA directory itself 0700.
    private static func createDirectory(_ path: String, mode: mode_t = 0o700) throws(TLSSetupError) {
        guard !path.isEmpty else { throw .directory(path: path, reason: "empty path") }
        var status = stat()
        if stat(path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFDIR else { throw .directory(path: path, reason: "not a directory") }
            return
        }
        var parent = path
        while parent.hasSuffix("/") && parent.count > 1 { parent.removeLast() }
        if let slash = parent.lastIndex(of: "/"), slash != parent.startIndex {
            try createDirectory(String(parent[..<slash]), mode: 0o755)
        }
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw .directory(path: path, reason: errnoText())
        }
    }

    private static func fileExists(_ path: String) throws(TLSSetupError) -> Bool {
        var status = stat()
        if lstat(path, &status) == 0 { return true }
        if errno == ENOENT { return false }
        throw .file(path: path, reason: errnoText())
    }

    /// Writes through a temporary file created with O_CREAT|O_EXCL and the
    /// final mode (so the key is never readable by others, even briefly),
    /// fsyncs, then renames over `path`.
    private static func writeAtomically(path: String, mode: mode_t, what: String,
                                        write: (OpaquePointer) -> Int32) throws(TLSSetupError) {
        let token = (try? CertificateBuilding.randomBytes(6))?.map { String($0, radix: 16).leftPadded(to: 2) }.joined() ?? "0"
        let temporary = path + ".tmp-" + token
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw .file(path: temporary, reason: errnoText()) }
        var closed = false
        var renamed = false
        defer {
            if !closed { close(descriptor) }
            if !renamed { unlink(temporary) }
        }
        // The umask may have removed bits we want (0644 for the certificate).
        guard fchmod(descriptor, mode) == 0 else { throw .file(path: temporary, reason: errnoText()) }
        guard let bio = BIO_new_fd(descriptor, BIO_NOCLOSE) else {
            throw .openSSL(operation: "BIO_new_fd", details: drainOpenSSLErrors())
        }
        let handle = BIOHandle(taking: bio)
        guard write(handle.pointer) == 1 else {
            throw .openSSL(operation: what, details: drainOpenSSLErrors())
        }
        guard fsync(descriptor) == 0 else { throw .file(path: temporary, reason: errnoText()) }
        closed = true
        guard close(descriptor) == 0 else { throw .file(path: temporary, reason: errnoText()) }
        guard rename(temporary, path) == 0 else { throw .file(path: path, reason: errnoText()) }
        renamed = true
    }

    private static func syncDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }
}

/// An exclusive flock on `<directory>/.lock`, held while loading or creating.
/// A read-only directory yields no lock (nil): loading still works there,
/// and creating fails on its own with a clear error.
private struct DirectoryLock {
    let descriptor: Int32

    init?(directory: String) throws(TLSSetupError) {
        let path = directory + "/.lock"
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if descriptor < 0 && (errno == EACCES || errno == EROFS) { return nil }
        guard descriptor >= 0 else { throw .file(path: path, reason: errnoText()) }
        while flock(descriptor, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let reason = errnoText()
            close(descriptor)
            throw .file(path: path, reason: "lock: \(reason)")
        }
    }

    func release() { close(descriptor) }
}

func errnoText() -> String { String(cString: strerror(errno)) }

/// "2036-12-02 11:00:00 UTC"
func utcText(_ seconds: Int) -> String {
    var time = time_t(seconds)
    var parts = tm()
    guard gmtime_r(&time, &parts) != nil else { return "\(seconds) seconds since 1970" }
    var buffer = [CChar](repeating: 0, count: 64)
    guard strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S UTC", &parts) > 0 else { return "\(seconds) seconds since 1970" }
    return stringFromCBuffer(buffer)
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
