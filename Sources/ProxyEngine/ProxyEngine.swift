import CLibevent
import Foundation
import HTTP1
import Synchronization

/// Starts and stops everything in a fixed order: loops, then listeners; on
/// shutdown, listeners first, then a drain of in-flight exchanges, then loops.
public final class ProxyEngine: @unchecked Sendable {
    public let configuration: EngineConfiguration
    public let metrics = EngineMetrics()
    public let sink: ExchangeSink?
    /// HTTPS interception after CONNECT; nil keeps every tunnel blind.
    public let tlsInterceptor: TLSInterceptor?
    /// Offline replay per `listen` entry, by index (nil or missing: from the network). Set
    /// before `start`.
    public var replayResponders: [ReplayResponder?] = []
    /// Extra `/metrics` text (log writer, serialization queue), appended as is.
    public var additionalMetrics: (@Sendable () -> String)?
    /// Takes origin-form requests other than `/healthz` and `/metrics` (the web viewer);
    /// nil answers them 400. Set before `start()`; called on an event loop, so it must only
    /// hand the connection to another thread.
    public var viewer: (@Sendable (ViewerHandoff) -> Void)?
    private var loops: [EventLoop] = []
    private var listeners: [Listener] = []
    /// The addresses actually bound (port 0 resolved), in `listen` order.
    public private(set) var boundAddresses: [SocketAddress] = []
    /// Whether `lowerLoopPriority` ran (once per process: nice cannot be lowered back).
    private let loopsLowered = Atomic<Bool>(false)
    private let openConnections = Atomic<Int>(0)
    private let draining = Atomic<Bool>(false)
    private let stopped = DispatchSemaphore(value: 0)
    private var signalEvents: [OpaquePointer] = []
    private var signalHandlers: [Int32: () -> Void] = [:]
    private var periodicTimers: [LoopTimer] = []
    private let heartbeatsStarted = Atomic<Bool>(false)

    /// Hosts whose CONNECT stays a blind tunnel whatever it carries (`tls.ignore`,
    /// `capture.blindTunnels`); nil: none.
    public let blindTunnels: BlindTunnelPolicy?
    /// How new upstream connections reach origins at start (`upstream.proxy`); each loop
    /// keeps its own copy, replaced by `apply(routing:)`.
    let routing: UpstreamRouting

    public init(configuration: EngineConfiguration, sink: ExchangeSink?, tlsInterceptor: TLSInterceptor? = nil,
                blindTunnels: BlindTunnelPolicy? = nil, routing: UpstreamRouting = .direct) {
        self.configuration = configuration
        self.sink = sink
        self.tlsInterceptor = tlsInterceptor
        self.blindTunnels = blindTunnels
        self.routing = routing
    }

    /// How a CONNECT to `host` is handled before any byte (`ConnectPayloadStateMachine`):
    /// every inbound path that opens tunnels asks this.
    public func connectRoute(host: String) -> ConnectPayloadStateMachine.Route {
        ConnectPayloadStateMachine.route(interceptsTLS: tlsInterceptor?.intercepts(host: host) ?? false,
                                         keepsBlind: blindTunnels?.keepsBlind(host: host) ?? false)
    }

    /// A changed parent (SIGHUP): each loop's new connections follow it from its next
    /// turn on, and its idle connections made the old way are closed. Safe from any thread.
    public func apply(routing: UpstreamRouting) {
        // The first https parent without interception: no loop has made a TLS filter yet
        // (there was nothing to make one with), so the table is built here before any can.
        if let tls = routing.parentTLS { buildOpenSSLFilterMethods(tls: tls) }
        for loop in loops { loop.execute { loop.pool.apply(routing) } }
    }

    var isDraining: Bool { draining.load(ordering: .relaxed) }
    var primaryListenText: String { boundAddresses.first?.description ?? configuration.listen.first ?? "127.0.0.1:8080" }

