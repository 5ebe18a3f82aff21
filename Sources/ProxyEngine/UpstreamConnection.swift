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
/// and kept in the loop's `UpstreamPool` between them. Drives an
/// `UpstreamConnectionStateMachine`, which states the rules.
final class UpstreamConnection {
    let loop: EventLoop
    let authority: HTTPAuthority
    private(set) var bev: OpaquePointer?
    /// The address connected to: the parent's, through one.
    private(set) var address: SocketAddress? { didSet { if parent == nil { addressText = address?.description } } }
    /// Formatted once per connection: records name it on every exchange (`metrics.upstream`):
    /// the origin's address, or, through a parent that resolves names itself, the origin
    /// as named.
    private(set) var addressText: String?
    /// The parent proxy this connection goes through; nil for direct.
    let parent: ParentProxy?
    /// `parent.via`, made once: every exchange's record names it (`metrics.via`).
    let via: String?
    /// The pool's routing generation this connection was made under.
    let routingGeneration: Int
    /// The parent's own answer when it refused to open a tunnel (its error page).
    private(set) var parentAnswer: [UInt8]?
    private var parentHandshake: ParentHandshake?
    /// Strong while lent out (cleared when the exchange ends or the connection closes);
    /// a weak reference would give every exchange a side table and slow-path refcounts.
    var owner: UpstreamOwner?
    /// Unchecked: the machine's methods never call out, so no two accesses can overlap.
    @exclusivity(unchecked) private var machine: UpstreamConnectionStateMachine
    private var connectCompletion: ((Result<Void, TransportError>) -> Void)?
    private var isOwnListener: ((SocketAddress) -> Bool)?
    private var deadline: LoopTimer?
    private var connectTimeout = 0.0
    /// The pool's idle timer, made once per connection (see `UpstreamPool.put`).
    private var idleTimer: LoopTimer?
    private var phase: ((UpstreamConnectionStateMachine.ConnectPhase) -> Void)?
    /// ALPN offers `h2` as well as `http/1.1` (HTTPS origins of ordinary exchanges).
    private let offersHTTP2: Bool
    /// Set when the origin chose `h2`: `bev` is then the exchange's end of the stream's pair
    /// (see `HTTP2OriginStream`), and this object is never pooled (its HTTP/2 connection is).
    private var http2: HTTP2OriginStream?
    /// An HTTP/2 origin's response header fields as sent (see `HTTP2OriginStream.originHead`).
    var originResponseHeaders: HTTPHeaders? { http2?.originHead }
    /// Why an HTTP/2 origin's stream ended early (its RST_STREAM code), nil otherwise.
    var closeCause: String? { http2?.resetCause }
    var speaksHTTP2: Bool { http2 != nil }

    typealias ConnectPhase = UpstreamConnectionStateMachine.ConnectPhase

    init(loop: EventLoop, authority: HTTPAuthority, offersHTTP2: Bool = false) {
        self.loop = loop
        self.authority = authority
        self.offersHTTP2 = offersHTTP2
        parent = loop.pool.routing.parent(forHost: authority.host)
        via = parent?.via
        routingGeneration = loop.pool.routingGeneration
        if parent != nil { addressText = authority.description }
        machine = UpstreamConnectionStateMachine(authority: authority, parent: parent)
        loop.engine?.metrics.activeUpstreams.add()
    }

    /// A new stream on a connected HTTP/2 origin, lent at once as a pooled connection would
    /// be; nil if the stream cannot be made.
    convenience init?(loop: EventLoop, joining shared: HTTP2OriginConnection) {
        guard let (stream, end) = shared.openStream() else { return nil }
        self.init(loop: loop, authority: shared.authority, offersHTTP2: true)
        machine.joinedSharedConnection()
        adopt(stream, end: end, addressText: shared.addressText)
    }

    private func adopt(_ stream: HTTP2OriginStream, end: OpaquePointer, addressText text: String?) {
        http2 = stream
        bev = end
        addressText = text
        installCallbacks()
        reader = SocketReader(loop: loop, bev: end, enabled: true)
    }

    /// Whether requests go to the parent in absolute-form with its credentials (plain HTTP
    /// through an HTTP(S) parent) rather than in origin-form through a tunnel.
    var forwardsAbsoluteForm: Bool { parent.map { $0.forwardsAbsoluteForm(to: authority) } ?? false }

