import HTTP1

/// The lifecycle of one client connection, without sockets: events in, actions out.
/// `ClientSession` parses heads, routes requests, owns the socket and the exchange, and
/// performs the actions.
///
/// Rules:
/// - Requests are answered strictly in order: a head is read only in `readingHead`;
///   while an exchange runs (`exchanging`), pipelined bytes wait in the input, read up to
///   a head's worth. The next head is parsed when the exchange finishes with keep-alive.
/// - Reading is paused (backpressure, or a head's worth of pipelined bytes) only while a
///   request is held or an exchange runs, and resumed when either ends: the `Input` of
///   those two phases says so, and no other phase can be paused.
/// - `held`: a parsed request waits for the log to catch up (`log.whenBehind: wait`);
///   reading goes on up to a head's worth, so a reset is noticed; a half-close is answered
///   after the release (`heldRequestStarted`).
/// - `awaitingClientHello`: a CONNECT was answered; the client's first bytes decide
///   (`ConnectPayloadStateMachine`) between TLS, HTTP decoded in this session, and a blind
///   tunnel. The TLS object (an intercepted host) and the upstream socket (a host whose
///   upstream was connected before the answer) are this state's, freed when the state is
///   left any other way. With an upstream waiting, its first byte, the client's close,
///   `clientIdleTimeout` or a drain make the tunnel blind.
/// - TLS with the client is `plain`, `handshaking` (requests then go to the intercepted
///   origin) or `established`; `plainInsideConnect`: plain HTTP/1 came through a CONNECT,
///   and its origin-form requests go to the CONNECT's origin. A handshake that fails,
///   stalls past `clientIdleTimeout`, or a connection that closes before the ClientHello
///   leaves a record and closes.
/// - The head timer (`clientIdleTimeout`) is armed whenever a head is awaited: past it, a
///   client that sent part of one gets 408, an idle one is closed. Starting an exchange
///   does not cancel it (that would be a timer operation per exchange): while exchanging
///   it does nothing, and the exchange's end arms it again. Holding a request cancels it.
///   Once `closingAfterFlush`, the answer already given is the last: the timer answers
///   nothing more (the flush poll closes a client that takes none of it). After a
///   half-close (`readingHead(inputEnded: true)`) what is buffered is answered at once
///   or on the next loop turn, so the timer does nothing there either.
/// - A half-close (EOF) keeps the connection for the answers to what was sent, pipelined
///   requests included (`inputEnded` of `readingHead`, `held` and `exchanging`); the last answer says `Connection: close`, then the connection
///   closes. A reset, a read timeout or an EOF that leaves a request incomplete closes at
///   once (the exchange records the cause).
/// - `closingAfterFlush` stops reading and closes once the output is written (or the
///   client took none of it for `clientIdleTimeout`, which the driver polls). An exchange
///   that ended with an error while in flight stays attached (finished) until the close.
/// - `closed` is final.
struct ClientSessionStateMachine {
    /// An answered CONNECT waiting for the client's first bytes; `ssl` (an intercepted
    /// host) and `upstream` (already connected) are owned here.
    struct ClientHelloWait {
        var head: HTTPRequestHead
        var authority: HTTPAuthority
        var ssl: OpaquePointer?
        var upstream: HandedOverSocket?
        var payload: ConnectPayloadStateMachine
    }

    /// The client's input while a request is held or an exchange runs: the only phases in
    /// which reading may be paused.
    struct Input: Equatable {
        /// Reading is off: the exchange's upstream cannot take more (backpressure), or a
        /// head's worth of what follows the request is buffered.
        var paused = false
        /// The client shut down its sending side: what it sent is answered, then the
        /// connection closes.
        var ended = false
    }

    /// The payloads of the rare phases are boxed (`indirect`), so that the phase the hot
    /// path reads and copies is one word.
    enum Phase {
        /// `inputEnded`: the client half-closed; what is buffered is answered, then the
        /// connection closes. Reading is never paused here.
        case readingHead(inputEnded: Bool)
        indirect case held(HTTPRequestHead, Input)
        case exchanging(Input)
        indirect case awaitingClientHello(ClientHelloWait)
        /// `exchangeKept`: the (finished) exchange is still the session's until the close.
        case closingAfterFlush(exchangeKept: Bool)
        case closed
    }

    enum Security: Equatable {
        case plain
        case handshaking(HTTPAuthority)
        case established(HTTPAuthority)
        /// Plain HTTP/1 through a CONNECT, decoded: origin-form requests go to this origin.
        case plainInsideConnect(HTTPAuthority)
    }

