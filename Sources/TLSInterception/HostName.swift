#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A host as it appears in a certificate: a DNS name (lower-cased, no
/// trailing dot) or an IP literal (canonical text plus network-order bytes).
/// Anything else is refused, so a hostile CONNECT target cannot smuggle extra
/// names or odd bytes into a certificate.
struct HostName: Hashable {
    enum Kind: Hashable {
        case dns
        case ipAddress([UInt8])
    }

    /// Canonical text: the cache key, the CN, and what hostname checks use.
    let text: String
    let kind: Kind

    var isIPAddress: Bool {
        if case .ipAddress = kind { return true }
        return false
    }

    init(_ raw: String) throws(TLSSetupError) {
        var host = raw
        if host.hasPrefix("[") && host.hasSuffix("]") && host.count >= 2 {
            host = String(host.dropFirst().dropLast())
        }
        if let (bytes, canonical) = HostName.parseIPv4(host) ?? HostName.parseIPv6(host) {
            self.text = canonical
            self.kind = .ipAddress(bytes)
            return
        }
        if host.hasSuffix(".") {
            host.removeLast()
            // "1.2.3.4." is the address 1.2.3.4 (inet_pton refuses the dot): as a DNS name its
            // text would be the address's own, the same cache key, and a leaf with a DNS SAN
            // would be served for the address from then on.
            if let (bytes, canonical) = HostName.parseIPv4(host) {
                self.text = canonical
                self.kind = .ipAddress(bytes)
                return
            }
        }
        host = host.lowercased()
        guard !host.isEmpty else { throw .invalidHost(host: raw, reason: "empty") }
        guard host.utf8.count <= 253 else { throw .invalidHost(host: raw, reason: "longer than 253 bytes") }
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty else { throw .invalidHost(host: raw, reason: "empty label") }
            guard label.utf8.count <= 63 else { throw .invalidHost(host: raw, reason: "label longer than 63 bytes") }
            // Underscores appear in real service names; '*' and non-ASCII
            // (IDNs arrive as punycode) do not belong in a CONNECT target.
            guard label.utf8.allSatisfy({ HostName.isLabelByte($0) }) else {
                throw .invalidHost(host: raw, reason: "only letters, digits, '-', '_' and '.' are allowed")
            }
        }
        self.text = host
        self.kind = .dns
    }

    private static func isLabelByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "_"):
            return true
        default:
            return false
        }
    }

    private static func parseIPv4(_ text: String) -> ([UInt8], String)? {
        var address = in_addr()
        guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        return (bytes, bytes.map(String.init).joined(separator: "."))
    }

    private static func parseIPv6(_ text: String) -> ([UInt8], String)? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return (bytes, stringFromCBuffer(buffer))
    }
}
