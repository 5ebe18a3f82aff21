import CLibevent
import Foundation
import HTTP1

/// Whoever is using an upstream connection right now gets its events.
protocol UpstreamOwner: AnyObject {
    func upstreamReadable(_ connection: UpstreamConnection)
    func upstreamWritable(_ connection: UpstreamConnection)
    func upstreamEvent(_ connection: UpstreamConnection, events: Int16)
}

/// One TCP connection to an origin: resolved with evdns, connected trying every
/// address in turn within `connectTimeout`, then lent to one exchange at a time
/// and kept in the loop's `UpstreamPool` between them.
final class UpstreamConnection {
    let loop: EventLoop
    let authority: HTTPAuthority
    private(set) var bev: OpaquePointer?
    private(set) var address: SocketAddress? { didSet { addressText = address?.description } }
    /// Formatted once per connection: records name it on every exchange.
    private(set) var addressText: String?
    /// Strong while lent out (cleared when the exchange ends or the connection closes);
    /// a weak reference gave every exchange a side table and slow-path refcounts.
    var owner: UpstreamOwner?
    private var pending: [SocketAddress] = []
    private var connectCompletion: ((Result<Void, TransportError>) -> Void)?
    private var deadline: LoopTimer?
    private var lastConnectError = ""
    private(set) var isClosed = false
    var idleTimer: LoopTimer?
    /// While pooled: when it has been idle for `upstream.idleTimeout` (monotonic seconds).
    var idleDeadline: Double?
    /// HTTPS to the origin (intercepted CONNECT): TLS runs over the TCP connection.
    private let usesTLS: Bool
    private var handshaking = false
    private var phase: ((ConnectPhase) -> Void)?

    enum ConnectPhase {
        /// Addresses known; `lookedUp` is false for a numeric host (no DNS query was made).
        case resolved(lookedUp: Bool)
        case tcpConnected
    }

    init(loop: EventLoop, authority: HTTPAuthority) {
        self.loop = loop
        self.authority = authority
        self.usesTLS = authority.scheme == "https"
        loop.engine?.metrics.activeUpstreams.add()
    }

    deinit { close() }

    // MARK: connecting

    /// Resolves and connects. `completion` runs once on the loop thread, never
    /// synchronously from inside this call. `isOwnListener` guards against loops.
    func connect(timeout: Double, isOwnListener: @escaping (SocketAddress) -> Bool,
                 phase: @escaping (ConnectPhase) -> Void,
                 completion: @escaping (Result<Void, TransportError>) -> Void) {
        connectCompletion = completion
        self.phase = phase
        let timer = LoopTimer(loop: loop) { [weak self] in
            self?.finishConnect(.failure(TransportError(.upstreamTimeout,
                "connecting to \(self?.authority.description ?? "?") timed out")))
        }
        timer.schedule(after: timeout)
        deadline = timer
        Resolver.resolve(host: authority.host, port: authority.port, on: loop) { [weak self] result, lookedUp in
            guard let self, self.connectCompletion != nil else { return }
            self.phase?(.resolved(lookedUp: lookedUp))
            switch result {
            case .failure(let e): self.finishConnect(.failure(e))
            case .success(let addresses):
                if let own = addresses.first(where: isOwnListener) {
                    self.finishConnect(.failure(TransportError(.loopDetected,
                        "\(self.authority) is this proxy's own listener (\(own))")))
                    return
                }
                self.pending = addresses
                self.tryNextAddress()
            }
        }
    }

    private func tryNextAddress() {
        guard connectCompletion != nil else { return }
        if let bev { bufferevent_free(bev); self.bev = nil }
        guard !pending.isEmpty else {
            finishConnect(.failure(TransportError(.upstreamConnectFailed,
                "cannot connect to \(authority): \(lastConnectError)")))
            return
        }
        let addr = pending.removeFirst()
        guard let b = bufferevent_socket_new(loop.base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            lastConnectError = "out of memory"; tryNextAddress(); return
        }
        bev = b
        address = addr
        installCallbacks()
        let rc = addr.withSockaddr { bufferevent_socket_connect(b, $0, $1) }
        if rc != 0 {
            lastConnectError = String(cString: strerror(errno))
            // The event callback may not fire for an immediate failure.
            loop.execute { [weak self] in self?.tryNextAddress() }
        }
    }