    deinit { close() }

    var isClosed: Bool { machine.isClosed }
    var isConnecting: Bool { machine.isConnecting }

    // MARK: connecting

    /// Resolves and connects. `completion` runs once on the loop thread, never
    /// synchronously from inside this call. `isOwnListener` guards against loops.
    func connect(timeout: Double, isOwnListener: @escaping (SocketAddress) -> Bool,
                 phase: @escaping (ConnectPhase) -> Void,
                 completion: @escaping (Result<Void, TransportError>) -> Void) {
        if offersHTTP2, authority.scheme == "https", !countsAsHandshake {
            countsAsHandshake = true
            loop.pool.handshakeBegan(authority)
        }
        connectCompletion = completion
        self.phase = phase
        self.isOwnListener = isOwnListener
        connectTimeout = timeout
        perform(machine.connect())
    }

    private func perform(_ actions: ActionList<UpstreamConnectionStateMachine.Action>) {
        for action in actions {
            switch action {
            case .armConnectDeadline:
                // Unowned (no side table, see ClientSession's head timer): this connection's own timer.
                let timer = LoopTimer(loop: loop) { [unowned self] in
                    self.perform(self.machine.connectDeadlinePassed())
                }
                timer.schedule(after: connectTimeout)
                deadline = timer
            case .resolve:
                let dialed = machine.dialed
                // Strong: kept until the lookup answers (bounded by its own timeout).
                Resolver.resolve(host: dialed.host, port: dialed.port, on: loop) { [self] result, lookedUp in
                    guard !machine.isClosed else { return }
                    let own = (try? result.get())?.first(where: { self.isOwnListener?($0) ?? false })
                    self.perform(self.machine.resolved(result, lookedUp: lookedUp, ownListener: own))
                }
            case .reportPhase(let p):
                phase?(p)
            case .tryAddress:
                if let addr = machine.addressToTry { tryAddress(addr) }
            case .startTLS, .startParentTLS:
                startTLS()
            case .negotiate:
                negotiate()
            case .finishConnect:
                finishConnect(machine.connectError)
            case .armIdleTimer(let seconds):
                let timer = idleTimer ?? LoopTimer(loop: loop) { [unowned self] in
                    self.perform(self.machine.idleTimerFired(now: EventLoop.monotonicNow()))
                }
                timer.schedule(after: seconds)
                idleTimer = timer
            case .closeIdle:
                let strong = self  // the pool's list may hold the last reference
                loop.pool.remove(strong)
                strong.release()
            }
        }
    }

    private func tryAddress(_ addr: SocketAddress) {
        if let bev { bufferevent_free(bev); self.bev = nil }
        guard let b = bufferevent_socket_new(loop.base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            perform(machine.attemptFailed("out of memory"))
            return
        }
        bev = b
        address = addr
        installCallbacks()
        let rc = addr.withSockaddr { bufferevent_socket_connect(b, $0, $1) }
        if rc != 0 {
            let why = String(cString: strerror(errno))
            // The event callback may not fire for an immediate failure.
            loop.execute { [self] in
                guard !machine.isClosed else { return }
                perform(machine.attemptFailed(why))
            }
        }
    }

    /// Counted in the pool's handshakes to an origin that may speak HTTP/2, until connected or gone.
    private var countsAsHandshake = false

    private func endHandshakeCount(http2: Bool? = nil) {
        guard countsAsHandshake else { return }
        countsAsHandshake = false
        loop.pool.handshakeEnded(authority, http2: http2)
    }

