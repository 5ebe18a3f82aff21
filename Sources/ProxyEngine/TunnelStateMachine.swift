import HTTP1

/// One end of a tunnel.
enum TunnelSide: Equatable {
    case client, upstream

    var partner: TunnelSide { self == .client ? .upstream : .client }
    /// What a record's `closedBy` calls this side.
    var closer: CapturedTunnel.ClosedBy { self == .client ? .client : .upstream }
}

/// The lifecycle of a two-way byte pipe (CONNECT, or a WebSocket after 101), without
/// sockets: events in, actions out. `Tunnel` moves the bytes and performs the actions.
///
/// Rules:
/// - Each direction (bytes read from a source side, written to its partner) is in one of:
///   `flowing`; `paused` (the partner's output reached `highWaterBytes`: the source is not
///   read until that output drains to half of it); `draining` (the source sent EOF, its
///   last bytes are still queued for the partner); `shut` (the EOF was passed on as a write
///   shutdown of the partner, once nothing was queued for it: half-close).
/// - A direction only moves forward: flowing ⇄ paused → draining → shut. Bytes are never
///   forwarded into a direction that is draining or shut, except those the source read
///   before its EOF.
/// - The tunnel ends, once, when both directions are shut (`closedBy` the side whose EOF
///   came first); on an error or reset on either socket (`closedBy` the side that closed
///   first, else that side; a reset records `clientAborted` or `upstreamReset`); when
///   `tunnelIdleTimeout` passes without a byte either way (`closedBy` `.timeout`; a pause
///   does not count as activity, which is why the idle timer is the tunnel's own); or at
///   shutdown. After the end no event yields an action.
/// - `log.whenBehind: wait` with messages parsed: when the log is behind, both sides stop
///   being read (`logBehind`) until it catches up (`logCaughtUp`), so a connection's copies
///   never outgrow the queue and none is lost. A side reads only while its direction is
///   `flowing` and the log is not holding the tunnel; the idle timeout does not run while
///   held (waiting for the log is not the peers' silence).
struct TunnelStateMachine {
    enum Direction: Equatable {
        case flowing
        case paused
        /// `watermarkRaised`: the partner's output still has the high/2 mark of a pause.
        case draining(watermarkRaised: Bool)
        case shut
    }

    enum State: Equatable {
        case open(fromClient: Direction, fromUpstream: Direction)
        case ended
    }

    enum Action: Equatable {
        /// Stop reading `side` and have its partner's output report when it drains to half
        /// of `highWaterBytes`.
        case pauseReading(TunnelSide)
        case resumeReading(TunnelSide)
        /// `side`'s output reports drains at empty again.
        case resetWatermark(TunnelSide)
        /// Move what `side` has buffered to its partner (reported back as `forwarded`).
        case forward(from: TunnelSide)
        case shutdownWrite(TunnelSide)
        /// Stop reading `side` for the log; its output's watermark is left as it is.
        case holdReading(TunnelSide)
        /// Register with the loop's held connections, released when the log catches up.
        case registerHeld
        /// Close both sockets and record the tunnel; `resetBy`: the side whose reset ended it
        /// (recorded as `clientAborted` or `upstreamReset`). Always the last action.
        case end(closedBy: CapturedTunnel.ClosedBy, resetBy: TunnelSide?)
    }

    private(set) var state: State = .open(fromClient: .flowing, fromUpstream: .flowing)
    private(set) var bytesFromClient: UInt64 = 0
    private(set) var bytesFromUpstream: UInt64 = 0
    private var firstClosed: TunnelSide?
    /// Held for the log (`logBehind` until `logCaughtUp`).
    private(set) var isHeldForLog = false
    private var lastActivity: Double
    let highWaterBytes: Int
    let idleTimeout: Double

    init(highWaterBytes: Int, idleTimeout: Double, now: Double) {
        self.highWaterBytes = highWaterBytes
        self.idleTimeout = idleTimeout
        lastActivity = now
    }

    var isOpen: Bool { if case .open = state { return true } else { return false } }

    func direction(from side: TunnelSide) -> Direction? {
        guard case .open(let c, let u) = state else { return nil }
        return side == .client ? c : u
    }

    private mutating func setDirection(from side: TunnelSide, _ d: Direction) {
        guard case .open(let c, let u) = state else { return }
        state = side == .client ? .open(fromClient: d, fromUpstream: u) : .open(fromClient: c, fromUpstream: d)
    }

    // MARK: events

