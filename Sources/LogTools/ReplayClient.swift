import HTTP1
#if canImport(Glibc)
import Glibc
#endif

/// Sends a `RecordedRequest` again over plain HTTP/1.1 (`tapwire replay`): through a proxy (the
/// absolute URL as target, and `X-Tapwire-Replay-Of` naming the record, which the proxy logs as
/// the new record's `replayOf` and does not forward), or straight to the origin (origin-form
/// target, no such field). One connection per request, `Connection: close`, the response read to
/// its end and dropped; only its status line is kept.
public struct ReplayClient {
    public enum Route: Equatable {
        case proxy(host: String, port: Int)
        case direct
    }

    public struct Response: Equatable {
        public var status: Int
        public var reason: String
        /// Bytes of the response, head included.
        public var bytes: Int
    }

    public struct SendError: Error, Equatable, CustomStringConvertible {
        public var message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    public var route: Route
    /// Seconds a connect, a write or a read may wait (`--timeout`).
    public var timeout: Double

    public static let defaultTimeout = 30.0

    public init(route: Route, timeout: Double = ReplayClient.defaultTimeout) {
        self.route = route
        self.timeout = timeout
    }

    /// `HOST:PORT`, `[v6]:PORT`; a wildcard listen address (`0.0.0.0`, `::`) is reached on loopback.
    public static func proxyRoute(_ address: String) -> Route? {
        guard let (host, port) = hostPort(address, defaultPort: nil) else { return nil }
        switch host {
        case "0.0.0.0", "": return .proxy(host: "127.0.0.1", port: port)
        case "::": return .proxy(host: "::1", port: port)
        default: return .proxy(host: host, port: port)
        }
    }

    /// The request's bytes as this client sends them.
    public func wireForm(_ request: RecordedRequest) throws(SendError) -> [UInt8] {
        let parts = URLParts(request.url)
        guard parts.scheme.lowercased() == "http" else {
            throw SendError("only http:// URLs can be replayed (this is \(parts.scheme.isEmpty ? "not absolute" : parts.scheme + "://")); `tapwire curl` prints a command for it")
        }
        let target: String
        switch route {
        case .proxy: target = request.url
        case .direct: target = parts.path + (parts.query.map { "?" + $0 } ?? "")
        }
        var head = "\(request.method) \(target) HTTP/1.1\r\nHost: \(ReplayClient.hostField(parts.authority))\r\n"
        for header in request.headers { head += "\(header.name): \(header.value)\r\n" }
        if case .proxy = route { head += "\(ReplayOfField.name): \(request.id)\r\n" }
        let body = request.body ?? []
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(request.method.uppercased()) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    public func send(_ request: RecordedRequest) throws(SendError) -> Response {
        let bytes = try wireForm(request)
        let host: String, port: Int
        switch route {
        case .proxy(let h, let p): (host, port) = (h, p)
        case .direct:
            guard let (h, p) = ReplayClient.hostPort(URLParts(request.url).authority, defaultPort: 80) else {
                throw SendError("no host in \(request.url)")
            }
            (host, port) = (h, p)
        }
        let fd = try connect(host: host, port: port)
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + sent, bytes.count - sent) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw SendError("writing to \(host):\(port): \(String(cString: strerror(errno)))") }
            sent += n
        }
        var head: [UInt8] = []
        var total = 0
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                throw SendError("\(host):\(port) sent nothing more for \(timeout) s (--timeout)")
            }
            if n < 0 { throw SendError("reading from \(host):\(port): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            total += n
            if head.count < 8192 { head += chunk[..<min(n, 8192 - head.count)] }
        }
        guard let lineEnd = head.firstIndex(of: 13) ?? head.firstIndex(of: 10) else {
            throw SendError("\(host):\(port) closed the connection without a response")
        }
        let words = String(decoding: head[..<lineEnd], as: UTF8.self).split(separator: " ", maxSplits: 2)
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]) else {
            throw SendError("\(host):\(port) answered with something other than HTTP")
        }
        return Response(status: status, reason: words.count > 2 ? String(words[2]) : "", bytes: total)
    }

    private func connect(host: String, port: Int) throws(SendError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            throw SendError("cannot resolve \(host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(first) }
        var lastError = ECONNREFUSED
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            guard fd >= 0 else { lastError = errno; continue }
            var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            if Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 { return fd }
            lastError = errno
            close(fd)
        }
        throw SendError("cannot connect to \(host):\(port): \(String(cString: strerror(lastError)))")
    }

    /// `host:port` / `[v6]:port` / `host` (with `defaultPort`), user info dropped.
    static func hostPort(_ authority: String, defaultPort: Int?) -> (String, Int)? {
        var rest = Substring(authority)
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        let port: Int
        if let portText {
            guard let p = Int(portText), p > 0, p < 65536 else { return nil }
            port = p
        } else {
            guard let defaultPort else { return nil }
            port = defaultPort
        }
        return (String(host), port)
    }

    /// The Host field for an authority: user info dropped, as RFC 9110 §7.2 wants.
    static func hostField(_ authority: String) -> String {
        guard let at = authority.lastIndex(of: "@") else { return authority }
        return String(authority[authority.index(after: at)...])
    }
}
