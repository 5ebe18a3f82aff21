import CLibevent
import HTTP1
import Foundation

/// A listening socket on one loop. Every loop binds the same address with
/// SO_REUSEPORT, so the kernel spreads new clients across loops.
final class Listener {
    let loop: EventLoop
    unowned let engine: ProxyEngine
    private var listener: OpaquePointer?
    private(set) var boundAddress: SocketAddress?
    private var backoff: LoopTimer?
    /// One log line per listener, not one per retry.
    private var loggedFailure = false
    /// What its clients speak (`listen[i].mode`) and where its answers may come from (`replay`).
    let role: ListenerRole

    init(loop: EventLoop, engine: ProxyEngine, address: SocketAddress, role: ListenerRole) throws {
        self.loop = loop
        self.engine = engine
        self.role = role
        var flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT
        if address.family == AF_INET6 { flags |= LEV_OPT_BIND_IPV6ONLY }
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        let l = address.withSockaddr { sa, len in
            evconnlistener_new_bind(loop.base, { _, fd, sa, len, ctx in
                guard let ctx, let sa else { Foundation.close(fd); return }
                Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue().accepted(fd, sa, socklen_t(len))
            }, ctx, UInt32(flags), 1024, sa, len)
        }
        guard let l else {
            throw EngineError.listen(address.description, String(cString: strerror(errno)))
        }
        try adopt(l)
    }

    /// Throws when something already listens on `address`. SO_REUSEPORT, which lets every
    /// loop bind the address, would also let a second Tapwire (any process of the same user
    /// that sets it) bind it silently and take part of the clients: a plain bind, closed at
    /// once, fails with EADDRINUSE instead. Port 0 asks for a fresh port, so it is not checked.
    static func checkNotInUse(_ address: SocketAddress) throws {
        guard address.port != 0 else { return }
        let fd = socket(Int32(address.family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw EngineError.listen(address.description, String(cString: strerror(errno))) }
        defer { Foundation.close(fd) }
        // As the real listeners do (TIME_WAIT connections of an earlier run do not count).
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.family == AF_INET6 { _ = setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        let result = address.withSockaddr { sa, len in Foundation.bind(fd, sa, socklen_t(len)) }
        if result != 0 && errno == EADDRINUSE {
            throw EngineError.listen(address.description, String(cString: strerror(EADDRINUSE)))
        }
    }

    /// A socket handed over by systemd (socket activation), shared by every loop; no
    /// listener closes it: the engine does once every loop has let go (`shutdown`).
    init(loop: EventLoop, engine: ProxyEngine, inheritedFD fd: Int32, role: ListenerRole) throws {
        self.loop = loop
        self.engine = engine
        self.role = role
        _ = evutil_make_socket_nonblocking(fd)
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        guard let l = evconnlistener_new(loop.base, { _, fd, sa, len, ctx in
            guard let ctx, let sa else { Foundation.close(fd); return }
            Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue().accepted(fd, sa, socklen_t(len))
        }, ctx, 0, -1, fd) else {
            throw EngineError.listen("inherited socket \(fd)", String(cString: strerror(errno)))
        }
        try adopt(l)
    }

    private func adopt(_ l: OpaquePointer) throws {
        listener = l
        evconnlistener_set_error_cb(l) { _, ctx in
            guard let ctx else { return }
            Unmanaged<Listener>.fromOpaque(ctx).takeUnretainedValue().acceptFailed()
        }
        var st = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = evconnlistener_get_fd(l)
        let ok = withUnsafeMutablePointer(to: &st) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) == 0 ? SocketAddress($0, length: len) : nil }
        }
        boundAddress = ok
    }

    private func accepted(_ fd: Int32, _ sa: UnsafeMutablePointer<sockaddr>, _ len: socklen_t) {
        guard let peer = SocketAddress(sa, length: len) else { Foundation.close(fd); return }
        let config = engine.configuration
        // Every listener, whatever its mode: a SOCKS or reverse listener is as open as a proxy.
        guard config.allow.contains(where: { $0.contains(peer) }) else {
            engine.metrics.refusedConnections.add()
            // A SOCKS5 client would not read an HTTP answer: it is closed without one.
            if case .socks5 = role.mode { Foundation.close(fd); return }
            // A short answer, written without waiting: the socket is new, so it fits.
            let status = ProxyStatus.forbidden
            let body = "\(status.code) \(status.reasonPhrase): \(peer.host) is not in access.allow\n"
            let msg = "\(status.statusLine)Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
            _ = msg.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            Foundation.close(fd)
            return
        }
        guard engine.tryReserveConnection() else {
            engine.metrics.refusedConnections.add()
            Foundation.close(fd)
            return
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        do {
            let session = try ClientSession(loop: loop, engine: engine, fd: fd, peer: peer, role: role)
            loop.sessions[ObjectIdentifier(session)] = session
        } catch {
            engine.connectionClosed()
        }
    }

    /// EMFILE and friends leave the listener readable forever: pause it for a
    /// moment instead of spinning, then try again.
    private func acceptFailed() {
        guard let listener else { return }
        let why = String(cString: strerror(errno))
        evconnlistener_disable(listener)
        if !loggedFailure {
            loggedFailure = true
            FileHandle.standardError.write(Data("tapwire: accept failed (\(why)); pausing this listener for 0.25 s at a time\n".utf8))
        }
        if backoff == nil {
            backoff = LoopTimer(loop: loop) { [weak self] in
                guard let self, let l = self.listener else { return }
                evconnlistener_enable(l)
            }
        }
        backoff?.schedule(after: 0.25)
    }

    func close() {
        backoff?.cancel()
        if let listener { evconnlistener_free(listener); self.listener = nil }
    }

    deinit { close() }
}

/// What one listener's sessions are: its mode and its replay source (nil: answers come from
/// the network).
struct ListenerRole {
    var mode: ListenerMode
    var replay: ReplayResponder?
    static let forward = ListenerRole(mode: .forward, replay: nil)
}
