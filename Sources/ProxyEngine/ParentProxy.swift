import Foundation
import HTTP1

/// A parent proxy every upstream connection goes through (`upstream.proxy`), except to
/// the hosts `upstream.noProxy` sends direct (`UpstreamRouting`).
public struct ParentProxy: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        /// HTTP/1.1 to the parent: absolute-form for http URLs, CONNECT for everything else.
        case http
        /// The same inside TLS to the parent, whose certificate is verified as an origin's.
        case https
        /// SOCKS5 (RFC 1928) with names resolved by the parent (curl's `socks5h`), and
        /// username/password authentication (RFC 1929) when credentials are set.
        case socks5
    }

    public var kind: Kind
    /// Without brackets, as `HTTPAuthority.host`.
    public var host: String
    public var port: Int
    public var credentials: ParentCredentials?

    public init(kind: Kind, host: String, port: Int, credentials: ParentCredentials? = nil) {
        self.kind = kind
        self.host = host
        self.port = port
        self.credentials = credentials
    }

    /// `http://squid.corp:3128`: what records (`metrics.via`) and log lines name. Never
    /// the credentials, which is why `description` is this too.
    public var via: String { "\(kind.rawValue)://\(HTTPAuthority(scheme: "", host: host, port: port))" }
    public var description: String { via }

    /// Where the TCP connection goes.
    var authority: HTTPAuthority { HTTPAuthority(scheme: kind == .https ? "https" : "http", host: host, port: port) }

    /// Whether a request to `origin` is written in absolute-form to the parent (plain HTTP
    /// through an HTTP parent) rather than sent through a tunnel the parent opens.
    func forwardsAbsoluteForm(to origin: HTTPAuthority) -> Bool {
        kind != .socks5 && origin.scheme == "http"
    }
}

/// A user name and password for the parent. Printing it (a log line, an error message,
/// string interpolation anywhere) shows `[credentials]`: the values only leave through
/// `basicAuthorization` and the SOCKS5 handshake.
public struct ParentCredentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let user: String
    public let password: String

    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// `user:pass`, as a credentials file holds it (the first `:` separates them, so a
    /// password may contain `:`); nil without a `:`.
    public init?(line: String) {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        self.init(user: String(line[..<colon]), password: String(line[line.index(after: colon)...]))
    }

    public var description: String { "[credentials]" }
    public var debugDescription: String { "[credentials]" }
    public var customMirror: Mirror { Mirror(self, children: []) }

    /// The `Proxy-Authorization` value (RFC 7617 Basic, UTF-8).
    var basicAuthorization: String { "Basic " + Data("\(user):\(password)".utf8).base64EncodedString() }
}

/// Which upstream connections go through the parent: all but those to a host matching
/// `upstream.noProxy`, by name (host globs) or, for an IP literal, by range. A name is
/// never resolved to be checked against a range: with a parent the parent resolves it.
public struct UpstreamRouting: Sendable {
    public var parent: ParentProxy?
    /// `upstream.noProxy`'s host globs (the configuration's `Glob`, any case); a trailing
    /// dot is dropped before asking.
    public var directHost: @Sendable (String) -> Bool
    /// `upstream.noProxy`'s CIDR ranges, for hosts written as IP literals.
    public var directRanges: [AddressRange]
    /// TLS to an `https` parent; nil when none can be made (no usable trust store).
    public var parentTLS: ClientTLS?

    public init(parent: ParentProxy?, directHost: @escaping @Sendable (String) -> Bool = { _ in false },
                directRanges: [AddressRange] = [], parentTLS: ClientTLS? = nil) {
        self.parent = parent
        self.directHost = directHost
        self.directRanges = directRanges
        self.parentTLS = parentTLS
    }

    /// Every connection direct (`upstream.proxy: null`).
    public static let direct = UpstreamRouting(parent: nil)

    /// The parent a connection to `host` goes through, nil for direct.
    public func parent(forHost host: String) -> ParentProxy? {
        guard let parent else { return nil }
        let name = host.count > 1 && host.hasSuffix(".") ? String(host.dropLast()) : host
        if let literal = SocketAddress(parsing: name.contains(":") ? "[\(name)]:0" : "\(name):0"),
           directRanges.contains(where: { $0.contains(literal) }) {
            return nil
        }
        return directHost(name) ? nil : parent
    }
}

/// A client-side TLS maker for connections the engine opens itself (an `https` parent),
/// independent of interception. SSL objects are owned by the bufferevent they are given to.
public protocol ClientTLS: Sendable {
    /// A client-side `SSL *` verifying `host` (SNI, hostname check).
    func clientSSL(forHost host: String) throws -> OpaquePointer
    /// Why a handshake failed: the verification result or the OpenSSL error text.
    func failureDescription(ssl: OpaquePointer?, error: UInt) -> String
    /// Frees an `SSL *` this made that was never given to a bufferevent.
    func free(ssl: OpaquePointer)
}
