import ExchangeLog
import Foundation
import HTTP1
import LogTools
import ProxyEngine
import ResponseSerialization
import Synchronization
import CGlibcExtensions
#if canImport(Glibc)
import Glibc
#endif

/// The web viewer: a page (HTML, CSS and JavaScript embedded in the binary) and a small JSON
/// API over the log's records, served on threads of its own, never on an event loop. Each
/// connection gets a thread with blocking I/O, up to `maxConnections`.
///
/// It reads records only, through the same readers as `tapwire query`, `show`, `curl`, `diff`
/// and `har`: what redaction removed never reached the records, so it never reaches the page.
/// Replay, the one thing that acts, is a POST checked by `ViewerRequestGuard`.
public final class ViewerServer: @unchecked Sendable {
    /// Sends a recorded request again through the proxy listening on the address given (the
    /// one the viewer is bound to); returns the status line or throws a message. nil
    /// (`tapwire view`): the viewer is read-only.
    public typealias Replayer = @Sendable (JSON, SocketAddress) throws -> String

    public let settings: ViewerSettings
    public let layout: LogFileLayout
    let replayer: Replayer?
    let live: LiveFeed
    /// Per process: the page carries it in a meta element, other origins cannot read it.
    public let token: String
    private let connections = Atomic<Int>(0)
    /// Set by `bind(to:)`. Under a lock: `tapwire run` binds once its listeners are up, and a
    /// connection may already be served then (it gets 503 until bound).
    private let binding = Mutex<(guardrail: ViewerRequestGuard, address: SocketAddress)?>(nil)
    var boundAddress: SocketAddress? { binding.withLock { $0?.address } }
    /// `access.allow` for connections this server accepts itself (`tapwire view`).
    private var allow: [AddressRange] = []

    public init(settings: ViewerSettings, layout: LogFileLayout, replayer: Replayer?) {
        self.settings = settings
        self.layout = layout
        self.replayer = replayer
        live = LiveFeed(layout: layout, settings: settings)
        var generator = SystemRandomNumberGenerator()
        token = (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.joined(separator: "-")
    }

    /// The address browsers are told to open, and whose Host they must send. Set before serving.
    public func bind(to address: SocketAddress) {
        let guardrail = ViewerRequestGuard(listenHost: address.host, port: address.port, token: token)
        binding.withLock { $0 = (guardrail, address) }
    }

    // MARK: connections

    /// A connection the proxy handed over (`tapwire run`); its listener already applied `access.allow`.
    public func serve(_ handoff: ViewerHandoff) {
        start(socket: handoff.socket, first: handoff.head, buffered: handoff.buffered, unsent: handoff.unsent)
    }

    /// Listens on `address` (`tapwire view`) and serves every connection `allow` admits, until
    /// the process ends. Returns the bound address (port 0 resolved).
    public func listen(on address: SocketAddress, allow: [AddressRange]) throws -> SocketAddress {
        self.allow = allow
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ViewerError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockaddr { Glibc.bind(fd, $0, socklen_t($1)) }
        guard bound == 0, Glibc.listen(fd, 128) == 0 else {
            let why = String(cString: strerror(errno))
            Glibc.close(fd)
            throw ViewerError("cannot listen on \(address): \(why)")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let actual = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> SocketAddress? in
                getsockname(fd, sa, &length) == 0 ? SocketAddress(sa, length: length) : nil
            }
        } ?? address
        bind(to: actual)
        Thread { [self] in
            _ = tapwire_name_current_thread("tapwire-vaccept")
            acceptLoop(fd)
        }.start()
        return actual
    }

