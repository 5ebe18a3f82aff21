import HTTP1

/// The lifecycle of one connection to an origin, without sockets: events in, actions out.
/// `UpstreamConnection` resolves, connects, runs TLS and times on libevent as told.
///
/// Rules:
/// - `created` → `resolving` → `connecting` (each address in turn) → `handshaking` (HTTPS
///   only) → `lent`. Connecting ends once, with `finishConnect`: success when TCP (and TLS)
///   are up (`lent`), else (`connectFailed`, final, with the error) the first of: the resolver's error; `loopDetected` when an address is
///   one of this proxy's listeners; `upstreamConnectFailed` when every address failed
///   (naming the last failure); `tlsFailed` (never retried on another address: it would
///   not fix a certificate); `upstreamTimeout` when `connectTimeout` passed first.
/// - The connect deadline runs from `connect` to `finishConnect`; events of a connection
///   already finished or closed are ignored.
/// - Once connected it is `lent` to one exchange, or `pooled` with an idle deadline.
///   Bytes or an EOF while pooled mean the origin closed it or misbehaved: it is dropped.
///   The idle timer always runs while `pooled`, and may still run while `lent` (it is
///   not cancelled when an exchange takes the connection, which saves a timer operation
///   per exchange): `pooled` arms it unless it runs. When it fires it closes a connection
///   pooled past its deadline, waits out what is left of a later deadline, and does
///   nothing for one lent out meanwhile (the next `pooled` arms it again).
/// - `closed` and `connectFailed` are final (closing twice, or after a hand-over to a
///   tunnel, does nothing).
/// - Through a parent proxy (`parent` set), the parent's addresses are resolved and
///   tried instead, and its failures are its own: the resolver's error or every address
///   failing is `upstreamProxyFailed`, and so is TLS with an `https` parent. Once TCP (and
///   TLS with the parent) is up, `negotiating` runs the parent's handshake unless the
///   request goes in absolute-form to an HTTP parent; then TLS with the origin for HTTPS.
struct UpstreamConnectionStateMachine {
    enum State: Equatable {
        case created
        case resolving
        /// Trying `addresses[next - 1]`; `lastError` explains the previous failure.
        case connecting(addresses: [SocketAddress], next: Int, lastError: String)
        case handshaking
        /// TLS with an `https` parent.
        case parentHandshaking
        /// The parent's CONNECT or SOCKS5 handshake (`HTTPConnectHandshake`, `SOCKS5Handshake`).
        case negotiating
        /// Owned by one exchange; `idleTimerRunning`: the timer armed when it was last pooled
        /// has not fired yet.
        case lent(idleTimerRunning: Bool)
        /// In the pool until `idleDeadline`; the idle timer runs.
        case pooled(idleDeadline: Double)
        /// Connecting failed with this error; closed before the completion runs.
        indirect case connectFailed(TransportError)
        case closed
    }

    enum ConnectPhase: Equatable {
        /// Addresses known; `lookedUp` is false for a numeric host (no DNS query was made).
        case resolved(lookedUp: Bool)
        case tcpConnected
    }

    /// Plain values only, so that returning and iterating them copies bytes and nothing else.
    enum Action: Equatable {
        case armConnectDeadline
        case resolve
        case reportPhase(ConnectPhase)
        /// Open a socket to `addressToTry` (a previous one is freed).
        case tryAddress
        case startTLS
        /// TLS with the parent (an `https` parent).
        case startParentTLS
        /// Run the parent's handshake for a tunnel to the origin.
        case negotiate
        /// Connecting is over, failed when the state is `connectFailed` (`connectError`):
        /// then the connection is closed before the completion runs.
        case finishConnect
        case armIdleTimer(after: Double)
        /// Take it out of the pool and close it.
        case closeIdle
    }