    private func finishConnect(_ error: TransportError?) {
        // Once what this connection turned out to be is in the pool (an HTTP/2 one offered below).
        defer { endHandshakeCount(http2: error == nil && !isClosed ? speaksHTTP2 : nil) }
        guard let completion = connectCompletion else { return }
        connectCompletion = nil
        phase = nil
        isOwnListener = nil
        deadline?.cancel()
        deadline = nil
        if let error {
            release()
            completion(.failure(error))
            return
        }
        if offersHTTP2, let tls = bev, let ssl = bufferevent_openssl_get_ssl(tls),
           loop.engine?.tlsInterceptor?.negotiatedProtocol(ssl: ssl) == "h2" {
            // The TLS bufferevent is the origin connection's from here on; the exchange gets
            // its stream's end of a pair, and later exchanges find the connection in the pool.
            bev = nil
            let origin = HTTP2OriginConnection(loop: loop, authority: authority, tls: tls,
                                               config: loop.engine?.configuration ?? EngineConfiguration(), addressText: addressText,
                                               routingGeneration: routingGeneration)
            guard let origin, let (stream, end) = origin.openStream() else {
                release()
                completion(.failure(TransportError(.upstreamConnectFailed, "cannot start HTTP/2 with \(authority)")))
                return
            }
            adopt(stream, end: end, addressText: addressText)
            if origin.hasRoom { loop.pool.offerHTTP2(origin) }
            completion(.success(()))
            return
        }
        if let bev {
            let fd = bufferevent_getfd(bev)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            _ = bufferevent_set_max_single_read(bev, EngineConfiguration.maxSingleRead)
            // Only once connected: on a connecting socket, our read event would report a
            // refused connection too, besides the bufferevent's connect callback.
            reader = SocketReader(loop: loop, bev: bev, enabled: true)
        }
        completion(.success(()))
    }

