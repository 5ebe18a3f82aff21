import Foundation

/// What `tapwire ca export` prints after the PEM. The PEM goes to stdout so
/// `tapwire ca export > tapwire.pem` yields a clean file; this text is meant
/// for stderr.
public enum TrustInstructions {
    /// - Parameter caPath: made absolute against the current directory, since the exports
    ///   are pasted into shells and services that run elsewhere.
    public static func text(caPath: String) -> String {
        let caPath = caPath.hasPrefix("/") ? caPath
            : URL(fileURLWithPath: caPath, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
        let quoted = shellQuoted(caPath)
        return """
        Tapwire CA certificate: \(caPath)
        Warning: a client that trusts this CA lets whoever holds its private key \
        (ca.key next to it) read and alter every HTTPS connection of that client. \
        Trust it only on machines and in clients you use for debugging.

        Trust it system-wide (Debian/Ubuntu):
          sudo cp \(quoted) /usr/local/share/ca-certificates/tapwire.crt && sudo update-ca-certificates
        Or per client:
          curl --cacert \(quoted) https://example.com/    # with HTTPS_PROXY from `tapwire env`
          export NODE_EXTRA_CA_CERTS=\(quoted)    # Node.js (adds to its built-in roots)
          export REQUESTS_CA_BUNDLE=\(quoted)     # Python requests (replaces its roots)
          export SSL_CERT_FILE=\(quoted)          # OpenSSL-based tools, Ruby, Python ssl (replaces roots)
        Remove it again: sudo rm /usr/local/share/ca-certificates/tapwire.crt && sudo update-ca-certificates --fresh

        """
    }

    /// Single-quotes a path for POSIX shells unless it is plainly safe.
    static func shellQuoted(_ path: String) -> String {
        let safe = path.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "/"), UInt8(ascii: "."),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "+"), UInt8(ascii: ":"):
                return true
            default:
                return false
            }
        }
        if safe && !path.isEmpty { return path }
        return "'" + path.replacingOccurrencesOfSingleQuote() + "'"
    }
}

private extension String {
    func replacingOccurrencesOfSingleQuote() -> String {
        var result = ""
        for character in self {
            if character == "'" { result += "'\\''" } else { result.append(character) }
        }
        return result
    }
}
