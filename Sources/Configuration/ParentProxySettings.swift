import ExchangeLog
import Foundation
import ProxyEngine

/// `upstream.proxy`, `upstream.proxyCredentialsFile` and `upstream.noProxy`, validated.
/// Credentials never appear in an error message: a value holding them is quoted without them.
public struct ParentProxySettings: Sendable, Equatable {
    /// nil: every connection goes direct.
    public var parent: ParentProxy?
    public var credentialsFile: String?
    /// Host globs and CIDR ranges that go direct; loopback by default.
    public var noProxy: [String] = ParentProxySettings.defaultNoProxy

    public static let defaultNoProxy = ["localhost", "127.0.0.0/8", "::1/128"]

    public init() {}

    /// What the engine routes by; `parentTLS` makes TLS for an `https` parent.
    public func routing(parentTLS: ClientTLS?) -> UpstreamRouting {
        let ranges = noProxy.compactMap(AddressRange.init)
        let globs = noProxy.filter { AddressRange($0) == nil }.map { Glob($0, caseInsensitive: true) }
        return UpstreamRouting(parent: parent, directHost: { host in globs.contains { $0.matches(host) } },
                               directRanges: ranges, parentTLS: parentTLS)
    }

    /// Why a value is refused (the reader adds the key).
    struct Refusal: Error {
        let why: String
        init(_ why: String) { self.why = why }
    }

    /// Longest user name or password RFC 1929 can carry.
    static let maxSOCKSCredentialBytes = 255

    /// `scheme://[user:pass@]host:port`, with nothing after the port (a trailing `/` aside).
    static func parse(_ text: String) -> Result<ParentProxy, Refusal> {
        guard let schemeEnd = text.range(of: "://") else {
            return .failure(Refusal("expected http://HOST:PORT, https://HOST:PORT or socks5://HOST:PORT (user:password@ optional)"))
        }
        let schemeText = text[..<schemeEnd.lowerBound].lowercased()
        guard let kind = ParentProxy.Kind(rawValue: schemeText == "socks5h" ? "socks5" : schemeText) else {
            return .failure(Refusal("the scheme must be http, https or socks5"))
        }
        var rest = Substring(text[schemeEnd.upperBound...])
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        var credentials: ParentCredentials?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userInfo.firstIndex(of: ":"),
                  let user = String(userInfo[..<colon]).removingPercentEncoding,
                  let password = String(userInfo[userInfo.index(after: colon)...]).removingPercentEncoding else {
                return .failure(Refusal("the credentials before @ must be user:password (percent-encoded where needed)"))
            }
            credentials = ParentCredentials(user: user, password: password)
        }
        if rest.contains("/") || rest.contains("?") || rest.contains("#") {
            return .failure(Refusal("a parent proxy is HOST:PORT without a path"))
        }
        let host: String, portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]"), rest[rest.index(after: close)...].hasPrefix(":") else {
                return .failure(Refusal("expected [IPv6]:PORT"))
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            portText = rest[rest.index(close, offsetBy: 2)...]
        } else {
            guard let colon = rest.lastIndex(of: ":") else { return .failure(Refusal("the port is missing (HOST:PORT)")) }
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty, !host.contains(":") || rest.hasPrefix("["), !host.contains(where: { $0 == " " || $0 == "@" }) else {
            return .failure(Refusal("the host is missing or not a host name or address"))
        }
        guard let port = Int(portText), (1...65535).contains(port) else {
            return .failure(Refusal("the port must be 1-65535"))
        }
        return .success(ParentProxy(kind: kind, host: host, port: port, credentials: credentials))
    }

    /// The value as an error message may quote it: whatever stands before the last `@`
    /// (after the scheme, when there is one) replaced, scheme or not.
    static func quoted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return "\"\(text)\"" }
        let start = text.range(of: "://").map(\.upperBound).flatMap { $0 <= at ? $0 : nil } ?? text.startIndex
        return "\"\(text[..<start])[credentials]\(text[at...])\""
    }

    /// Reads a `user:pass` credentials file, refusing one that group or others may read.
    static func readCredentials(_ path: String) -> Result<ParentCredentials, Refusal> {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure(Refusal("\(path): \(String(cString: strerror(errno)))")) }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            return .failure(Refusal("\(path) is readable by group or others (mode \(String(mode, radix: 8))); chmod 600 it"))
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            return .failure(Refusal("\(path) cannot be read as UTF-8 text"))
        }
        // One line; a final newline (as editors write, "\r\n" included: one Character in
        // Swift) is not part of the password.
        var line = Substring(text)
        while let last = line.last, last.isNewline { line = line.dropLast() }
        guard !line.contains(where: \.isNewline), let credentials = ParentCredentials(line: String(line)), !credentials.user.isEmpty else {
            return .failure(Refusal("\(path) must hold one line user:password"))
        }
        return .success(credentials)
    }
}
