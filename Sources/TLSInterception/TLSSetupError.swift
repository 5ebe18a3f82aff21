/// Why the CA, a leaf certificate or a TLS context could not be set up.
/// Every message is one line naming the file or host at fault; none ever
/// contains key material.
public enum TLSSetupError: Error, Equatable, CustomStringConvertible {
    /// The CA directory could not be created or opened.
    case directory(path: String, reason: String)
    /// A file could not be read, written or renamed.
    case file(path: String, reason: String)
    /// Exactly one of `ca.key` / `ca.pem` exists; refusing to guess which to trust.
    case incompleteAuthority(directory: String, missing: String)
    /// `ca.key` is readable or writable by group or others.
    case insecureKeyPermissions(path: String, mode: UInt32)
    /// `ca.key` does not parse as an unencrypted PEM private key.
    case unreadableKey(path: String, reason: String)
    /// `ca.pem` (or an upstream CA file) does not parse as a PEM certificate.
    case unreadableCertificate(path: String, reason: String)
    /// `ca.key` is not the private key of `ca.pem`.
    case keyMismatch(keyPath: String, certificatePath: String)
    /// `ca.pem` is not a CA certificate (no basicConstraints CA:TRUE).
    case notAnAuthority(path: String)
    /// `ca.pem` is past its notAfter date.
    case authorityExpired(path: String, notAfter: String)
    /// The host is neither a DNS name nor an IP literal.
    case invalidHost(host: String, reason: String)
    /// An OpenSSL call failed; `details` is the drained OpenSSL error queue.
    case openSSL(operation: String, details: String)

    public var description: String {
        switch self {
        case let .directory(path, reason):
            return "\(path): cannot use as CA directory: \(reason)"
        case let .file(path, reason):
            return "\(path): \(reason)"
        case let .incompleteAuthority(directory, missing):
            return "\(directory): incomplete CA, \(missing) is missing; restore it or remove the directory's ca.key and ca.pem to create a new CA"
        case let .insecureKeyPermissions(path, mode):
            return "\(path): CA private key has mode \(String(mode, radix: 8)), must not be accessible by group or others (chmod 600)"
        case let .unreadableKey(path, reason):
            return "\(path): not an unencrypted PEM private key: \(reason)"
        case let .unreadableCertificate(path, reason):
            return "\(path): not a PEM certificate: \(reason)"
        case let .keyMismatch(keyPath, certificatePath):
            return "\(keyPath): private key does not match the certificate \(certificatePath)"
        case let .notAnAuthority(path):
            return "\(path): certificate is not a CA (basicConstraints CA:TRUE missing)"
        case let .authorityExpired(path, notAfter):
            return "\(path): CA certificate expired at \(notAfter); remove ca.key and ca.pem to create a new CA"
        case let .invalidHost(host, reason):
            return "invalid host \"\(host)\": \(reason)"
        case let .openSSL(operation, details):
            return "\(operation) failed: \(details)"
        }
    }
}
