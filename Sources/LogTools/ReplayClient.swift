import HTTP1
import TLSInterception
#if canImport(Glibc)
import Glibc
#endif

/// Sends a `RecordedRequest` again over HTTP/1.1 (`tapwire replay`): through a proxy (the
/// absolute URL as target, and `X-Tapwire-Replay-Of` naming the record, which the proxy logs as
/// the new record's `replayOf` and does not forward), or straight to the origin (origin-form
/// target, no such field). One connection per request, `Connection: close`, the response read to
/// its end and dropped; only its status line is kept.
///
/// An `https://` record goes through the proxy as `CONNECT host:port`, then TLS inside the tunnel
/// checked against Tapwire's CA (only a decrypting proxy can record it, so a host the proxy would
/// tunnel blind is refused: `refusal(_:)`), then the origin-form request with the replay field.
/// Direct, it is TLS to the origin checked as the proxy checks origins.
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

    /// How `https://` records are sent; nil refuses them.
    public struct HTTPS {
        /// Tapwire's CA certificate (`tls.caDirectory`/ca.pem): the only anchor for the proxy's leaves.
        public var proxyCAFile: String
        /// `tls.upstreamCAFile`, trusted beside the system store for direct replays.
        public var upstreamCAFile: String?
        /// `tls.insecureUpstream`: direct replays skip verification.
        public var insecureUpstream: Bool
        /// Whether the proxy decrypts a host (`tls.intercept` less `tls.ignore`).
        public var proxyDecrypts: (String) -> Bool

        public init(proxyCAFile: String, upstreamCAFile: String?, insecureUpstream: Bool,
                    proxyDecrypts: @escaping (String) -> Bool) {
            self.proxyCAFile = proxyCAFile
            self.upstreamCAFile = upstreamCAFile
            self.insecureUpstream = insecureUpstream
            self.proxyDecrypts = proxyDecrypts
        }
    }

    public var route: Route
    public var https: HTTPS?
    /// Seconds a connect, a write or a read may wait (`--timeout`).
    public var timeout: Double

    public static let defaultTimeout = 30.0

    public init(route: Route, timeout: Double = ReplayClient.defaultTimeout, https: HTTPS? = nil) {
        self.route = route
        self.timeout = timeout
        self.https = https
    }

    /// Why this client will not send `request` on its route, or nil.
    public func refusal(_ request: RecordedRequest) -> String? {
        let parts = URLParts(request.url)
        guard parts.scheme.lowercased() == "https", case .proxy = route else { return nil }
        guard let https else { return "https:// replays need the config's tls block" }
        guard let (host, _) = ReplayClient.hostPort(parts.authority, defaultPort: 443) else { return nil }
        if !https.proxyDecrypts(host) {
            return "the proxy does not decrypt \(host) (not in tls.intercept, or in tls.ignore): the replay would pass through a blind tunnel, unrecorded, carrying \(ReplayOfField.name) to the origin; use --direct to send it straight to the origin"
        }
        return nil
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
        let scheme = parts.scheme.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw SendError("only http:// and https:// URLs can be replayed (this is \(parts.scheme.isEmpty ? "not absolute" : parts.scheme + "://")); `tapwire curl` prints a command for it")
        }
        // Inside a CONNECT tunnel the proxy is the origin's stand-in: origin form, as to the origin.
        let target: String
        switch route {
        case .proxy where scheme == "http": target = request.url
        case .proxy, .direct: target = parts.path + (parts.query.map { "?" + $0 } ?? "")
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
        if let reason = refusal(request) { throw SendError(reason) }
        let bytes = try wireForm(request)
        let parts = URLParts(request.url)
        let secure = parts.scheme.lowercased() == "https"
        guard let (originHost, originPort) = ReplayClient.hostPort(parts.authority, defaultPort: secure ? 443 : 80) else {
            throw SendError("no host in \(request.url)")
        }
        let host: String, port: Int
        switch route {
        case .proxy(let h, let p): (host, port) = (h, p)
        case .direct: (host, port) = (originHost, originPort)
        }
        // The trust is set up first: a missing ca.pem is reported before anything is sent.
        var context: UpstreamTLSContext?
        if secure {
            guard let https else { throw SendError("https:// replays need the config's tls block") }
            do {
                switch route {
                case .proxy: context = try UpstreamTLSContext(upstreamCAFile: https.proxyCAFile, insecure: false, systemTrust: false)
                case .direct: context = try UpstreamTLSContext(upstreamCAFile: https.upstreamCAFile, insecure: https.insecureUpstream)
                }
            } catch {
                throw SendError("\(error)")
            }
        }
        let fd = try connect(host: host, port: port)
        defer { close(fd) }
        let stream: Stream
        if let context {
            if case .proxy = route {
                let authority = originHost.contains(":") ? "[\(originHost)]:\(originPort)" : "\(originHost):\(originPort)"
                try openTunnel(fd: fd, authority: authority, proxy: "\(host):\(port)")
            }
            do {
                stream = .tls(try BlockingTLSStream(fd: fd, context: context, host: originHost))
            } catch {
                throw SendError(error.message)
            }
        } else {
            stream = .plain(fd)
        }
        let peer = "\(host):\(port)"
        try stream.write(bytes, peer: peer)
        var head: [UInt8] = []
        var total = 0
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = try stream.read(into: &chunk, peer: peer, timeout: timeout)
            if n == 0 { break }
            total += n
            if head.count < 8192 { head += chunk[..<min(n, 8192 - head.count)] }
        }
        guard let lineEnd = head.firstIndex(of: 13) ?? head.firstIndex(of: 10) else {
            throw SendError("\(peer) closed the connection without a response")
        }
        let words = String(decoding: head[..<lineEnd], as: UTF8.self).split(separator: " ", maxSplits: 2)
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]) else {
            throw SendError("\(peer) answered with something other than HTTP")
        }
        return Response(status: status, reason: words.count > 2 ? String(words[2]) : "", bytes: total)
    }

    /// The connection's bytes, in the clear or through TLS.
    private enum Stream {
        case plain(Int32)
        case tls(BlockingTLSStream)

        func write(_ bytes: [UInt8], peer: String) throws(SendError) {
            switch self {
            case .plain(let fd): try ReplayClient.writeAll(fd: fd, bytes, peer: peer)
            case .tls(let tls):
                do { try tls.write(bytes) } catch { throw SendError(error.message) }
            }
        }

        func read(into chunk: inout [UInt8], peer: String, timeout: Double) throws(SendError) -> Int {
            switch self {
            case .plain(let fd):
                while true {
                    let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                    if n >= 0 { return n }
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK {
                        throw SendError("\(peer) sent nothing more for \(timeout) s (--timeout)")
                    }
                    throw SendError("reading from \(peer): \(String(cString: strerror(errno)))")
                }
            case .tls(let tls):
                do { return try tls.read(into: &chunk) } catch { throw SendError(error.message) }
            }
        }
    }

    private static func writeAll(fd: Int32, _ bytes: [UInt8], peer: String) throws(SendError) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in Glibc.write(fd, raw.baseAddress.map { $0 + sent }, bytes.count - sent) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw SendError("writing to \(peer): \(String(cString: strerror(errno)))") }
            sent += n
        }
    }

    /// The longest CONNECT response head read before giving up on it.
    static let maxTunnelResponseHead = 8192

    /// Asks the proxy for a tunnel to `authority` and reads its answer byte by byte, so that
    /// nothing after the head (TLS from the far side) is taken from the socket.
    private func openTunnel(fd: Int32, authority: String, proxy: String) throws(SendError) {
        try ReplayClient.writeAll(fd: fd, Array("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n".utf8), peer: proxy)
        var head: [UInt8] = []
        var byte: [UInt8] = [0]
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard head.count < ReplayClient.maxTunnelResponseHead else {
                throw SendError("\(proxy) answered CONNECT with a head over \(ReplayClient.maxTunnelResponseHead) bytes")
            }
            let n = try Stream.plain(fd).read(into: &byte, peer: proxy, timeout: timeout)
            if n == 0 { throw SendError("\(proxy) closed the connection in answer to CONNECT \(authority)") }
            head.append(byte[0])
        }
        let line = String(decoding: head.prefix { $0 != 13 && $0 != 10 }, as: UTF8.self)
        let words = line.split(separator: " ", maxSplits: 2)
        guard words.count >= 2, words[0].hasPrefix("HTTP/"), let status = Int(words[1]), (200..<300).contains(status) else {
            throw SendError("\(proxy) refused CONNECT \(authority): \(line)")
        }
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