    let authority: HTTPAuthority
    let usesTLS: Bool
    /// The parent proxy this connection goes through; nil for direct.
    let parent: ParentProxy?
    /// Whether the parent's handshake opens a tunnel to the origin (everything through a
    /// parent but plain HTTP to an HTTP parent, which takes absolute-form requests).
    let tunnelsThroughParent: Bool
    private(set) var state: State = .created

    /// Why connecting failed, once it has.
    var connectError: TransportError? {
        if case .connectFailed(let error) = state { return error } else { return nil }
    }

    /// The address being tried.
    var addressToTry: SocketAddress? {
        guard case .connecting(let addresses, let next, _) = state, next > 0, next <= addresses.count else { return nil }
        return addresses[next - 1]
    }

    init(authority: HTTPAuthority, parent: ParentProxy? = nil) {
        self.authority = authority
        self.parent = parent
        usesTLS = authority.scheme == "https"
        tunnelsThroughParent = parent.map { !$0.forwardsAbsoluteForm(to: authority) } ?? false
    }

    /// Where the TCP connection goes: the parent, or the origin.
    var dialed: HTTPAuthority { parent?.authority ?? authority }

    var isConnecting: Bool {
        switch state {
        case .resolving, .connecting, .handshaking, .parentHandshaking, .negotiating: return true
        default: return false
        }
    }
    var isClosed: Bool {
        switch state {
        case .closed, .connectFailed: return true
        default: return false
        }
    }
    var isPooled: Bool { if case .pooled = state { return true } else { return false } }

    // MARK: connecting

    mutating func connect() -> ActionList<Action> {
        guard state == .created else { return ActionList() }
        state = .resolving
        return ActionList(.armConnectDeadline, .resolve)
    }

    /// The resolver answered; `ownListener` is the first address that is this proxy's own.
    mutating func resolved(_ result: Result<[SocketAddress], TransportError>, lookedUp: Bool,
                           ownListener: SocketAddress?) -> ActionList<Action> {
        guard state == .resolving else { return ActionList() }
        var actions: ActionList<Action> = ActionList(.reportPhase(.resolved(lookedUp: lookedUp)))
        switch result {
        case .failure(let e):
            actions.append(contentsOf: fail(parent.map { TransportError(.upstreamProxyFailed,
                "the parent proxy \($0.via) cannot be reached: \(e.message)") } ?? e))
        case .success(let addresses):
            if let own = ownListener {
                actions.append(contentsOf: fail(TransportError(.loopDetected,
                    "\(dialed) is this proxy's own listener (\(own))")))
            } else {
                state = .connecting(addresses: addresses, next: 0, lastError: "")
                actions.append(contentsOf: nextAddress())
            }
        }
        return actions
    }

    /// The address being tried failed (`why`); the next one is tried.
    mutating func attemptFailed(_ why: String) -> ActionList<Action> {
        guard case .connecting(let addresses, let next, _) = state else { return ActionList() }
        state = .connecting(addresses: addresses, next: next, lastError: why)
        return nextAddress()
    }

    mutating func tcpConnected() -> ActionList<Action> {
        guard case .connecting = state else { return ActionList() }
        if parent?.kind == .https {
            state = .parentHandshaking
            return ActionList(.reportPhase(.tcpConnected), .startParentTLS)
        }
        let next = throughParent()
        // Reported only when a phase follows: `connected` then ends the TCP phase.
        guard isConnecting else { return next }
        var actions = ActionList<Action>(.reportPhase(.tcpConnected))
        actions.append(contentsOf: next)
        return actions
    }

    /// TCP and TLS with the parent are up, or TCP with the origin: the parent's
    /// handshake, TLS with the origin, or done.
    private mutating func throughParent() -> ActionList<Action> {
        if tunnelsThroughParent {
            state = .negotiating
            return ActionList(.negotiate)
        }
        return afterTunnel()
    }

    private mutating func afterTunnel() -> ActionList<Action> {
        if usesTLS {
            state = .handshaking
            return ActionList(.startTLS)
        }
        return succeed()
    }