    private func installCallbacks() {
        guard let bev else { return }
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bev, { _, ctx in
            guard let ctx else { return }
            let c = Unmanaged<UpstreamConnection>.fromOpaque(ctx).takeUnretainedValue()
            // Bytes that come with the end of a TLS handshake wait for the exchange
            // (it reads what is buffered when it attaches); a parent's handshake reads its own.
            if c.isConnecting { c.negotiationReadable(closed: false); return }
            if let o = c.owner { o.upstreamReadable(c) } else { c.perform(c.machine.eventWhileIdle()) }
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
        switch machine.state {
        case .connecting:
            if Int32(events) & BEV_EVENT_CONNECTED != 0 {
                perform(machine.tcpConnected())
            } else {
                // libevent leaves the socket's SO_ERROR in errno for this callback.
                let err = errno
                perform(machine.attemptFailed(err != 0 ? String(cString: strerror(err)) : "connection failed"))
            }
        case .handshaking, .parentHandshaking:
            if Int32(events) & BEV_EVENT_CONNECTED != 0 {
                perform(machine.tlsConnected())
            } else {
                // A certificate or protocol failure: another address would not fix it.
                let peer = tlsPeer
                let ssl = bev.flatMap { bufferevent_openssl_get_ssl($0) }
                let code = bev.map { bufferevent_get_openssl_error($0) } ?? 0
                let why = peer.tls?.failureDescription(ssl: ssl, error: UInt(code)) ?? "handshake failed"
                perform(machine.tlsFailed("TLS with \(peer.name) failed: \(why)"))
            }
        case .negotiating:
            if Int32(events) & BEV_EVENT_EOF != 0 {
                negotiationReadable(closed: true)
            } else {
                let err = errno
                perform(machine.parentHandshakeFailed(TransportError(.upstreamProxyFailed,
                    "the parent proxy \(parent?.via ?? "") failed during the handshake: \(err != 0 ? String(cString: strerror(err)) : "connection error")")))
            }
        case .created, .resolving, .connectFailed, .closed:
            return
        case .lent, .pooled:
            if let o = owner { o.upstreamEvent(self, events: events) } else { perform(machine.eventWhileIdle()) }
        }
    }

    /// Who TLS is being spoken with now: an `https` parent, else the origin.
    private var tlsPeer: (tls: ClientTLS?, host: String, name: String) {
        if machine.state == .parentHandshaking, let parent {
            return (loop.pool.routing.parentTLS, parent.host, "the parent proxy \(parent.via)")
        }
        return (loop.engine?.tlsInterceptor, authority.host, authority.description)
    }

    /// Wraps the connected socket (or the TLS with the parent) in an OpenSSL filter for
    /// `tlsPeer`; `BEV_EVENT_CONNECTED` on the filter means the handshake (and the peer's
    /// certificate check) succeeded.
    private func startTLS() {
        let peer = tlsPeer
        guard let below = bev, let tls = peer.tls else {
            perform(machine.tlsFailed("TLS with \(peer.name) is not available"))
            return
        }
        let ssl: OpaquePointer
        do {
            // h2 is offered to the origin only, never to a parent proxy.
            if offersHTTP2, machine.state != .parentHandshaking, let interceptor = loop.engine?.tlsInterceptor {
                ssl = try interceptor.clientSSLOfferingHTTP2(forHost: peer.host)
            } else {
                ssl = try tls.clientSSL(forHost: peer.host)
            }
        } catch {
            perform(machine.tlsFailed("TLS setup for \(peer.name) failed: \(error)"))
            return
        }
        guard let filter = bufferevent_openssl_filter_new(loop.base, below, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                          Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            perform(machine.tlsFailed("cannot start TLS with \(peer.name)"))
            return
        }
        bufferevent_openssl_set_allow_dirty_shutdown(filter, 1)
        bufferevent_setwatermark(below, Int16(EV_WRITE), 0, loop.engine?.configuration.highWaterBytes ?? 256 * 1024)
        bev = filter
        installCallbacks()
    }

    /// Sends the parent's handshake its opening bytes; `negotiationReadable` does the rest.
    private func negotiate() {
        guard let parent, let bev else { return }
        let handshake = ParentHandshake(target: authority, parent: parent,
                                        maxAnswerBytes: loop.engine?.configuration.maxHeaderBytes ?? 65536)
        parentHandshake = handshake
        _ = handshake.opening.withUnsafeBytes { bufferevent_write(bev, $0.baseAddress, $0.count) }
    }

    /// Feeds what the parent sent to its handshake and performs the steps.
    private func negotiationReadable(closed: Bool) {
        guard case .negotiating = machine.state, var handshake = parentHandshake, let bev else { return }
        let input = bufferevent_get_input(bev)
        while true {
            let length = evbuffer_get_length(input)
            if length == 0 && !closed { return }
            let base = length > 0 ? evbuffer_pullup(input, -1) : nil
            let bytes = UnsafeRawBufferPointer(start: base, count: base == nil ? 0 : length)
            let step = closed ? handshake.closed(bytes) : handshake.received(bytes)
            parentHandshake = handshake
            switch step {
            case .needMore:
                return
            case .send(let consumed, let reply):
                evbuffer_drain(input, consumed)
                _ = reply.withUnsafeBytes { bufferevent_write(bev, $0.baseAddress, $0.count) }
                if evbuffer_get_length(input) == 0 { return }
            case .established(let consumed):
                evbuffer_drain(input, consumed)
                parentHandshake = nil
                perform(machine.parentTunnelOpened())
                return
            case .failed(let error, let answer):
                parentHandshake = nil
                parentAnswer = answer
                perform(machine.parentHandshakeFailed(error))
                return
            }
        }
    }

    // MARK: the pool

    /// Put in the pool for `idleTimeout`: arms the idle timer unless it is running.
    func pooled(idleTimeout: Double) {
        perform(machine.pooled(now: EventLoop.monotonicNow(), idleTimeout: idleTimeout))
    }

    /// Taken from the pool by an exchange.
    func taken() { machine.taken() }

    // MARK: use

    var input: OpaquePointer? { bev.flatMap { bufferevent_get_input($0) } }
    /// Where request bytes go until the next `flush()` (see `SocketOutput`).
    var output: OpaquePointer? { bev.map { staged.buffer(for: $0) } }
    /// Bytes waiting in this bufferevent (the TLS filter's own buffer when there is one).
    var queuedOutputLength: Int {
        guard let bev else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(bev)) + staged.pending
    }

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
        if machine.close() { loop.engine?.metrics.activeUpstreams.sub() }
        return b.map { HandedOverSocket(bev: $0, pendingErrno: pending, via: via) }
    }

    func close() {
        let wasOpen = machine.close()
        freeResources()
        if wasOpen { loop.engine?.metrics.activeUpstreams.sub() }
    }

    /// The machine moved to `closed`: free everything and stop counting the connection.
    private func release() {
        freeResources()
        loop.engine?.metrics.activeUpstreams.sub()
    }

    private func freeResources() {
        endHandshakeCount()
        connectCompletion = nil
        deadline?.cancel()
        idleTimer?.cancel()
        idleTimer = nil
        owner = nil
        reader?.detach()
        reader = nil
        if let bev { bufferevent_free(bev); self.bev = nil }
        http2?.close()
        http2 = nil
    }
}