    /// How an intercepted CONNECT failed on the client's side (`clientTLSFailed`).
    enum InterceptionFailure: Equatable {
        /// Nothing arrived after the CONNECT answer within `clientIdleTimeout`.
        case nothingSent
        /// The handshake did not complete within `clientIdleTimeout`.
        case notCompleted
        /// The connection closed before the ClientHello.
        case closedBeforeHello
        /// The handshake failed (the driver asks OpenSSL why).
        case handshakeFailed
    }

    /// Plain values only, so that returning and iterating them copies bytes and nothing
    /// else; the authority a failure names is `interceptionAuthority`.
    enum Action: Equatable {
        /// Switch the socket's reading off (the machine already counts it paused).
        case pauseReading
        /// Hand what the client sent to the exchange.
        case deliverToExchange
        case parseHeads
        case inspectFirstByte
        /// 408: part of a head arrived, not all of it, within `clientIdleTimeout`.
        case respondRequestTimeout
        case recordInterceptionFailure(InterceptionFailure)
        /// A CONNECT whose upstream was connected before the answer turned out blind (the
        /// origin spoke first, the client closed or stayed silent, a drain): hand both
        /// sockets to a tunnel.
        case startBlindTunnel
        /// End the exchange with this cause (`clientTimeout`, `clientAborted`).
        case failExchange(TransportError.Code)
        case answerBufferedThenClose
        /// As `answerBufferedThenClose`, on the next loop turn (after the answer's write returns).
        case answerBufferedThenCloseNextTurn
        /// A pipelined head is buffered: parse it on the next loop turn.
        case parseHeadsNextTurn
        /// Switch the socket's reading back on (paused for the request or exchange that ended).
        case resumeReading
        /// Waiting for a head again: (re)start the head timer.
        case armHeadTimer
        /// A request is held: the head timer stops.
        case cancelHeadTimer
        /// The session waits for the log: the loop releases it once the log caught up.
        case registerHeld
        /// The held request was released (or refused): no longer counted as held.
        case unregisterHeld
        /// The machine is `closingAfterFlush`: stop reading, close once the output is
        /// written or the client took none of it for `clientIdleTimeout` (polled).
        case closeAfterFlush
        /// Shutting down with a request held: forget it and answer 503.
        case refuseHeldForShutdown
        /// The session ended without a socket of its own to free (handed to a tunnel):
        /// stop its timers, stop counting it, leave the loop.
        case leaveLoop
        case close
    }

    private(set) var phase: Phase = .readingHead(inputEnded: false)
    private(set) var security: Security = .plain
    let clientIdleTimeout: Double

    init(clientIdleTimeout: Double) {
        self.clientIdleTimeout = clientIdleTimeout
    }

    // MARK: queries

    /// The origin of the intercepted CONNECT in progress (waiting for the ClientHello, or
    /// handshaking): what an interception failure names.
    var interceptionAuthority: HTTPAuthority? {
        if case .awaitingClientHello(let wait) = phase, wait.ssl != nil { return wait.authority }
        if case .handshaking(let authority) = security { return authority }
        return nil
    }

    var isClosed: Bool { if case .closed = phase { return true } else { return false } }
    var canReadHead: Bool { if case .readingHead = phase { return true } else { return false } }
    var isExchanging: Bool { if case .exchanging = phase { return true } else { return false } }
    var isHeld: Bool { if case .held = phase { return true } else { return false } }
    var isClosingAfterFlush: Bool { if case .closingAfterFlush = phase { return true } else { return false } }
    /// An exchange is the session's (in flight, or finished and kept until the close).
    var hasExchange: Bool {
        switch phase {
        case .exchanging, .closingAfterFlush(exchangeKept: true): return true
        default: return false
        }
    }
    /// The client half-closed, and a request of it is still to be answered or read.
    var inputEnded: Bool {
        switch phase {
        case .readingHead(let ended): return ended
        case .held(_, let input), .exchanging(let input): return input.ended
        case .awaitingClientHello, .closingAfterFlush, .closed: return false
        }
    }
    /// Reading is off for backpressure (or a head's worth waiting).
    var readingPaused: Bool {
        switch phase {
        case .held(_, let input), .exchanging(let input): return input.paused
        case .readingHead, .awaitingClientHello, .closingAfterFlush, .closed: return false
        }
    }
    /// TLS with the client was started after an intercepted CONNECT.
    var isIntercepting: Bool { if case .plain = security { return false } else { return true } }
    /// Requests inside an intercepted TLS stream go to this origin.
    var interceptedAuthority: HTTPAuthority? {
        switch security {
        case .plain: return nil
        case .handshaking(let a), .established(let a), .plainInsideConnect(let a): return a
        }
    }

