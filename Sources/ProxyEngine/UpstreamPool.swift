import CLibevent
import HTTP1

/// Idle upstream connections of one loop, keyed by `host:port`, each closed
/// after `upstream.idleTimeout` unused.
///
/// Pooling is per parent and origin: every connection made under one `routing` reaches an
/// origin the same way, so the origin alone is the key. A new routing (SIGHUP) empties
/// the pool, and a connection lent out under an older one is closed when it comes back.
final class UpstreamPool {
    /// Loops live as long as the process, so the cycle through `EventLoop.pool` is harmless.
    let loop: EventLoop
    private var idle = IdleTable<UpstreamConnection>()
    /// Bound per origin so one busy origin cannot hold every descriptor (`upstream.maxIdlePerOrigin`).
    var maxIdlePerOrigin: Int

    /// How this loop's new connections reach origins (`upstream.proxy`, `upstream.noProxy`).
    private(set) var routing: UpstreamRouting
    /// Counts routing changes; a connection remembers the one it was made under.
    private(set) var routingGeneration = 0

    init(loop: EventLoop) {
        self.loop = loop
        maxIdlePerOrigin = loop.engine?.configuration.maxIdlePerOrigin ?? EngineConfiguration().maxIdlePerOrigin
        routing = loop.engine?.routing ?? .direct
    }

    /// New connections follow `routing` from now on; idle ones made before are closed, and
    /// HTTP/2 ones made before take no new streams (see `offerHTTP2`).
    func apply(_ routing: UpstreamRouting) {
        self.routing = routing
        routingGeneration += 1
        closeAll()
    }

    /// HTTP/2 origin connections that can take another stream, by origin.
    private var http2: [HTTPAuthority: [HTTP2OriginConnection]] = [:]

    /// A pooled connection for `authority`, newest first; else a new stream on an HTTP/2
    /// connection to it with room (looked up only when no HTTP/1.1 connection is idle, and
    /// not at all while no HTTP/2 origin is connected).
    func take(_ authority: HTTPAuthority) -> UpstreamConnection? {
        while let c = idle.popLast(authority) {
            loop.engine?.metrics.pooledUpstreams.sub()
            // The idle timer keeps running; lent out, the connection has no deadline.
            c.taken()
            if c.bev != nil && !c.isClosed { return c }
        }
        guard !http2.isEmpty, let shared = http2[authority]?.last(where: { $0.hasRoom }) else { return nil }
        return UpstreamConnection(loop: loop, joining: shared)
    }

    /// Connections to an HTTPS origin offering h2 whose ALPN answer has not come yet, by
    /// origin, and the exchanges waiting for one of them: a burst of requests to a new origin
    /// shares its first connection if that one turns out to be HTTP/2, instead of each
    /// opening its own.
    private var handshaking: [HTTPAuthority: Int] = [:]
    private var handshakeWaiters: [HTTPAuthority: [() -> Void]] = [:]
    /// Origins whose last handshake picked HTTP/1.1: their new connections are not waited for
    /// (each exchange needs one of its own), until one picks HTTP/2 again.
    private var pickedHTTP1: Set<HTTPAuthority> = []

    /// Whether a connection to `authority` that may turn out HTTP/2 is still handshaking.
    func isHandshakingHTTP2(_ authority: HTTPAuthority) -> Bool {
        handshaking[authority] != nil && !pickedHTTP1.contains(authority)
    }

    /// `resume` runs on this loop once the next handshake to `authority` ends (HTTP/2 or not,
    /// or failed): the exchange then takes a stream from the pool, or connects itself.
    func waitForHandshake(_ authority: HTTPAuthority, _ resume: @escaping () -> Void) {
        handshakeWaiters[authority, default: []].append(resume)
    }

    func handshakeBegan(_ authority: HTTPAuthority) { handshaking[authority, default: 0] += 1 }

    /// Called once per `handshakeBegan`, after an HTTP/2 connection was offered to the pool;
    /// `http2`: what the origin picked (nil: the connection failed or was dropped).
    /// The waiters run from the loop's queue, not inside the caller.
    func handshakeEnded(_ authority: HTTPAuthority, http2: Bool?) {
        if http2 == true { pickedHTTP1.remove(authority) } else if http2 == false { pickedHTTP1.insert(authority) }
        guard let n = handshaking[authority] else { return }
        handshaking[authority] = n > 1 ? n - 1 : nil
        guard let waiters = handshakeWaiters.removeValue(forKey: authority) else { return }
        loop.execute { for resume in waiters { resume() } }
    }

    /// `c` can take another stream. One made before the last routing change is not taken.
    func offerHTTP2(_ c: HTTP2OriginConnection) {
        guard c.routingGeneration == routingGeneration else { return }
        if http2[c.authority]?.contains(where: { $0 === c }) == true { return }
        http2[c.authority, default: []].append(c)
    }

    /// `c` is full, going away or gone.
    func removeHTTP2(_ c: HTTP2OriginConnection) {
        guard var list = http2[c.authority], let i = list.firstIndex(where: { $0 === c }) else { return }
        list.remove(at: i)
        http2[c.authority] = list.isEmpty ? nil : list
    }

    func put(_ c: UpstreamConnection, idleTimeout: Double) {
        // A stream on an HTTP/2 origin connection is not reused: that connection is pooled itself.
        guard c.bev != nil, !c.speaksHTTP2, c.routingGeneration == routingGeneration, idle.count(c.authority) < maxIdlePerOrigin,
              evbuffer_get_length(c.input) == 0 else { c.close(); return }
        c.owner = nil
        c.setReadTimeout(nil)
        c.setReading(true)
        // One timer per connection, made once and armed when it is not already running:
        // the connection is usually back within the exchange, so neither a new timer nor a
        // cancel on every take and a re-arm on every put is paid per exchange on the loop.
        // When it fires it checks the deadline and waits out what is left of it
        // (`UpstreamConnectionStateMachine.idleTimerFired`).
        c.pooled(idleTimeout: idleTimeout)
        idle.append(c, c.authority)
        loop.engine?.metrics.pooledUpstreams.add()
    }

    func remove(_ c: UpstreamConnection) {
        if idle.remove(c, c.authority) { loop.engine?.metrics.pooledUpstreams.sub() }
    }

    func closeAll() {
        for c in idle.removeAll() { c.close(); loop.engine?.metrics.pooledUpstreams.sub() }
        // One without streams goes with its last reference; streams in flight keep theirs.
        http2.removeAll()
    }
}
