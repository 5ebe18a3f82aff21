import ProxyEngine

/// Who may talk to the viewer, decided from a request's head alone (a pure value, tested without
/// sockets). A viewer on localhost is reachable from every page the user's browser opens, so:
///
/// - `Host` must be the listen address, `localhost` or a loopback literal, with the listen port:
///   a page on `evil.example` whose name was rebound to 127.0.0.1 sends `Host: evil.example` and
///   gets 421 with no data (DNS rebinding);
/// - an `Origin`, when the browser sends one, must be this viewer's own origin (`http://` and the
///   `Host`): a cross-origin page may open a request but never reads or acts through one;
/// - a request that acts (POST) must also carry the per-process token, which only the page this
///   viewer served holds, and an `Origin` (browsers send it on every POST);
/// - the one cross-site request answered is a top-level navigation to the page (a shared link
///   to a view, `/?q=…`, clicked elsewhere): it reads nothing the other site can see, the page
///   may not be framed, and its opener is cut off (`Cross-Origin-Opener-Policy`).
public struct ViewerRequestGuard: Sendable {
    /// The listen address's host as written (`127.0.0.1`, `::1`, a name).
    public let listenHost: String
    public let port: Int
    public let token: String

    public init(listenHost: String, port: Int, token: String) {
        self.listenHost = listenHost.lowercased()
        self.port = port
        self.token = token
    }

    public enum Verdict: Equatable, Sendable {
        case allowed
        /// 421: the Host names another site.
        case misdirected
        /// 403: a foreign Origin, or a POST without the token.
        case forbidden(String)
    }

    /// `path`, `secFetchMode` and `secFetchDest` tell a link followed from another site (a
    /// top-level navigation to the page) from a request a foreign page makes.
    public func check(method: String, host: String?, origin: String?, secFetchSite: String?, token presented: String?,
                      path: String = "", secFetchMode: String? = nil, secFetchDest: String? = nil) -> Verdict {
        guard let host, allows(host: host) else { return .misdirected }
        if let origin, origin != "http://" + host {
            return .forbidden("the request comes from another origin (\(origin))")
        }
        // A browser that says so (Sec-Fetch-Site) is believed also when it sends no Origin.
        let linkToThePage = (method == "GET" || method == "HEAD") && (path == "/" || path == "/index.html")
            && secFetchMode?.lowercased() == "navigate" && secFetchDest?.lowercased() == "document"
        if let site = secFetchSite?.lowercased(), site != "same-origin", site != "none", !linkToThePage {
            return .forbidden("the request comes from another site (Sec-Fetch-Site: \(site))")
        }
        if method == "POST" {
            guard origin != nil else { return .forbidden("a POST needs an Origin") }
            guard let presented, ViewerRequestGuard.equalInConstantTime(presented, token) else {
                return .forbidden("a POST needs the page's token")
            }
        }
        return .allowed
    }

    /// Whether a request for the page may come from a link on another site (`check` lets only
    /// such a navigation through): only the browser's word that it was typed, bookmarked or
    /// followed on the viewer itself says otherwise. A browser that sends no `Sec-Fetch-Site`
    /// (older ones, or any to a plain-HTTP address that is not loopback) cannot tell, so it
    /// counts as elsewhere.
    public static func mayBeLinkedFromElsewhere(secFetchSite: String?) -> Bool {
        guard let site = secFetchSite?.lowercased() else { return true }
        return site != "same-origin" && site != "none"
    }

    /// Whether `Host: value` names this viewer.
    public func allows(host value: String) -> Bool {
        guard let (name, explicitPort) = ViewerRequestGuard.split(host: value.lowercased()) else { return false }
        guard (explicitPort ?? 80) == port else { return false }
        if name == "localhost" || name == listenHost { return true }
        guard let address = SocketAddress(parsing: name.contains(":") ? "[\(name)]:\(port)" : "\(name):\(port)") else { return false }
        return address.isLoopback
    }

    /// `name[:port]` or `[v6][:port]`; nil when malformed.
    static func split(host: String) -> (String, Int?)? {
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let name = String(host[host.index(after: host.startIndex)..<close])
            let rest = host[host.index(after: close)...]
            if rest.isEmpty { return (name, nil) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()) else { return nil }
            return (name, port)
        }
        let parts = host.split(separator: ":", omittingEmptySubsequences: false)
        guard !host.isEmpty, parts.count <= 2, !parts[0].isEmpty else { return nil }
        if parts.count == 1 { return (host, nil) }
        guard let port = Int(parts[1]) else { return nil }
        return (String(parts[0]), port)
    }

    static func equalInConstantTime(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in x.indices { difference |= x[i] ^ y[i] }
        return difference == 0
    }
}
