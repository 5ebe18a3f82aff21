import CLibevent
import Foundation
import HTTP1

/// Drives a `TunnelStateMachine` (which states the rules: half-close, backpressure,
/// idle timeout, how it ends) on two sockets: moves the bytes, tells the machine what
/// happened and performs the actions it returns.
final class Tunnel {
    final class Side {
        let bev: OpaquePointer
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
    /// The parent proxy the upstream side goes through (the record's `via`), as its
    /// connection handed it over.
    let via: String?
    /// A WebSocket whose messages the log parses: each direction's bytes are copied to it as
    /// they are relayed (`capture.websocketMessages`), numbered in the order read.
    let webSocket: WebSocketCapture?
    private var nextPiece: UInt64 = 0
    /// Wall time from the loop's monotonic clock, for the pieces' times.
    private let wall0 = Date().timeIntervalSince1970
    private let mono0 = EventLoop.monotonicNow()
    /// Unchecked: the machine's methods never call out, so no two accesses can overlap.
    @exclusivity(unchecked) private var machine: TunnelStateMachine
    private var idleTimer: LoopTimer?
    /// Waits for a TLS side's ciphertext to be written before its half-close (`shutdownWrite`).
    private var shutdownPoll: LoopTimer?

    private init(loop: EventLoop, engine: ProxyEngine, kind: CapturedTunnel.Kind, client: HandedOverSocket, upstream: HandedOverSocket,
                 clientText: String, target: String, status: Int, start: Double, upgrade: CapturedExchange?,
                 webSocket: WebSocketCapture?) {
        self.loop = loop; self.engine = engine; self.kind = kind; via = upstream.via
        self.client = Side(client); self.upstream = Side(upstream)
        self.clientText = clientText; self.target = target; self.status = status; self.start = start
        self.upgrade = upgrade
        self.webSocket = webSocket
        machine = TunnelStateMachine(highWaterBytes: engine.configuration.highWaterBytes,
                                     idleTimeout: engine.configuration.tunnelIdleTimeout, now: EventLoop.monotonicNow())
    }

    static func start(loop: EventLoop, engine: ProxyEngine, kind: CapturedTunnel.Kind, client: HandedOverSocket, upstream: HandedOverSocket,
                      clientText: String, target: String, status: Int, start: Double, upgrade: CapturedExchange?,
                      webSocket: WebSocketCapture? = nil) {
        let t = Tunnel(loop: loop, engine: engine, kind: kind, client: client, upstream: upstream, clientText: clientText,
                       target: target, status: status, start: start, upgrade: upgrade, webSocket: webSocket)
        loop.tunnels[ObjectIdentifier(t)] = t
        engine.metrics.activeTunnels.add()
        // The session that handed its socket over stopped counting it.
        engine.metrics.activeClients.add()
        engine.connectionOpened()
        t.install(t.client)
        t.install(t.upstream)
        let idle = engine.configuration.tunnelIdleTimeout
        // Unowned (no side table): the tunnel's own timer, cancelled and freed with it.
        t.idleTimer = LoopTimer(loop: loop, persistent: true) { [unowned t] in
            t.perform(t.machine.idleTimerFired(now: EventLoop.monotonicNow()))
        }
        t.idleTimer?.schedule(after: max(0.05, idle / 4))
        // Bytes that arrived with the CONNECT head or the 101 answer go through at once.
        t.forward(from: .client)
        t.forward(from: .upstream)
    }

    private func side(_ s: TunnelSide) -> Side { s == .client ? client : upstream }