    private func finishConnect(_ result: Result<Void, TransportError>) {
        guard let completion = connectCompletion else { return }
        connectCompletion = nil
        phase = nil
        deadline?.cancel()
        deadline = nil
        if case .failure = result { close() } else if let bev {
            let fd = bufferevent_getfd(bev)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            _ = bufferevent_set_max_single_read(bev, EngineConfiguration.maxSingleRead)
            // Only once connected: on a connecting socket, our read event would report a
            // refused connection too, besides the bufferevent's connect callback.
            reader = SocketReader(loop: loop, bev: bev, enabled: true)
        }
        completion(result)
    }

    private func installCallbacks() {
        guard let bev else { return }
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bev, { _, ctx in
            guard let ctx else { return }
            let c = Unmanaged<UpstreamConnection>.fromOpaque(ctx).takeUnretainedValue()
            // Bytes that come with the end of a TLS handshake wait for the exchange
            // (it reads what is buffered when it attaches).
            if c.isConnecting { return }
            if let o = c.owner { o.upstreamReadable(c) } else { c.idleEvent() }
        }, { _, ctx in
            guard let ctx else { return }
            let c = Unmanaged<UpstreamConnection>.fromOpaque(ctx).takeUnretainedValue()
            c.owner?.upstreamWritable(c)
        }, { _, events, ctx in
            guard let ctx else { return }
            let c = Unmanaged<UpstreamConnection>.fromOpaque(ctx).takeUnretainedValue()
            c.handleEvent(events)
        }, ctx)
        bufferevent_enable(bev, Int16(EV_READ | EV_WRITE))
    }

    private func handleEvent(_ events: Int16) {
        if connectCompletion != nil {
            if Int32(events) & BEV_EVENT_CONNECTED != 0 {
                if usesTLS && !handshaking {
                    phase?(.tcpConnected)
                    startTLS()
                } else {
                    finishConnect(.success(()))
                }
            } else if handshaking {
                // A certificate or protocol failure: another address would not fix it.
                let ssl = bev.flatMap { bufferevent_openssl_get_ssl($0) }
                let code = bev.map { bufferevent_get_openssl_error($0) } ?? 0
                let why = loop.engine?.tlsInterceptor?.failureDescription(ssl: ssl, error: UInt(code)) ?? "handshake failed"
                finishConnect(.failure(TransportError(.tlsFailed, "TLS with \(authority) failed: \(why)")))
            } else {
                // libevent leaves the socket's SO_ERROR in errno for this callback.
                let err = errno
                lastConnectError = err != 0 ? String(cString: strerror(err)) : "connection failed"
                tryNextAddress()
            }
            return
        }
        if let o = owner { o.upstreamEvent(self, events: events) } else { idleEvent() }
    }

    /// Wraps the connected socket in an OpenSSL filter; `BEV_EVENT_CONNECTED` on the
    /// filter means the handshake (and the origin's certificate check) succeeded.
    private func startTLS() {
        guard let tcp = bev, let interceptor = loop.engine?.tlsInterceptor else {
            finishConnect(.failure(TransportError(.tlsFailed, "HTTPS to \(authority) without TLS support")))
            return
        }
        let ssl: OpaquePointer
        do { ssl = try interceptor.clientSSL(forHost: authority.host) } catch {
            finishConnect(.failure(TransportError(.tlsFailed, "TLS setup for \(authority) failed: \(error)")))
            return
        }
        guard let filter = bufferevent_openssl_filter_new(loop.base, tcp, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                          Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            finishConnect(.failure(TransportError(.tlsFailed, "cannot start TLS with \(authority)")))
            return
        }
        bufferevent_openssl_set_allow_dirty_shutdown(filter, 1)
        bufferevent_setwatermark(tcp, Int16(EV_WRITE), 0, loop.engine?.configuration.highWaterBytes ?? 256 * 1024)
        handshaking = true
        bev = filter
        installCallbacks()
    }

    /// Bytes or EOF on a pooled connection: the origin closed it (or misbehaved). Drop it.
    private func idleEvent() {
        loop.pool.remove(self)
        close()
    }

    // MARK: use

    var input: OpaquePointer? { bev.flatMap { bufferevent_get_input($0) } }
    /// Where request bytes go until the next `flush()` (see `SocketOutput`).
    var output: OpaquePointer? { bev.map { staged.buffer(for: $0) } }
    /// Bytes waiting in this bufferevent (the TLS filter's own buffer when there is one).
    var queuedOutputLength: Int {
        guard let bev else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(bev)) + staged.pending
    }

    var isConnecting: Bool { connectCompletion != nil }

    /// Bytes not yet handed to the socket.
    var outputLength: Int {
        guard let bev else { return 0 }
        var n = evbuffer_get_length(bufferevent_get_output(bev)) + staged.pending
        if let below = bufferevent_get_underlying(bev) { n += evbuffer_get_length(bufferevent_get_output(below)) }
        return n
    }
    private let staged = SocketOutput()

    func flush() {
        guard let bev else { return }
        staged.flush(to: bev)
    }

    /// Stages a head written in place (a `WireFormSink`).
    func stage(capacity: Int, _ bev: OpaquePointer, _ fill: (UnsafeMutablePointer<UInt8>) -> Int) {
        staged.write(capacity: capacity, for: bev, fill)
    }

    /// Reads the socket once connected (see `SocketReader`).
    private var reader: SocketReader?

    func setReadTimeout(_ seconds: Double?) { reader?.setTimeout(seconds) }

    /// Reading from the origin on or off (backpressure; on while pooled, to notice a close).
    func setReading(_ on: Bool) { reader?.setEnabled(on) }

    /// Hands the socket to a tunnel; this object no longer owns it.
    func detachBufferevent() -> HandedOverSocket? {
        let b = bev
        let pending = reader?.detach() ?? 0
        reader = nil
        bev = nil
        if !isClosed { isClosed = true; loop.engine?.metrics.activeUpstreams.sub() }
        return b.map { HandedOverSocket(bev: $0, pendingErrno: pending) }
    }

    func close() {
        connectCompletion = nil
        deadline?.cancel()
        idleTimer?.cancel()
        idleTimer = nil
        owner = nil
        reader?.detach()
        reader = nil
        if let bev { bufferevent_free(bev); self.bev = nil }
        if !isClosed { isClosed = true; loop.engine?.metrics.activeUpstreams.sub() }
    }
}

