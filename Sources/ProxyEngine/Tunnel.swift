import CLibevent
import Foundation
import HTTP1

/// A two-way byte pipe between a client and an upstream (CONNECT, or a
/// WebSocket after 101). EOF on one side becomes a write shutdown on the other
/// once its pending output is flushed (half-close); the tunnel ends when both
/// directions are closed, on an error, or after `limits.tunnelIdleTimeout`
/// without a byte either way (libevent's own timeouts stop ticking while a
/// side is paused for backpressure, hence a timer of our own).
final class Tunnel {
    final class Side {
        let bev: OpaquePointer
        var eof = false
        var shutdownSent = false
        var pausedForPartner = false
        var bytesRead: UInt64 = 0
        /// Set when the tunnel installs its callbacks (see `SocketReader`).
        var reader: SocketReader?
        /// A read error the previous owner's reader still owed; the new reader reports it.
        let pendingErrno: Int32
        init(_ socket: HandedOverSocket) { bev = socket.bev; pendingErrno = socket.pendingErrno }
        var input: OpaquePointer { bufferevent_get_input(bev) }
        var output: OpaquePointer { bufferevent_get_output(bev) }
    }

    let loop: EventLoop
    let engine: ProxyEngine
    let kind: CapturedTunnel.Kind
    let client: Side
    let upstream: Side
    let clientText: String
    let target: String
    let status: Int
    let start: Double
    let upgrade: CapturedExchange?
    private var lastActivity = EventLoop.monotonicNow()
    private var idleTimer: LoopTimer?
    private var firstClosed: CapturedTunnel.ClosedBy?
    private var ended = false

    private init(loop: EventLoop, engine: ProxyEngine, kind: CapturedTunnel.Kind, client: HandedOverSocket, upstream: HandedOverSocket,
                 clientText: String, target: String, status: Int, start: Double, upgrade: CapturedExchange?) {
        self.loop = loop; self.engine = engine; self.kind = kind
        self.client = Side(client); self.upstream = Side(upstream)
        self.clientText = clientText; self.target = target; self.status = status; self.start = start
        self.upgrade = upgrade
    }

    static func start(loop: EventLoop, engine: ProxyEngine, kind: CapturedTunnel.Kind, client: HandedOverSocket, upstream: HandedOverSocket,
                      clientText: String, target: String, status: Int, start: Double, upgrade: CapturedExchange?) {
        let t = Tunnel(loop: loop, engine: engine, kind: kind, client: client, upstream: upstream, clientText: clientText,
                       target: target, status: status, start: start, upgrade: upgrade)
        loop.tunnels[ObjectIdentifier(t)] = t
        engine.metrics.activeTunnels.add()
        // The session that handed its socket over stopped counting it.
        engine.metrics.activeClients.add()
        engine.connectionOpened()
        t.install(t.client)
        t.install(t.upstream)
        let idle = engine.configuration.tunnelIdleTimeout
        t.idleTimer = LoopTimer(loop: loop, persistent: true) { [weak t] in t?.checkIdle() }
        t.idleTimer?.schedule(after: max(0.05, idle / 4))
        // Bytes that arrived with the CONNECT head or the 101 answer go through at once.
        t.move(from: t.client, to: t.upstream)
        t.move(from: t.upstream, to: t.client)
    }