    private func acceptLoop(_ listener: Int32) {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                usleep(10_000)
                continue
            }
            let peer = withUnsafePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0, length: length) }
            }
            guard let peer, allow.contains(where: { $0.contains(peer) }) else {
                let socket = ViewerSocket(fd, timeout: 1)
                let body = "403 Forbidden: \(peer?.host ?? "this client") is not in access.allow\n"
                socket.write(Array("HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8))
                socket.close()
                continue
            }
            start(socket: fd, first: nil, buffered: [], unsent: [])
        }
    }

    /// Everything, even the refusal beyond `maxConnections`, happens on the new thread: this
    /// may be called on an event loop, which must not wait on a socket.
    private func start(socket fd: Int32, first: HTTPRequestHead?, buffered: [UInt8], unsent: [UInt8]) {
        Thread { [self] in
            _ = tapwire_name_current_thread("tapwire-viewer")
            let socket = ViewerSocket(fd, timeout: settings.idleTimeout)
            defer { connections.subtract(1, ordering: .relaxed) }
            guard connections.add(1, ordering: .relaxed).newValue <= settings.maxConnections else {
                let response = ViewerResponse.text("the viewer serves at most \(settings.maxConnections) connections (viewer.maxConnections)\n",
                                                   status: 503, reason: "Service Unavailable")
                socket.write(unsent + response.head(keepAlive: false) + response.body)
                socket.close()
                return
            }
            if !unsent.isEmpty && !socket.write(unsent) { socket.close(); return }
            var connection = ViewerConnection(server: self, socket: socket, first: first, buffered: buffered)
            connection.run()
        }.start()
    }

    // MARK: routing

    enum Answer {
        case whole(ViewerResponse)
        /// The handler writes to the socket itself and the connection closes after it.
        case stream((ViewerSocket) -> Void)
    }

    /// `local`: the address the connection arrived at. Its Host must name that listener (one of
    /// several `tapwire run` listens on), not only the first.
    func answer(_ request: ViewerRequest, arrivedAt local: SocketAddress? = nil) -> Answer {
        guard let bound = binding.withLock({ $0?.guardrail }) else { return .whole(.text("the viewer is not bound\n", status: 503, reason: "Service Unavailable")) }
        let guardrail = local.map { ViewerRequestGuard(listenHost: $0.host, port: $0.port, token: token) } ?? bound
        switch guardrail.check(method: request.method, host: request.header("Host"), origin: request.header("Origin"),
                               secFetchSite: request.header("Sec-Fetch-Site"), token: request.header("X-Tapwire-Token"),
                               path: request.path, secFetchMode: request.header("Sec-Fetch-Mode"),
                               secFetchDest: request.header("Sec-Fetch-Dest")) {
        case .allowed: break
        case .misdirected:
            return .whole(.text("this viewer answers only to Host \(guardrail.listenHost):\(guardrail.port), localhost or a loopback address with that port\n",
                                status: 421, reason: "Misdirected Request"))
        case .forbidden(let why):
            return .whole(.text(why + "\n", status: 403, reason: "Forbidden"))
        }
        let api = ViewerAPI(server: self)
        switch (request.method, request.path) {
        case ("GET", "/"), ("HEAD", "/"), ("GET", "/index.html"):
            // The page shows a query from a link followed elsewhere but waits for the reader to run it.
            return .whole(page(linkedFromElsewhere: ViewerRequestGuard.mayBeLinkedFromElsewhere(secFetchSite: request.header("Sec-Fetch-Site"))))
        case ("GET", "/viewer.js"):
            return .whole(ViewerResponse(status: 200, reason: "OK", contentType: "text/javascript; charset=utf-8", body: PackageResources.viewer_js))
        case ("GET", "/viewer.css"):
            return .whole(ViewerResponse(status: 200, reason: "OK", contentType: "text/css; charset=utf-8", body: PackageResources.viewer_css))
        case ("GET", "/api/query"): return .whole(api.check(request))
        case ("GET", "/api/records"): return .whole(api.records(request))
        case ("GET", "/api/record"): return .whole(api.record(request))
        case ("GET", "/api/curl"): return .whole(api.curl(request))
        case ("GET", "/api/diff"): return .whole(api.diff(request))
        case ("GET", "/api/har"): return api.har(request)
        case ("GET", "/api/live"): return api.live(request)
        case ("POST", "/api/replay"): return .whole(api.replay(request))
        case (_, "/"), (_, "/index.html"), (_, "/viewer.js"), (_, "/viewer.css"), (_, "/api/query"), (_, "/api/records"), (_, "/api/record"),
             (_, "/api/curl"), (_, "/api/diff"), (_, "/api/har"), (_, "/api/live"), (_, "/api/replay"):
            var response = ViewerResponse.text("method not allowed\n", status: 405, reason: "Method Not Allowed")
            response.extraHeaders = [("Allow", request.path == "/api/replay" ? "POST" : request.path == "/" ? "GET, HEAD" : "GET")]
            return .whole(response)
        default:
            // On the proxy's address, most likely a client that took the proxy for an origin.
            guard replayer != nil, let address = boundAddress else { return .whole(.text("not found\n", status: 404, reason: "Not Found")) }
            return .whole(.text("Tapwire is a proxy: send absolute-form requests (set HTTP_PROXY=http://\(address)). "
                                + "Its own endpoints are /healthz, /metrics and the viewer at /.\n", status: 400, reason: "Bad Request"))
        }
    }

    private func page(linkedFromElsewhere: Bool) -> ViewerResponse {
        var html = String(decoding: PackageResources.viewer_html, as: UTF8.self)
        html = html.replacingOccurrences(of: "{{token}}", with: token)
            .replacingOccurrences(of: "{{mode}}", with: replayer == nil ? "view" : "run")
            .replacingOccurrences(of: "{{linked}}", with: linkedFromElsewhere ? "elsewhere" : "here")
        return ViewerResponse(status: 200, reason: "OK", contentType: "text/html; charset=utf-8", body: Array(html.utf8))
    }
}

public struct ViewerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