    func connectionOpened() { openConnections.add(1, ordering: .relaxed) }
    func connectionClosed() { openConnections.subtract(1, ordering: .relaxed) }
    /// Reserves a connection slot; false when `limits.maxConnections` is reached.
    func tryReserveConnection() -> Bool {
        let n = openConnections.add(1, ordering: .relaxed).newValue
        if n > configuration.maxConnections {
            openConnections.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func metricsText() -> String { metrics.prometheusText() + (additionalMetrics?() ?? "") }

    /// `http://<this proxy>/healthz` (or `/metrics`) sent through the proxy, as curl does with
    /// HTTP_PROXY set and NO_PROXY unset: answered like the origin-form request, not refused
    /// as a loop (508). Only an IP literal or `localhost` is checked: the loop is on the event
    /// loop and resolving a name is not.
    func isOwnAdminRequest(_ authority: HTTPAuthority, target: String) -> Bool {
        guard AdminEndpoint(target: target) != nil else { return false }
        let hosts = authority.host.lowercased() == "localhost" ? ["127.0.0.1", "::1"] : [authority.host]
        return hosts.contains { host in
            let text = host.contains(":") ? "[\(host)]:\(authority.port)" : "\(host):\(authority.port)"
            return SocketAddress(parsing: text).map(isOwnListener) ?? false
        }
    }

    /// Whether a resolved origin address is one of our own listeners (a request loop).
    func isOwnListener(_ address: SocketAddress) -> Bool {
        boundAddresses.contains { bound in
            guard bound.port == address.port else { return false }
            if bound == address { return true }
            return bound.isUnspecified && (address.isLoopback || address.isUnspecified)
        }
    }

    /// Binds every listener on every loop (SO_REUSEPORT) and starts the loops.
    /// Throws when an address cannot be bound; nothing is left running then.
    public func start() throws {
        signal(SIGPIPE, SIG_IGN)
        let count = configuration.loops > 0 ? configuration.loops : ProcessInfo.processInfo.activeProcessorCount
        do {
            // Inside the do: a loop that fails to be created after others were must not
            // leave those (their bases and eventfds) behind, nor in `loops` unstarted.
            for i in 0..<max(1, count) {
                let loop = try EventLoop(index: i)
                loop.engine = self
                loops.append(loop)
            }
            for (i, fd) in configuration.inheritedListeners.enumerated() {
                var bound: SocketAddress?
                for loop in loops {
                    // Sockets systemd passes are forward proxies: which `listen` entry one stands
                    // for is the socket unit's business, not the order of the fds.
                    let l = try Listener(loop: loop, engine: self, inheritedFD: fd,
                                         role: ListenerRole(mode: .forward, replay: role(ofListener: i).replay))
                    listeners.append(l)
                    bound = bound ?? l.boundAddress
                }
                guard let bound else { throw EngineError.badAddress("inherited socket #\(i)") }
                boundAddresses.append(bound)
            }
            for (i, text) in configuration.listen.enumerated() where configuration.inheritedListeners.isEmpty {
                guard var address = SocketAddress(parsing: text) else { throw EngineError.badAddress(text) }
                try Listener.checkNotInUse(address)
                for loop in loops {
                    let l = try Listener(loop: loop, engine: self, address: address, role: role(ofListener: i))
                    listeners.append(l)
                    // Port 0: every loop must share the port the first one got.
                    if address.port == 0, let actual = l.boundAddress { address = actual }
                }
                boundAddresses.append(address)
            }
        } catch {
            listeners.removeAll()
            // Loops that never ran would never answer shutdown()'s work: forget them.
            for loop in loops { loop.freeUnstarted() }
            loops.removeAll()
            throw error
        }
        // Registered once the loops exist: the sink calls it from a worker thread.
        // The loops, not the engine: a weak reference would give the engine a side table,
        // and every retain and release of it (several an exchange) Swift's slow path.
        sink?.onCaughtUp { [loops] in for loop in loops { loop.execute { loop.releaseHeldSessions() } } }
        if let tls = tlsInterceptor ?? routing.parentTLS { buildOpenSSLFilterMethods(tls: tls) }
        for loop in loops { loop.start() }
    }

    private func role(ofListener index: Int) -> ListenerRole {
        ListenerRole(mode: configuration.mode(ofListener: index),
                     replay: index < replayResponders.count ? replayResponders[index] : nil)
    }

    /// The running loops' kernel thread ids (tests).
    var loopThreadIDs: [Int32] { loops.map(\.runningThreadID) }

    /// Decoding fell behind: the loops run `loopNice` steps nicer from now on, so that a
    /// saturated CPU goes first to logging the exchanges already accepted. Only once, and
    /// for good (an unprivileged thread cannot lower its nice value back). Returns the loops
    /// lowered and the errno of the first that could not be (it keeps its priority), or nil
    /// when this already ran or `loopNice` is 0. Safe from any thread.
    public func lowerLoopPriority() -> (lowered: Int, error: Int32)? {
        guard configuration.loopNice > 0, !loopsLowered.exchange(true, ordering: .relaxed) else { return nil }
        var lowered = 0, firstError: Int32 = 0
        for loop in loops {
            let error = loop.lowerPriority(by: configuration.loopNice)
            if error == ESRCH { continue }  // the loop has ended (shutting down)
            if error == 0 { lowered += 1 } else if firstError == 0 { firstError = error }
        }
        return (lowered, firstError)
    }

    /// libevent_openssl builds its BIO method table on the first filter, without a lock
    /// (2.1.12): two loops starting their first TLS filters at once could race on it. One
    /// filter made and freed on a base of its own, before any loop can make one (at start,
    /// or at the reload that brings the first TLS), builds it. No I/O: the socket is -1.
    /// Once per process; not from a loop thread.
    private func buildOpenSSLFilterMethods(tls: ClientTLS) {
        guard !filterMethodsBuilt.exchange(true, ordering: .relaxed) else { return }
        guard let base = event_base_new() else { return }
        defer { event_base_free(base) }
        guard let ssl = try? tls.clientSSL(forHost: "localhost") else { return }
        guard let tcp = bufferevent_socket_new(base, -1, 0) else { tls.free(ssl: ssl); return }
        // With BEV_OPT_CLOSE_ON_FREE the filter owns `tcp` and `ssl`, even when it fails.
        if let filter = bufferevent_openssl_filter_new(base, tcp, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                       Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) {
            bufferevent_free(filter)
        }
    }
    private let filterMethodsBuilt = Atomic<Bool>(false)

    /// Returns once every loop has run what was handed to it before this call (`onSignal`,
    /// `every`): those run on the loop, later. Not from a loop thread.
    public func waitForLoops() {
        let group = DispatchGroup()
        for loop in loops {
            group.enter()
            loop.execute { group.leave() }
        }
        group.wait()
    }

    /// Runs `handler` on the first loop whenever `signal` arrives.
    public func onSignal(_ signo: Int32, _ handler: @escaping () -> Void) {
        guard let loop = loops.first else { return }
        signalHandlers[signo] = handler
        let box = Unmanaged.passRetained(SignalBox(handler)).toOpaque()
        loop.execute {
            if let ev = event_new(loop.base, signo, Int16(EV_SIGNAL | EV_PERSIST), { _, _, ctx in
                guard let ctx else { return }
                Unmanaged<SignalBox>.fromOpaque(ctx).takeUnretainedValue().handler()
            }, box) {
                event_add(ev, nil)
                self.signalEvents.append(ev)
            }
        }
    }

    /// Stops accepting, lets in-flight exchanges finish for up to
    /// `limits.drainTimeout`, then stops the loops. Safe from any thread.
    public func shutdown() {
        guard !draining.exchange(true, ordering: .relaxed) else { return }
        let listenersClosed = DispatchGroup()
        for loop in loops {
            listenersClosed.enter()
            loop.execute { [self] in
                for l in listeners where l.loop === loop { l.close() }
                listenersClosed.leave()
                for s in Array(loop.sessions.values) { s.drain() }
            }
        }
        let deadline = EventLoop.monotonicNow() + configuration.drainTimeout
        DispatchQueue.global().async { [self] in
            // A socket systemd passed is shared by every loop's listener: closed once, after
            // each loop removed it from its epoll set. Closed by the first loop's listener,
            // the others' removal failed (EBADF) and left a stale entry that, with systemd's
            // copy still listening, woke that loop on every epoll_wait through the drain.
            listenersClosed.wait()
            for fd in configuration.inheritedListeners { Foundation.close(fd) }
            while EventLoop.monotonicNow() < deadline {
                if busyCount() == 0 { break }
                usleep(20_000)
            }
            let group = DispatchGroup()
            for loop in loops {
                group.enter()
                loop.execute {
                    for s in Array(loop.sessions.values) { s.closeAtShutdown() }
                    for t in Array(loop.tunnels.values) { t.shutdown() }
                    loop.pool.closeAll()
                    group.leave()
                }
            }
            group.wait()
            for loop in loops { loop.stop() }
            for loop in loops { loop.waitUntilStopped() }
            stopped.signal()
        }
    }

    /// Sessions with an exchange in flight, across loops.
    private func busyCount() -> Int {
        var total = 0
        let group = DispatchGroup()
        // NSLock, not Mutex: the thread sanitizer can see it (see EventLoop.inbox).
        let lock = NSLock()
        for loop in loops {
            group.enter()
            loop.execute {
                let n = loop.sessions.values.filter { !$0.isIdle }.count
                lock.withLock { total += n }
                group.leave()
            }
        }
        group.wait()
        return lock.withLock { total }
    }

    /// Runs `body` on the first loop every `seconds` (watchdog pings, status lines).
    public func every(_ seconds: Double, _ body: @escaping () -> Void) {
        guard let loop = loops.first else { return }
        loop.execute {
            let t = LoopTimer(loop: loop, persistent: true, action: body)
            t.schedule(after: seconds)
            self.periodicTimers.append(t)
        }
    }

    /// True when every loop's heartbeat ran within `window` seconds. Starts the
    /// heartbeats (at a quarter of the window) on first use.
    public func loopsResponsive(within window: Double) -> Bool {
        if !heartbeatsStarted.exchange(true, ordering: .relaxed) {
            for loop in loops { loop.startHeartbeat(every: window / 4) }
            return true
        }
        let now = Int(EventLoop.monotonicNow() * 1000)
        return loops.allSatisfy { now - $0.lastBeatMillis.load(ordering: .relaxed) <= Int(window * 1000) }
    }

    /// Blocks until `shutdown()` has finished; returns at once when it already has.
    public func waitUntilStopped() {
        stopped.wait()
        // The semaphore is signalled once: hand the wake-up on, or a second waiter
        // (or a later call) would block forever.
        stopped.signal()
    }
}

private final class SignalBox {
    let handler: () -> Void
    init(_ h: @escaping () -> Void) { handler = h }
}