    private func install(_ side: Side) {
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        let isClient = side === client
        let read: bufferevent_data_cb = isClient
            ? { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }.map { $0.move(from: $0.client, to: $0.upstream) } }
            : { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }.map { $0.move(from: $0.upstream, to: $0.client) } }
        let write: bufferevent_data_cb = isClient
            ? { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }.map { $0.drained($0.client, partner: $0.upstream) } }
            : { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }.map { $0.drained($0.upstream, partner: $0.client) } }
        let event: bufferevent_event_cb = isClient
            ? { _, e, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }.map { $0.event(e, side: $0.client, partner: $0.upstream) } }
            : { _, e, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }.map { $0.event(e, side: $0.upstream, partner: $0.client) } }
        bufferevent_setcb(side.bev, read, write, event, ctx)
        bufferevent_setwatermark(side.bev, Int16(EV_WRITE), 0, 0)
        bufferevent_set_timeouts(side.bev, nil, nil)
        bufferevent_enable(side.bev, Int16(EV_WRITE))  // reading: the side's SocketReader
        side.reader = SocketReader(loop: loop, bev: side.bev, enabled: true, pendingErrno: side.pendingErrno)
    }

    private func move(from source: Side, to destination: Side) {
        guard !ended else { return }
        let n = evbuffer_get_length(source.input)
        guard n > 0 else { return }
        source.bytesRead += UInt64(n)
        lastActivity = EventLoop.monotonicNow()
        // Straight to the socket when nothing is queued (see SocketOutput), the rest queued.
        if evbuffer_get_length(destination.output) == 0 && bufferevent_get_underlying(destination.bev) == nil {
            let fd = bufferevent_getfd(destination.bev)
            if fd >= 0 { _ = evbuffer_write(source.input, fd) }
        }
        if evbuffer_get_length(source.input) > 0 { evbuffer_add_buffer(destination.output, source.input) }
        if source === client { engine.metrics.bytesFromClients.add(n) } else { engine.metrics.bytesFromUpstreams.add(n) }
        let high = engine.configuration.highWaterBytes
        if evbuffer_get_length(destination.output) >= high {
            source.pausedForPartner = true
            source.reader?.setEnabled(false)
            bufferevent_setwatermark(destination.bev, Int16(EV_WRITE), high / 2, 0)
        }
    }

    /// `side`'s output fell below its low mark.
    private func drained(_ side: Side, partner: Side) {
        if partner.pausedForPartner {
            partner.pausedForPartner = false
            bufferevent_setwatermark(side.bev, Int16(EV_WRITE), 0, 0)
            if !partner.eof { partner.reader?.setEnabled(true) }
            move(from: partner, to: side)
        }
        if partner.eof && evbuffer_get_length(side.output) == 0 { shutdownWrite(side) }
        finishIfDone()
    }

    private func event(_ events: Int16, side: Side, partner: Side) {
        let e = Int32(events)
        if e & BEV_EVENT_EOF != 0 && e & BEV_EVENT_ERROR == 0 {
            move(from: side, to: partner)
            side.eof = true
            if firstClosed == nil { firstClosed = side === client ? .client : .upstream }
            if evbuffer_get_length(partner.output) == 0 { shutdownWrite(partner) }
            finishIfDone()
            return
        }
        if firstClosed == nil { firstClosed = side === client ? .client : .upstream }
        end(closedBy: firstClosed ?? .error, error: e & BEV_EVENT_ERROR != 0
            ? TransportError(side === client ? .clientAborted : .upstreamReset, "connection reset") : nil)
    }

    private func shutdownWrite(_ side: Side) {
        guard !side.shutdownSent else { return }
        side.shutdownSent = true
        _ = Foundation.shutdown(bufferevent_getfd(side.bev), Int32(SHUT_WR))
    }

    private func finishIfDone() {
        guard !ended, client.eof, upstream.eof,
              evbuffer_get_length(client.output) == 0, evbuffer_get_length(upstream.output) == 0 else { return }
        end(closedBy: firstClosed ?? .client, error: nil)
    }

    private func checkIdle() {
        if EventLoop.monotonicNow() - lastActivity >= engine.configuration.tunnelIdleTimeout {
            end(closedBy: .timeout, error: nil)
        }
    }

    /// Closes both sides (at shutdown too) and hands the tunnel record to the sink.
    func end(closedBy: CapturedTunnel.ClosedBy, error: TransportError?) {
        guard !ended else { return }
        ended = true
        idleTimer?.cancel()
        idleTimer = nil
        client.reader?.detach()
        upstream.reader?.detach()
        bufferevent_free(client.bev)
        bufferevent_free(upstream.bev)
        engine.metrics.activeTunnels.sub()
        engine.metrics.activeClients.sub()
        engine.connectionClosed()
        let wall = Date().timeIntervalSince1970
        let record = CapturedTunnel(kind: kind, client: clientText, target: target, status: status,
                                    bytesFromClient: client.bytesRead, bytesFromUpstream: upstream.bytesRead,
                                    start: start, end: max(start, wall), closedBy: closedBy, error: error, upgrade: upgrade)
        engine.sink?.accept(.tunnel(record))
        loop.tunnels[ObjectIdentifier(self)] = nil
    }
}
