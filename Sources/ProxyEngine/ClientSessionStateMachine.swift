import HTTP1

/// The lifecycle of one client connection, without sockets: events in, actions out.
/// `ClientSession` parses heads, routes requests, owns the socket and the exchange, and
/// performs the actions.
///
/// Rules:
/// - Requests are answered strictly in order: a head is read only in `readingHead`;
///   while an exchange runs (`exchanging`), pipelined bytes wait in the input, read up to
///   a head's worth. The next head is parsed when the exchange finishes with keep-alive.
/// - `held`: a parsed request waits for the log to catch up (`log.whenBehind: wait`);
///   reading goes on up to a head's worth, so a reset is noticed; a half-close is answered
///   after the release.
/// - `awaitingClientHello`: a CONNECT was answered; the client's first bytes decide
///   (`ConnectPayloadStateMachine`) between TLS, HTTP decoded in this session, and a blind
///   tunnel. The TLS object (an intercepted host) and the upstream socket (a host whose
///   upstream was connected before the answer) are this state's, freed when the state is
///   left any other way. With an upstream waiting, its first byte, the client's close or
///   `clientIdleTimeout` make the tunnel blind.
/// - TLS with the client is `plain`, `handshaking` (requests then go to the intercepted
///   origin) or `established`; `plainInsideConnect`: plain HTTP/1 came through a CONNECT,
///   and its origin-form requests go to the CONNECT's origin. A handshake that fails,
///   stalls past `clientIdleTimeout`, or a connection that closes before the ClientHello
///   leaves a record and closes.
/// - The head timer (`clientIdleTimeout`) runs while waiting for a head: past it, a client
///   that sent part of one gets 408, an idle one is closed.
/// - A half-close (EOF) keeps the connection for the answers to what was sent, pipelined
///   requests included; the last answer says `Connection: close`, then the connection
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

    /// The payloads of the rare phases are boxed (`indirect`), so that the phase the hot
    /// path reads and copies is one word.
    enum Phase {
        case readingHead
        indirect case held(HTTPRequestHead)
        case exchanging
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
        case pauseReading
        /// Hand what the client sent to the exchange.
        case deliverToExchange
        case parseHeads
        case inspectFirstByte
        /// 408: part of a head arrived, not all of it, within `clientIdleTimeout`.
        case respondRequestTimeout
        case recordInterceptionFailure(InterceptionFailure)
        /// A CONNECT whose upstream was connected before the answer turned out blind (the
        /// origin spoke first, the client closed or stayed silent): hand both sockets to a tunnel.
        case startBlindTunnel
        /// End the exchange with this cause (`clientTimeout`, `clientAborted`).
        case failExchange(TransportError.Code)
        case answerBufferedThenClose
        /// As `answerBufferedThenClose`, on the next loop turn (after the answer's write returns).
        case answerBufferedThenCloseNextTurn
        /// A pipelined head is buffered: parse it on the next loop turn.
        case parseHeadsNextTurn
        /// Reading was paused for the exchange that just ended: turn it back on.
        case resumeReading
        /// Waiting for a head again: (re)start the head timer.
        case armHeadTimer
        /// Stop reading, close once the output is written (see `closeAfterFlush()`).
        case closeAfterFlush
        /// Shutting down with a request held: forget it and answer 503.
        case refuseHeldForShutdown
        case close
    }

    private(set) var phase: Phase = .readingHead
    private(set) var security: Security = .plain
    /// The client shut down its sending side: what it sent is answered, then the connection closes.
    private(set) var inputEnded = false
    /// Reading is off because the exchange's upstream cannot take more (backpressure).
    private(set) var readingPaused = false
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

    mutating func exchangeStarted() {
        if canReadHead { phase = .exchanging }
    }

    /// A request is parsed but must wait for the log.
    mutating func hold(_ head: HTTPRequestHead) {
        if canReadHead { phase = .held(head) }
    }

    /// The log caught up: the held request, to be started now (nil when there is none).
    mutating func release() -> HTTPRequestHead? {
        guard case .held(let head) = phase else { return nil }
        phase = .readingHead
        return head
    }

    /// The exchange is over (or Tapwire answered a request itself). `keepAlive`: the answer
    /// allows another request; `draining`: Tapwire is shutting down; `inputBuffered`: bytes
    /// of a further (pipelined) request wait in the input.
    ///
    /// Keep-alive goes back to reading heads, starting at once on what is buffered; a
    /// closing answer or a drain closes after the flush; after a half-close, what is
    /// buffered is answered and then the connection closes.
    mutating func exchangeFinished(keepAlive: Bool, draining: Bool, inputBuffered: Bool) -> ActionList<Action> {
        switch phase {
        case .exchanging: phase = .readingHead
        case .closingAfterFlush(exchangeKept: true): phase = .closingAfterFlush(exchangeKept: false)
        default: break
        }
        let wasPaused = readingPaused
        readingPaused = false
        guard keepAlive, !draining else { return ActionList(.closeAfterFlush) }
        // Closing or closed already: nothing more is read.
        guard case .readingHead = phase else { return ActionList() }
        if inputEnded {
            // Nothing more will arrive: answer what is buffered, then close.
            return inputBuffered ? ActionList(.answerBufferedThenCloseNextTurn) : ActionList(.closeAfterFlush)
        }
        var actions = ActionList<Action>()
        if wasPaused { actions.append(.resumeReading) }
        actions.append(.armHeadTimer)
        if inputBuffered { actions.append(.parseHeadsNextTurn) }
        return actions
    }

    /// After a half-close, the buffered heads were parsed (`answerBufferedThenClose`): when
    /// no request was started or held from them, nothing is left to answer.
    mutating func bufferedHeadsParsed() -> ActionList<Action> {
        switch phase {
        case .readingHead, .awaitingClientHello: return ActionList(.closeAfterFlush)
        case .held, .exchanging, .closingAfterFlush, .closed: return ActionList()
        }
    }

    /// Tapwire is shutting down: an idle connection closes (after what is being written),
    /// a held request is refused with 503, an exchange in flight finishes first.
    mutating func drain() -> ActionList<Action> {
        switch phase {
        case .held:
            phase = .readingHead
            return ActionList(.refuseHeldForShutdown)
        case .awaitingClientHello(let wait):
            // With its upstream connected, the CONNECT is a tunnel, which the shutdown ends
            // and records; else closed at once (`close` frees the wait's TLS object).
            return ActionList(wait.upstream != nil ? .startBlindTunnel : .close)
        case .readingHead, .closingAfterFlush(exchangeKept: false):
            return ActionList(.closeAfterFlush)
        case .exchanging, .closingAfterFlush(exchangeKept: true), .closed:
            return ActionList()
        }
    }

    /// The exchange took what the client sent; `requestComplete`: its request is whole, so
    /// `buffered` bytes are pipelined ones, which wait for the answer: past a head's worth
    /// (`maxHeaderBytes`), reading stops.
    mutating func exchangeTookInput(requestComplete: Bool, buffered: Int, maxHeaderBytes: Int) -> ActionList<Action> {
        guard hasExchange, requestComplete, buffered > maxHeaderBytes else { return ActionList() }
        return ActionList(.pauseReading)
    }

    /// The exchange asks for reading to stop (backpressure); whether it was on.
    mutating func pauseReading() -> Bool {
        guard !readingPaused else { return false }
        readingPaused = true
        return true
    }

    /// The exchange asks for reading to resume; whether it was paused.
    mutating func resumeReading() -> Bool {
        guard readingPaused else { return false }
        readingPaused = false
        return true
    }

    /// The socket went to a tunnel: the session ends without closing it.
    mutating func handedOver() {
        phase = .closed
    }

    // MARK: interception

    /// A CONNECT was answered: the client's first bytes are awaited within
    /// `clientIdleTimeout`, or looked at now when they are already buffered. From
    /// `exchanging` when the exchange connected the upstream before the answer (it is over).
    mutating func awaitClientHello(_ wait: ClientHelloWait, inputBuffered: Bool) -> ActionList<Action> {
        switch phase {
        case .readingHead: break
        case .exchanging where wait.upstream != nil: readingPaused = false
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
        phase = .readingHead
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
        case .exchanging, .closed, .closingAfterFlush(exchangeKept: true):
            return ActionList()
        case .awaitingClientHello(let wait):
            if wait.upstream != nil { return ActionList(.startBlindTunnel) }
            return ActionList(.recordInterceptionFailure(.nothingSent), .close)
        case .readingHead, .held, .closingAfterFlush(exchangeKept: false):
            if case .handshaking = security {
                // A client that stalls mid-handshake leaves a record too, like one that refuses it.
                return ActionList(.recordInterceptionFailure(.notCompleted), .close)
            }
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
            return buffered > maxHeaderBytes ? ActionList(.pauseReading) : ActionList()
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
            inputEnded = true
            // A held request is still answered; the release goes on from there.
            if isHeld { return ActionList() }
            if hasExchange && exchangeRequestComplete { return ActionList() }
            if !hasExchange && isClosingAfterFlush { return ActionList() }
            if !hasExchange && inputBuffered { return ActionList(.answerBufferedThenClose) }
        }
        var actions = ActionList<Action>()
        if hasExchange { actions.append(.failExchange(.clientAborted)) }
        actions.append(.close)
        return actions
    }

    // MARK: closing

    /// Close once the output is written; false when already closed.
    mutating func closeAfterFlush() -> Bool {
        switch phase {
        case .closed: return false
        case .exchanging, .closingAfterFlush(exchangeKept: true): phase = .closingAfterFlush(exchangeKept: true)
        case .held:
            // Never reached (a held session answers nothing), kept total.
            phase = .closingAfterFlush(exchangeKept: false)
        case .awaitingClientHello, .readingHead, .closingAfterFlush(exchangeKept: false):
            phase = .closingAfterFlush(exchangeKept: false)
        }
        return true
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
