import ExchangeLog
import ProxyEngine

/// The engine's `BlindTunnelPolicy` from the config: `tls.ignore` and
/// `capture.blindTunnels`, host globs (any case) whose CONNECT is relayed unread.
struct BlindTunnelHosts: BlindTunnelPolicy {
    let globs: [Glob]

    init(tlsIgnore: [String], blindTunnels: [String]) {
        globs = (tlsIgnore + blindTunnels).map { Glob($0, caseInsensitive: true) }
    }

    func keepsBlind(host: String) -> Bool {
        // One trailing dot names the same host, as for `tls.intercept`.
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        return globs.contains { $0.matches(name) }
    }
}
