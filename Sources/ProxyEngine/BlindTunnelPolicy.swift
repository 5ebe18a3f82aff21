/// Which CONNECT hosts stay blind tunnels whatever their bytes look like: neither decrypted
/// nor decoded as HTTP. The host lists live outside the engine (the config's globs).
public protocol BlindTunnelPolicy: Sendable {
    /// Whether a CONNECT to `host` is passed through unread (`tls.ignore`, `capture.blindTunnels`).
    func keepsBlind(host: String) -> Bool
}