    private func install(_ side: Side) {
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        let isClient = side === client
        let read: bufferevent_data_cb = isClient
            ? { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }?.forward(from: .client) }
            : { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }?.forward(from: .upstream) }
        let write: bufferevent_data_cb = isClient
            ? { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }?.drained(.client) }
            : { _, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }?.drained(.upstream) }
        let event: bufferevent_event_cb = isClient
            ? { _, e, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }?.event(e, side: .client) }
            : { _, e, ctx in ctx.map { Unmanaged<Tunnel>.fromOpaque($0).takeUnretainedValue() }?.event(e, side: .upstream) }
        bufferevent_setcb(side.bev, read, write, event, ctx)
        bufferevent_setwatermark(side.bev, Int16(EV_WRITE), 0, 0)
        bufferevent_set_timeouts(side.bev, nil, nil)
        bufferevent_enable(side.bev, Int16(EV_WRITE))  // reading: the side's SocketReader
        side.reader = SocketReader(loop: loop, bev: side.bev, enabled: true, pendingErrno: side.pendingErrno)
    }

    /// Moves what `from` has read to its partner and tells the machine.
    private func forward(from s: TunnelSide) {
        guard machine.isOpen else { return }
        let source = side(s), destination = side(s.partner)
        let n = evbuffer_get_length(source.input)
        if n > 0 {
            if let webSocket, webSocket.isParsing { copyForParsing(source.input, count: n, from: s, webSocket) }
            // Straight to the socket when nothing is queued (see SocketOutput), the rest queued.
            if evbuffer_get_length(destination.output) == 0 && bufferevent_get_underlying(destination.bev) == nil {
                let fd = bufferevent_getfd(destination.bev)
                if fd >= 0 { _ = evbuffer_write(source.input, fd) }
            }
            if evbuffer_get_length(source.input) > 0 { evbuffer_add_buffer(destination.output, source.input) }
            if s == .client { engine.metrics.bytesFromClients.add(n) } else { engine.metrics.bytesFromUpstreams.add(n) }
        }
        perform(machine.forwarded(from: s, count: n, destinationQueued: evbuffer_get_length(destination.output),
                                  now: n > 0 ? EventLoop.monotonicNow() : 0))
        // log.whenBehind: wait: what was read went on, copied; nothing more is read until
        // the log catches up (the queue takes what comes while it is behind, so a connection
        // that went on reading could fill memory).
        if n > 0, let webSocket, webSocket.isParsing, let sink = engine.sink, sink.isBehind {
            perform(machine.logBehind())
        }
    }

    /// The log caught up (`EventLoop.releaseHeldSessions`).
    func releaseHeld() {
        guard machine.isOpen else { return }
        engine.metrics.heldClients.sub()
        perform(machine.logCaughtUp(now: EventLoop.monotonicNow()))
    }

    /// Hands the log a copy of the `count` bytes about to be relayed from `s` (the frames
    /// are parsed off the loop, by the log's workers; the originals go on untouched).
    private func copyForParsing(_ input: OpaquePointer, count: Int, from s: TunnelSide, _ webSocket: WebSocketCapture) {
        guard let sink = engine.sink else { return }
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = buffer.baseAddress.map { Int(evbuffer_copyout(input, $0, count)) } ?? 0
        }
        let time = wall0 + (EventLoop.monotonicNow() - mono0)
        sink.accept(.webSocket(CapturedWebSocketPiece(capture: webSocket, sequence: nextPiece,
                                                      content: .bytes(s == .client ? .client : .server, bytes, time: time))))
        nextPiece += 1
    }

    /// `s`'s output fell below its low mark.
    private func drained(_ s: TunnelSide) {
        guard machine.isOpen else { return }
        perform(machine.outputDrained(s, queued: evbuffer_get_length(side(s).output)))
    }

    private func event(_ events: Int16, side s: TunnelSide) {
        let e = Int32(events)
        if e & BEV_EVENT_EOF != 0 && e & BEV_EVENT_ERROR == 0 {
            forward(from: s)
            guard machine.isOpen else { return }
            perform(machine.peerClosed(s, destinationQueued: evbuffer_get_length(side(s.partner).output)))
            return
        }
        perform(machine.peerFailed(s, reset: e & BEV_EVENT_ERROR != 0))
    }

    private func perform(_ actions: ActionList<TunnelStateMachine.Action>) {
        for action in actions {
            switch action {
            case .pauseReading(let s):
                side(s).reader?.setEnabled(false)
                bufferevent_setwatermark(side(s.partner).bev, Int16(EV_WRITE), engine.configuration.highWaterBytes / 2, 0)
            case .resumeReading(let s):
                side(s).reader?.setEnabled(true)
            case .holdReading(let s):
                side(s).reader?.setEnabled(false)
            case .registerHeld:
                loop.heldTunnels[ObjectIdentifier(self)] = self
                engine.metrics.heldClients.add()
                engine.metrics.holds.add()
            case .resetWatermark(let s):
                bufferevent_setwatermark(side(s).bev, Int16(EV_WRITE), 0, 0)
            case .forward(let s):
                forward(from: s)
            case .shutdownWrite(let s):
                shutdownWrite(side(s))
            case .end(let closedBy, let resetBy):
                close(closedBy: closedBy, error: resetBy.map {
                    TransportError($0 == .client ? .clientAborted : .upstreamReset, "connection reset")
                })
            }
        }
    }

    /// Passes a half-close on. A TLS filter (an intercepted client, an HTTPS origin) may
    /// still hold ciphertext in the socket's bufferevent below it, which a shutdown now
    /// would cut: the socket is shut once that is written, polled (the filter owns the
    /// lower bufferevent's callbacks) from 5 ms up to 250 ms apart.
    private func shutdownWrite(_ side: Side, interval: Double = 0.005) {
        guard machine.isOpen else { return }
        if let below = bufferevent_get_underlying(side.bev), evbuffer_get_length(bufferevent_get_output(below)) > 0 {
            let timer = LoopTimer(loop: loop) { [unowned self] in self.shutdownWrite(side, interval: min(interval * 2, 0.25)) }
            timer.schedule(after: interval)
            shutdownPoll = timer
            return
        }
        _ = Foundation.shutdown(bufferevent_getfd(side.bev), Int32(SHUT_WR))
    }

    /// At shutdown: closes both sides and records the tunnel.
    func shutdown() {
        perform(machine.shutdown())
    }

    /// Closes both sides and hands the tunnel record to the sink.
    private func close(closedBy: CapturedTunnel.ClosedBy, error: TransportError?) {
        idleTimer?.cancel()
        idleTimer = nil
        shutdownPoll?.cancel()
        shutdownPoll = nil
        client.reader?.detach()
        upstream.reader?.detach()
        bufferevent_free(client.bev)
        bufferevent_free(upstream.bev)
        engine.metrics.activeTunnels.sub()
        engine.metrics.activeClients.sub()
        if loop.heldTunnels.removeValue(forKey: ObjectIdentifier(self)) != nil { engine.metrics.heldClients.sub() }
        engine.connectionClosed()
        let wall = Date().timeIntervalSince1970
        let record = CapturedTunnel(kind: kind, client: clientText, target: target, status: status,
                                    bytesFromClient: machine.bytesFromClient, bytesFromUpstream: machine.bytesFromUpstream,
                                    start: start, end: max(start, wall), closedBy: closedBy, error: error, upgrade: upgrade,
                                    via: via)
        if let error { engine.metrics.recordTransportError(error.code) }
        if let webSocket {
            // After the last bytes, so the record counts every message.
            engine.sink?.accept(.webSocket(CapturedWebSocketPiece(capture: webSocket, sequence: nextPiece, content: .end(record))))
        } else {
            engine.sink?.accept(.tunnel(record))
        }
        loop.tunnels[ObjectIdentifier(self)] = nil
    }
}
