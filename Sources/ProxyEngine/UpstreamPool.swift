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

    /// New connections follow `routing` from now on; idle ones made before are closed.
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

    /// `c` can take another stream.
    func offerHTTP2(_ c: HTTP2OriginConnection) {
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
