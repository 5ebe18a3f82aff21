/// Where a proxied request goes, from its request-target.
public struct HTTPAuthority: Sendable, Hashable, CustomStringConvertible {
    public var scheme: String   // "http", "https" (authority-form: "")
    /// Host without brackets: `example.com`, `127.0.0.1`, `::1`.
    public var host: String
    public var port: Int
    public init(scheme: String, host: String, port: Int) { self.scheme = scheme; self.host = host; self.port = port }
    /// `host:port`, bracketing IPv6 literals. Written into the string's storage in one
    /// pass, without interpolation or a generic scan for `:`: it is the Host field of every
    /// forwarded request, made on the event loop.
    public var description: String {
        guard (0...99_999).contains(port) else { return "\(bracketedHost):\(port)" }
        var host = self.host
        return host.withUTF8 { h in
            let bracket = HTTPAuthority.isIPv6Literal(h)
            // The exact length: up to 15 bytes (`127.0.0.1:19000`) the string is stored
            // inline, where a spare 8 made every one a heap allocation.
            let digits = port < 10 ? 1 : port < 100 ? 2 : port < 1000 ? 3 : port < 10000 ? 4 : 5
            return String(unsafeUninitializedCapacity: h.count + (bracket ? 2 : 0) + 1 + digits) { out in
                var i = 0
                if bracket { out[i] = UInt8(ascii: "["); i += 1 }
                for byte in h { out[i] = byte; i += 1 }
                if bracket { out[i] = UInt8(ascii: "]"); i += 1 }
                out[i] = UInt8(ascii: ":")
                i += 1
                guard let base = out.baseAddress else { return i }
                return i + DecimalText.write(UInt64(port), to: base + i)
            }
        }
    }

    /// The host as it appears in a URI or Host field: IPv6 literals in brackets.
    public var bracketedHost: String {
        var text = host
        return text.withUTF8 { HTTPAuthority.isIPv6Literal($0) } ? "[\(host)]" : host
    }

    /// A host holding `:` can only be an IPv6 literal (a reg-name or IPv4 cannot).
    static func isIPv6Literal(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
        host.contains(UInt8(ascii: ":"))
    }

    /// The default port of `scheme` (80 for http, 443 for https), nil for others.
    public var defaultPort: Int? {
        switch scheme {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    /// The Host field value: the port is left out when it is the scheme's default.
    public var hostFieldValue: String { port == defaultPort ? bracketedHost : description }

    /// `scheme://host[:port]originTarget`, as a log record's `url` shows an
    /// absolute-form request (authority-form ones are logged as `description`).
    public func url(originTarget: String) -> String {
        "\(scheme)://\(hostFieldValue)\(originTarget)"
    }
}