/// Idle upstream connections of one loop, keyed by `host:port`, each closed
/// after `upstream.idleTimeout` unused.
final class UpstreamPool {
    /// Loops live as long as the process, so the cycle through `EventLoop.pool` is harmless.
    let loop: EventLoop
    private var idle = IdleTable<UpstreamConnection>()
    /// Bound per origin so one busy origin cannot hold every descriptor (`upstream.maxIdlePerOrigin`).
    var maxIdlePerOrigin: Int

    init(loop: EventLoop) {
        self.loop = loop
        maxIdlePerOrigin = loop.engine?.configuration.maxIdlePerOrigin ?? EngineConfiguration().maxIdlePerOrigin
    }

    /// A pooled connection for `authority`, newest first.
    func take(_ authority: HTTPAuthority) -> UpstreamConnection? {
        while let c = idle.popLast(authority) {
            loop.engine?.metrics.pooledUpstreams.sub()
            // The idle timer keeps running; lent out, the connection has no deadline.
            c.idleDeadline = nil
            if c.bev != nil && !c.isClosed { return c }
        }
        return nil
    }

    func put(_ c: UpstreamConnection, idleTimeout: Double) {
        guard c.bev != nil, idle.count(c.authority) < maxIdlePerOrigin,
              evbuffer_get_length(c.input) == 0 else { c.close(); return }
        c.owner = nil
        c.setReadTimeout(nil)
        c.setReading(true)
        // One timer per connection (a new timer each time cost an event_new/event_free and
        // two closure allocations per exchange), armed when it is not already running: the
        // connection is usually back within the exchange, and cancelling the timer on every
        // take and re-arming it on every put was two heap updates per exchange on the loop.
        // When it fires it checks the deadline and waits out what is left of it.
        // The connection owns its timer, so the timer never outlives it (unowned, no side table).
        c.idleDeadline = EventLoop.monotonicNow() + idleTimeout
        let timer = c.idleTimer ?? LoopTimer(loop: loop) { [unowned self, unowned c] in
            self.idleTimerFired(c)
        }
        if !timer.isScheduled { timer.schedule(after: idleTimeout) }
        c.idleTimer = timer
        idle.append(c, c.authority)
        loop.engine?.metrics.pooledUpstreams.add()
    }