    // MARK: requests

    /// A head was parsed and its exchange created: the driver begins it after these actions.
    /// None, so far: the head timer runs on and is ignored while exchanging (see the rules).
    mutating func exchangeStarted() -> ActionList<Action> {
        guard case .readingHead(let ended) = phase else { return ActionList() }
        phase = .exchanging(Input(paused: false, ended: ended))
        return ActionList()
    }

    /// A request is parsed but must wait for the log.
    mutating func hold(_ head: HTTPRequestHead) -> ActionList<Action> {
        guard case .readingHead(let ended) = phase else { return ActionList() }
        phase = .held(head, Input(paused: false, ended: ended))
        return ActionList(.cancelHeadTimer, .registerHeld)
    }

    /// The log caught up: the held request, to be started after the actions (nil when
    /// there is none). Then `heldRequestStarted`.
    mutating func release() -> (head: HTTPRequestHead, actions: ActionList<Action>)? {
        guard case .held(let head, let input) = phase else { return nil }
        phase = .readingHead(inputEnded: input.ended)
        var actions = ActionList<Action>(.unregisterHeld)
        if input.paused { actions.append(.resumeReading) }
        return (head, actions)
    }

    /// The released request was started (or answered at once). An exchange it started
    /// knows whether the client had half-closed; a request answered at once is followed as
    /// an exchange's end would be: by what is buffered.
    mutating func heldRequestStarted() -> ActionList<Action> {
        guard case .readingHead(let ended) = phase else { return ActionList() }
        return ActionList(ended ? .answerBufferedThenClose : .parseHeads)
    }

    /// The exchange is over (or Tapwire answered a request itself). `keepAlive`: the answer
    /// allows another request; `draining`: Tapwire is shutting down; `inputBuffered`: bytes
    /// of a further (pipelined) request wait in the input.
    ///
    /// Keep-alive goes back to reading heads, starting at once on what is buffered; a
    /// closing answer or a drain closes after the flush; after a half-close, what is
    /// buffered is answered and then the connection closes.
    mutating func exchangeFinished(keepAlive: Bool, draining: Bool, inputBuffered: Bool) -> ActionList<Action> {
        var input = Input()
        switch phase {
        case .exchanging(let i):
            input = i
            phase = .readingHead(inputEnded: i.ended)
        case .readingHead(let ended):
            // Tapwire answered a request itself.
            input.ended = ended
        case .closingAfterFlush(exchangeKept: true):
            phase = .closingAfterFlush(exchangeKept: false)
        case .held, .awaitingClientHello, .closingAfterFlush(exchangeKept: false), .closed:
            break
        }
        guard keepAlive, !draining else { return closeAfterFlush() }
        // Closing or closed already: nothing more is read.
        guard case .readingHead = phase else { return ActionList() }
        if input.ended {
            // Nothing more will arrive: answer what is buffered, then close.
            return inputBuffered ? ActionList(.answerBufferedThenCloseNextTurn) : closeAfterFlush()
        }
        var actions = ActionList<Action>()
        if input.paused { actions.append(.resumeReading) }
        actions.append(.armHeadTimer)
        if inputBuffered { actions.append(.parseHeadsNextTurn) }
        return actions
    }

    /// After a half-close, the buffered heads were parsed (`answerBufferedThenClose`): when
    /// no request was started or held from them, nothing is left to answer.
    mutating func bufferedHeadsParsed() -> ActionList<Action> {
        switch phase {
        case .readingHead, .awaitingClientHello: return closeAfterFlush()
        case .held, .exchanging, .closingAfterFlush, .closed: return ActionList()
        }
    }

    /// Tapwire is shutting down: an idle connection closes (after what is being written),
    /// a held request is refused with 503, an exchange in flight finishes first.
    mutating func drain() -> ActionList<Action> {
        switch phase {
        case .held(_, let input):
            phase = .readingHead(inputEnded: input.ended)
            return ActionList(.unregisterHeld, .refuseHeldForShutdown)
        case .awaitingClientHello(let wait):
            // With its upstream connected, the CONNECT is a tunnel, which the shutdown ends
            // and records; else closed at once (`close` frees the wait's TLS object, which
            // closing after the flush would lose).
            return ActionList(wait.upstream != nil ? .startBlindTunnel : .close)
        case .readingHead:
            return closeAfterFlush()
        case .exchanging, .closingAfterFlush, .closed:
            return ActionList()
        }
    }

