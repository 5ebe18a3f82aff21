import CLibevent
import HTTP1

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
        // One timer per connection, made once and armed when it is not already running:
        // the connection is usually back within the exchange, so neither a new timer nor a
        // cancel on every take and a re-arm on every put is paid per exchange on the loop.
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