    mutating func tlsConnected() -> ActionList<Action> {
        switch state {
        case .handshaking: return succeed()
        case .parentHandshaking: return throughParent()
        default: return ActionList()
        }
    }

    /// TLS could not start or the handshake failed (`message` says why and with whom);
    /// with the parent, that is the parent's failure.
    mutating func tlsFailed(_ message: String) -> ActionList<Action> {
        guard isConnecting else { return ActionList() }
        return fail(TransportError(state == .parentHandshaking ? .upstreamProxyFailed : .tlsFailed, message))
    }

    /// The parent's handshake opened the tunnel to the origin.
    mutating func parentTunnelOpened() -> ActionList<Action> {
        guard state == .negotiating else { return ActionList() }
        return afterTunnel()
    }

    /// The parent's handshake failed (`error` from `ParentHandshakeStep.failed`).
    mutating func parentHandshakeFailed(_ error: TransportError) -> ActionList<Action> {
        guard state == .negotiating else { return ActionList() }
        return fail(error)
    }

    mutating func connectDeadlinePassed() -> ActionList<Action> {
        guard isConnecting else { return ActionList() }
        let through = parent.map { " through the parent proxy \($0.via)" } ?? ""
        return fail(TransportError(.upstreamTimeout, "connecting to \(authority.description)\(through) timed out"))
    }

    private mutating func nextAddress() -> ActionList<Action> {
        guard case .connecting(let addresses, let next, let lastError) = state else { return ActionList() }
        guard next < addresses.count else {
            if let parent {
                return fail(TransportError(.upstreamProxyFailed, "cannot connect to the parent proxy \(parent.via): \(lastError)"))
            }
            return fail(TransportError(.upstreamConnectFailed, "cannot connect to \(authority): \(lastError)"))
        }
        state = .connecting(addresses: addresses, next: next + 1, lastError: lastError)
        return ActionList(.tryAddress)
    }

    /// A stream on an HTTP/2 connection already up: nothing to connect, lent at once.
    mutating func joinedSharedConnection() {
        guard state == .created else { return }
        state = .lent(idleTimerRunning: false)
    }

    private mutating func succeed() -> ActionList<Action> {
        state = .lent(idleTimerRunning: false)
        return ActionList(.finishConnect)
    }

    private mutating func fail(_ error: TransportError) -> ActionList<Action> {
        state = .connectFailed(error)
        return ActionList(.finishConnect)
    }

    // MARK: the pool

    /// Put in the pool at `now` for `idleTimeout`.
    mutating func pooled(now: Double, idleTimeout: Double) -> ActionList<Action> {
        guard case .lent(let timerRunning) = state else { return ActionList() }
        state = .pooled(idleDeadline: now + idleTimeout)
        return timerRunning ? ActionList() : ActionList(.armIdleTimer(after: idleTimeout))
    }

    /// Taken from the pool by an exchange (the idle timer keeps running).
    mutating func taken() {
        if isPooled { state = .lent(idleTimerRunning: true) }
    }

    mutating func idleTimerFired(now: Double) -> ActionList<Action> {
        switch state {
        case .lent:
            state = .lent(idleTimerRunning: false)
            return ActionList()
        case .pooled(let deadline):
            let remaining = deadline - now
            if remaining > 0 { return ActionList(.armIdleTimer(after: remaining)) }
            state = .closed
            return ActionList(.closeIdle)
        case .created, .resolving, .connecting, .handshaking, .parentHandshaking, .negotiating, .connectFailed, .closed:
            return ActionList()
        }
    }

    /// Bytes, an EOF or an error while no exchange owns the connection.
    mutating func eventWhileIdle() -> ActionList<Action> {
        guard !isClosed else { return ActionList() }
        state = .closed
        return ActionList(.closeIdle)
    }

    /// Closed, or handed over to a tunnel. Whether it was open until now.
    mutating func close() -> Bool {
        guard !isClosed else { return false }
        state = .closed
        return true
    }
}