    /// The driver moved `count` bytes (possibly none) read from `side` to its partner,
    /// whose output now holds `destinationQueued` bytes.
    mutating func forwarded(from side: TunnelSide, count: Int, destinationQueued: Int, now: Double) -> ActionList<Action> {
        var actions = ActionList<Action>()
        guard let d = direction(from: side) else { return actions }
        if count > 0 {
            if side == .client { bytesFromClient += UInt64(count) } else { bytesFromUpstream += UInt64(count) }
            lastActivity = now
            if destinationQueued >= highWaterBytes {
                switch d {
                case .flowing, .paused: setDirection(from: side, .paused)
                case .draining: setDirection(from: side, .draining(watermarkRaised: true))
                case .shut: break
                }
                if d != .shut { actions.append(.pauseReading(side)) }
            }
        }
        if case .draining = d, destinationQueued == 0 { shut(from: side, &actions) }
        return actions
    }

    /// `side`'s output fell to its low mark (empty, or half the high mark while paused);
    /// `queued` bytes are left in it.
    mutating func outputDrained(_ side: TunnelSide, queued: Int) -> ActionList<Action> {
        var actions = ActionList<Action>()
        guard let d = direction(from: side.partner) else { return actions }
        switch d {
        case .paused:
            setDirection(from: side.partner, .flowing)
            actions.append(.resetWatermark(side))
            // Held for the log: reading resumes with the release instead.
            if !isHeldForLog {
                actions.append(.resumeReading(side.partner))
                actions.append(.forward(from: side.partner))
            }
        case .draining(watermarkRaised: true):
            setDirection(from: side.partner, .draining(watermarkRaised: false))
            actions.append(.resetWatermark(side))
            actions.append(.forward(from: side.partner))
        case .draining(watermarkRaised: false):
            if queued == 0 { shut(from: side.partner, &actions) }
        case .flowing, .shut:
            break
        }
        return actions
    }

    /// `side` sent EOF (after the driver forwarded what it had read); its partner's output
    /// holds `destinationQueued` bytes.
    mutating func peerClosed(_ side: TunnelSide, destinationQueued: Int) -> ActionList<Action> {
        var actions = ActionList<Action>()
        guard let d = direction(from: side) else { return actions }
        if firstClosed == nil { firstClosed = side }
        switch d {
        case .flowing: setDirection(from: side, .draining(watermarkRaised: false))
        case .paused: setDirection(from: side, .draining(watermarkRaised: true))
        case .draining, .shut: break
        }
        if destinationQueued == 0 { shut(from: side, &actions) }
        return actions
    }

    /// An error (or a reset, `reset`) on `side`'s socket.
    mutating func peerFailed(_ side: TunnelSide, reset: Bool) -> ActionList<Action> {
        guard isOpen else { return ActionList() }
        if firstClosed == nil { firstClosed = side }
        return end(closedBy: (firstClosed ?? side).closer, resetBy: reset ? side : nil)
    }

    /// The log is behind (`log.whenBehind: wait`) after the driver copied bytes for it:
    /// the sides still reading stop until `logCaughtUp`.
    mutating func logBehind() -> ActionList<Action> {
        var actions = ActionList<Action>()
        guard isOpen, !isHeldForLog else { return actions }
        isHeldForLog = true
        for side in [TunnelSide.client, .upstream] where direction(from: side) == .flowing {
            actions.append(.holdReading(side))
        }
        actions.append(.registerHeld)
        return actions
    }

    /// The log caught up at `now`: the flowing sides read again, and what they buffered meanwhile goes on.
    mutating func logCaughtUp(now: Double) -> ActionList<Action> {
        var actions = ActionList<Action>()
        guard isOpen, isHeldForLog else { return actions }
        isHeldForLog = false
        lastActivity = now
        for side in [TunnelSide.client, .upstream] where direction(from: side) == .flowing {
            actions.append(.resumeReading(side))
            actions.append(.forward(from: side))
        }
        return actions
    }

    /// The idle check ran at `now`.
    mutating func idleTimerFired(now: Double) -> ActionList<Action> {
        guard isOpen, !isHeldForLog, now - lastActivity >= idleTimeout else { return ActionList() }
        return end(closedBy: .timeout, resetBy: nil)
    }

    /// The engine shuts down.
    mutating func shutdown() -> ActionList<Action> {
        guard isOpen else { return ActionList() }
        return end(closedBy: .shutdown, resetBy: nil)
    }

    // MARK: transitions

    private mutating func shut(from side: TunnelSide, _ actions: inout ActionList<Action>) {
        guard let d = direction(from: side), d != .shut else { return }
        setDirection(from: side, .shut)
        actions.append(.shutdownWrite(side.partner))
        if direction(from: side.partner) == .shut {
            actions.append(contentsOf: end(closedBy: (firstClosed ?? .client).closer, resetBy: nil))
        }
    }

    private mutating func end(closedBy: CapturedTunnel.ClosedBy, resetBy: TunnelSide?) -> ActionList<Action> {
        state = .ended
        return ActionList(.end(closedBy: closedBy, resetBy: resetBy))
    }
}