    /// Closes a pooled connection idle for `upstream.idleTimeout`; one lent out since has
    /// no deadline (its next return arms the timer again), one returned since waits on.
    private func idleTimerFired(_ c: UpstreamConnection) {
        guard let deadline = c.idleDeadline else { return }
        let remaining = deadline - EventLoop.monotonicNow()
        if remaining > 0 {
            c.idleTimer?.schedule(after: remaining)
            return
        }
        let connection = c  // strong: the pool's list held the last reference
        remove(connection)
        connection.close()
    }

    func remove(_ c: UpstreamConnection) {
        if idle.remove(c, c.authority) { loop.engine?.metrics.pooledUpstreams.sub() }
    }

    func closeAll() {
        for c in idle.removeAll() { c.close(); loop.engine?.metrics.pooledUpstreams.sub() }
    }
}

/// The pool's bookkeeping, without sockets: idle connections by origin, newest last.
///
/// An origin keeps its slot when its list empties, since the connection is usually back
/// within the exchange: removing and re-inserting a dictionary entry cost ~1.7k
/// instructions each time. The slot last used is tried before hashing, because a
/// forward proxy's traffic goes to few origins at a time, and hashing the authority
/// (scheme, host, port through SipHash) for each take and put cost ~1.1k instructions
/// per exchange on the loop (callgrind). Slots with nothing idle are swept when the
/// table has doubled since the last sweep (at least `sweepThreshold`).
struct IdleTable<Connection: AnyObject> {
    private struct Origin {
        let authority: HTTPAuthority
        var idle: [Connection]
    }
    private var origins: [Origin] = []
    private var slots: [HTTPAuthority: Int] = [:]
    private var recent: Int?
    private let sweepThreshold: Int
    private var sweepAt: Int

    init(sweepThreshold: Int = 64) {
        self.sweepThreshold = max(1, sweepThreshold)
        sweepAt = self.sweepThreshold
    }

    /// Origins with a slot, empty ones included.
    var originCount: Int { origins.count }
    /// Sweeps so far (tests: they must thin out as the table grows).
    private(set) var sweeps = 0

    private mutating func slot(_ authority: HTTPAuthority) -> Int? {
        if let recent, origins[recent].authority == authority { return recent }
        let found = slots[authority]
        if found != nil { recent = found }
        return found
    }

    mutating func count(_ authority: HTTPAuthority) -> Int { slot(authority).map { origins[$0].idle.count } ?? 0 }

    mutating func popLast(_ authority: HTTPAuthority) -> Connection? {
        guard let i = slot(authority) else { return nil }
        return origins[i].idle.popLast()
    }

    mutating func append(_ c: Connection, _ authority: HTTPAuthority) {
        if let i = slot(authority) {
            origins[i].idle.append(c)
            return
        }
        if origins.count >= sweepAt { sweep() }
        slots[authority] = origins.count
        recent = origins.count
        origins.append(Origin(authority: authority, idle: [c]))
    }

    /// Whether `c` was idle here (and is no longer).
    mutating func remove(_ c: Connection, _ authority: HTTPAuthority) -> Bool {
        guard let i = slot(authority), let at = origins[i].idle.firstIndex(where: { $0 === c }) else { return false }
        origins[i].idle.remove(at: at)
        return true
    }

    /// Empties the table; the connections that were idle.
    mutating func removeAll() -> [Connection] {
        let all = origins.flatMap(\.idle)
        origins.removeAll()
        slots.removeAll()
        recent = nil
        sweepAt = sweepThreshold
        return all
    }

    /// Drops the origins with nothing idle and renumbers the rest.
    private mutating func sweep() {
        origins.removeAll { $0.idle.isEmpty }
        slots.removeAll(keepingCapacity: true)
        for (i, origin) in origins.enumerated() { slots[origin.authority] = i }
        recent = nil
        sweepAt = max(sweepThreshold, 2 * origins.count)
        sweeps += 1
    }
}