    /// The exchange took what the client sent; `requestComplete`: its request is whole, so
    /// `buffered` bytes are pipelined ones, which wait for the answer: past a head's worth
    /// (`maxHeaderBytes`), reading stops.
    mutating func exchangeTookInput(requestComplete: Bool, buffered: Int, maxHeaderBytes: Int) -> ActionList<Action> {
        guard requestComplete, buffered > maxHeaderBytes else { return ActionList() }
        return pauseReadingRequested()
    }

    /// The exchange (or the wait for the log) asks for reading to stop: it stops once.
    mutating func pauseReadingRequested() -> ActionList<Action> {
        switch phase {
        case .exchanging(var input) where !input.paused:
            input.paused = true
            phase = .exchanging(input)
            return ActionList(.pauseReading)
        case .held(let head, var input) where !input.paused:
            input.paused = true
            phase = .held(head, input)
            return ActionList(.pauseReading)
        default:
            // Already paused, or not reading for a request (closing reads nothing at all).
            return ActionList()
        }
    }

    /// The exchange asks for reading to resume; it resumes when it was paused.
    mutating func resumeReadingRequested() -> ActionList<Action> {
        guard case .exchanging(var input) = phase, input.paused else { return ActionList() }
        input.paused = false
        phase = .exchanging(input)
        return ActionList(.resumeReading)
    }

    /// The socket went to a tunnel: the session ends without closing it.
    mutating func handedOver() -> ActionList<Action> {
        if case .closed = phase { return ActionList() }
        phase = .closed
        return ActionList(.leaveLoop)
    }

    // MARK: interception

    /// A CONNECT was answered: the client's first bytes are awaited within
    /// `clientIdleTimeout`, or looked at now when they are already buffered. From
    /// `exchanging` when the exchange connected the upstream before the answer (it is over,
    /// and reading, paused while it connected, goes on).
    mutating func awaitClientHello(_ wait: ClientHelloWait, inputBuffered: Bool) -> ActionList<Action> {
        switch phase {
        case .readingHead: break
        case .exchanging where wait.upstream != nil: break
        default: return ActionList()
        }
        phase = .awaitingClientHello(wait)
        return inputBuffered ? ActionList(.armHeadTimer, .inspectFirstByte) : ActionList(.armHeadTimer)
    }

    /// The wait for the first bytes, to look at without leaving it.
    var connectWait: ClientHelloWait? {
        if case .awaitingClientHello(let wait) = phase { return wait }
        return nil
    }

    /// The first bytes after the CONNECT answer decided (see `ConnectPayloadStateMachine`):
    /// the wait, to be resolved by the driver.
    mutating func firstByteArrived() -> ClientHelloWait? {
        guard case .awaitingClientHello(let wait) = phase else { return nil }
        phase = .readingHead(inputEnded: false)
        return wait
    }

    /// The origin connected for a CONNECT sent bytes before the client decided: the tunnel
    /// is blind (the wait is the driver's to resolve, as for `firstByteArrived`).
    mutating func upstreamSpokeFirst() -> ActionList<Action> {
        guard case .awaitingClientHello(let wait) = phase, wait.upstream != nil else { return ActionList() }
        return ActionList(.startBlindTunnel)
    }

    /// Plain HTTP/1 came through the CONNECT to `authority`: its requests are parsed and
    /// exchanged in this session, the head timer running for the first.
    mutating func plainHTTPStarted(_ authority: HTTPAuthority) -> ActionList<Action> {
        security = .plainInsideConnect(authority)
        return ActionList(.armHeadTimer, .parseHeads)
    }

    /// The client speaks TLS: the handshake with the intercepted origin's certificate starts.
    /// The handshake must complete within `clientIdleTimeout` (the head timer, see `headTimerFired`).
    mutating func tlsStarted(_ authority: HTTPAuthority) -> ActionList<Action> {
        security = .handshaking(authority)
        return ActionList(.armHeadTimer)
    }

    // MARK: socket events

    /// The head timer fired; `inputBuffered`: part of a head has arrived.
    mutating func headTimerFired(inputBuffered: Bool) -> ActionList<Action> {
        switch phase {
        case .exchanging, .closed, .closingAfterFlush(exchangeKept: true), .readingHead(inputEnded: true):
            return ActionList()
        case .awaitingClientHello(let wait):
            if wait.upstream != nil { return ActionList(.startBlindTunnel) }
            return ActionList(.recordInterceptionFailure(.nothingSent), .close)
        case .readingHead(inputEnded: false), .held, .closingAfterFlush(exchangeKept: false):
            if case .handshaking = security {
                // A client that stalls mid-handshake leaves a record too, like one that refuses it.
                return ActionList(.recordInterceptionFailure(.notCompleted), .close)
            }
            // The last answer is being written (a 400, say): the buffered bytes it refused
            // get no 408 after it, and the flush poll ends a client that does not read.
            if isClosingAfterFlush { return ActionList() }
            return inputBuffered ? ActionList(.respondRequestTimeout) : ActionList(.close)
        }
    }

