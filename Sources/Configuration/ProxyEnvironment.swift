import ProxyEngine

/// What `tapwire env` prints: shell exports pointing clients at the first listener.
public enum ProxyEnvironment {
    public static func exports(listen: [String]) -> String {
        let first = listen.first.flatMap { SocketAddress(parsing: $0) }
        var hostPort = listen.first ?? "127.0.0.1:8080"
        if let a = first {
            // A wildcard listener is reached through loopback.
            if a.isUnspecified { hostPort = a.ipBytes.count == 16 ? "[::1]:\(a.port)" : "127.0.0.1:\(a.port)" }
            else { hostPort = a.description }
        }
        let url = "http://\(hostPort)"
        return """
        export HTTP_PROXY=\(url) HTTPS_PROXY=\(url) NO_PROXY=localhost,127.0.0.1,::1
        export http_proxy=\(url) https_proxy=\(url) no_proxy=localhost,127.0.0.1,::1
        """
    }
}