    /// Bytes arrived; `buffered` are unread, `maxHeaderBytes` is a head's worth.
    mutating func readable(buffered: Int, maxHeaderBytes: Int) -> ActionList<Action> {
        switch phase {
        case .closed: return ActionList()
        case .held:
            // What follows (a body, pipelined requests) waits; one readiness may have added up
            // to SocketReader's 1 MiB, so reading pauses past a head's worth.
            return buffered > maxHeaderBytes ? pauseReadingRequested() : ActionList()
        case .awaitingClientHello: return ActionList(.inspectFirstByte)
        case .exchanging, .closingAfterFlush(exchangeKept: true): return ActionList(.deliverToExchange)
        case .readingHead, .closingAfterFlush(exchangeKept: false): return ActionList(.parseHeads)
        }
    }

    /// The bufferevent reported an event. `exchangeRequestComplete`: whether the session's
    /// exchange (if any) holds a whole request; `inputBuffered`: unread bytes wait.
    mutating func socketEvent(eof: Bool, error: Bool, timeout: Bool, connected: Bool,
                              exchangeRequestComplete: Bool, inputBuffered: Bool) -> ActionList<Action> {
        if case .closed = phase { return ActionList() }
        if case .awaitingClientHello(let wait) = phase, eof || error {
            // With the upstream connected, the tunnel passes the close on and records it.
            if wait.upstream != nil { return ActionList(.startBlindTunnel) }
            return ActionList(.recordInterceptionFailure(.closedBeforeHello), .close)
        }
        if case .handshaking(let authority) = security {
            if connected { security = .established(authority); return ActionList() }
            return ActionList(.recordInterceptionFailure(.handshakeFailed), .close)
        }
        if connected { return ActionList() }
        if timeout {
            var actions = ActionList<Action>()
            if hasExchange { actions.append(.failExchange(.clientTimeout)) }
            actions.append(.close)
            return actions
        }
        if eof && !error {
            // Half-close: the client may still read the answers to what it sent, pipelined
            // requests included (they are answered in turn, then the connection closes).
            switch phase {
            case .held(let head, var input):
                // A held request is still answered; the release goes on from there.
                input.ended = true
                phase = .held(head, input)
                return ActionList()
            case .exchanging(var input):
                input.ended = true
                phase = .exchanging(input)
                if exchangeRequestComplete { return ActionList() }
            case .closingAfterFlush(let exchangeKept):
                if !exchangeKept || exchangeRequestComplete { return ActionList() }
            case .readingHead:
                phase = .readingHead(inputEnded: true)
                if inputBuffered { return ActionList(.answerBufferedThenClose) }
            case .awaitingClientHello, .closed:
                break
            }
        }
        var actions = ActionList<Action>()
        if hasExchange { actions.append(.failExchange(.clientAborted)) }
        actions.append(.close)
        return actions
    }

    // MARK: closing

    /// Close once the output is written. Nothing when closing or closed already.
    mutating func closeAfterFlush() -> ActionList<Action> {
        switch phase {
        case .closed, .closingAfterFlush:
            return ActionList()
        case .exchanging:
            phase = .closingAfterFlush(exchangeKept: true)
        case .held:
            // Never reached (a held session answers nothing), kept total.
            phase = .closingAfterFlush(exchangeKept: false)
        case .awaitingClientHello, .readingHead:
            phase = .closingAfterFlush(exchangeKept: false)
        }
        return ActionList(.closeAfterFlush)
    }

    /// What closing leaves to free: the wait's TLS object and upstream socket, a held
    /// request, the exchange.
    struct Leftovers {
        var ssl: OpaquePointer?
        var upstream: HandedOverSocket?
        var held: Bool
        var exchange: Bool
    }

    /// Closes; nil when already closed.
    mutating func close() -> Leftovers? {
        var leftovers = Leftovers(ssl: nil, upstream: nil, held: false, exchange: hasExchange)
        switch phase {
        case .closed: return nil
        case .awaitingClientHello(let wait):
            leftovers.ssl = wait.ssl
            leftovers.upstream = wait.upstream
        case .held: leftovers.held = true
        default: break
        }
        phase = .closed
        return leftovers
    }
}
