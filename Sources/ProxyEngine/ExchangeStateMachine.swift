import HTTP1

/// The lifecycle of one request/response exchange, without sockets: events in, actions
/// out. `Exchange` parses, pumps bodies and talks to libevent as told; the bodies' framers
/// and captures stay there (they change with every chunk), the decisions live here.
///
/// Rules:
/// - `idle` → `connecting` (a new upstream connection) or straight to `exchanging` (a
///   pooled one) → `finished`, once. Nothing yields an action after `finished`.
/// - While connecting, a request body stays unread in the client's input (reading is
///   paused), so a failed connection loses none of it; a request without a body is whole
///   from its head on.
/// - `exchanging` pairs the request (`sending` its body, or `sent`) with the response
///   (`awaitingHead`, noting whether any byte came, or `streaming` its body) and the
///   `Stall` of the two bodies. The response may start before the request is sent.
/// - Backpressure: a body direction pauses when its destination's queue reaches
///   `highWaterBytes` and resumes when it drains; only a request being sent and a
///   response being streamed can be paused. While one is, the stall timer runs for the
///   one paused last (`upstreamReadTimeout` for a request body the origin does not take,
///   `clientTimeout` for an answer the client does not take): past it the exchange fails
///   and the client connection closes.
/// - Interim (1xx) answers go to the client, except to an HTTP/1.0 client; 101 is only
///   accepted when the client asked to upgrade, and hands both sockets to a tunnel.
/// - The client connection closes after the answer when the client asked, the answer is
///   close-delimited or dechunked for HTTP/1.0, the request was not sent whole, the
///   engine is draining, the client half-closed with nothing more buffered, or on any
///   failure once the answer has begun.
/// - A pooled connection the origin had closed (EOF before any response byte) is
///   retried once on a new connection, for a bodyless idempotent request only. What the
///   origin did to a connection (`upstreamEnded`) is its `Attempt`'s: the retry's
///   connection starts clean, and may go back to the pool.
/// - A failure before the answer began is answered: 504 for a timeout, 508 for a loop
///   back to this proxy, else 502. After it began, the client connection is closed.
/// - The upstream is returned to the pool only after a clean, whole exchange the origin
///   did not end (and that the driver finds with nothing left to send).
/// - The client connection's fate is decided once, at the end (`Outcome.closeClient`):
///   the client asked, the answer's head said `close` (kept in `streaming`), or the
///   ending forces it.
struct ExchangeStateMachine {
    /// One upstream connection's try at the exchange.
    struct Attempt: Equatable {
        /// The upstream connection came from the pool.
        var reused: Bool
        /// This is the second connection, after a pooled one the origin had closed.
        var retried: Bool
        /// The origin closed (or reset) this connection: it never goes back to the pool.
        var upstreamEnded = false
    }

    enum Request: Equatable {
        case sending
        case sent
    }

    enum Response: Equatable {
        case awaitingHead(bytesSeen: Bool)
        /// `dechunk`: a chunked answer to an HTTP/1.0 client goes as its payload, ended by
        /// the close. `closesClient`: its head told the client the connection closes.
        case streaming(dechunk: Bool, closesClient: Bool)
    }

    enum StallSide { case request, response }

    /// Which body directions are paused for backpressure. `request` only while the request
    /// is `sending`, `response` only while the response is `streaming`. With both paused,
    /// `timing` is the one paused last: its limit is the stall timer's, its stall the one
    /// reported.
    enum Stall: Equatable {
        case none
        case request
        case response
        case both(timing: StallSide)

        var requestPaused: Bool {
            switch self {
            case .request, .both: return true
            case .none, .response: return false
            }
        }

        var responsePaused: Bool {
            switch self {
            case .response, .both: return true
            case .none, .request: return false
            }
        }

        /// The side the stall timer runs for: the paused one, the later of two.
        var timing: StallSide? {
            switch self {
            case .none: return nil
            case .request: return .request
            case .response: return .response
            case .both(let side): return side
            }
        }

        /// `side` paused now (or again): it is timed from now on.
        func pausing(_ side: StallSide) -> Stall {
            switch (self, side) {
            case (.none, .request), (.request, .request): return .request
            case (.none, .response), (.response, .response): return .response
            default: return .both(timing: side)
            }
        }

        /// `side` resumed: the other, if paused, is timed again.
        func resuming(_ side: StallSide) -> Stall {
            switch (self, side) {
            case (.request, .request), (.response, .response): return .none
            case (.both, .request): return .response
            case (.both, .response): return .request
            default: return self
            }
        }
    }

    enum State: Equatable {
        case idle
        case connecting(Attempt)
        case exchanging(Attempt, Request, Response, Stall)
        /// Ended without a failure. `connectionReused`: the last attempt's upstream came
        /// from the pool (the record says so).
        case finished(Outcome, connectionReused: Bool)
        /// Ended with a failure, which only this state carries. Boxed: its strings are
        /// copied on this rare path only, and the hot states stay a few plain bytes.
        indirect case failed(Outcome, connectionReused: Bool, Failure)
        /// The exchange's sockets went to a tunnel (a WebSocket upgrade), or it was a
        /// CONNECT whose connect finished: the tunnel's record tells the rest.
        case tunnelled(connectionReused: Bool)
    }

    /// Why an exchange failed, and the answer the client gets when its answer had not begun.
    struct Failure: Equatable {
        var error: TransportError
        var answer: ErrorAnswer?
    }

    /// A short error answer to the client.
    struct ErrorAnswer: Equatable {
        var status: ProxyStatus
        var detail: String
    }

    /// How the exchange ends, in plain values (the action carries it); whether it failed,
    /// and how, is the state's (`failure`).
    struct Outcome: Equatable {
        /// As far as the exchange goes, the upstream may go back to the pool (the driver
        /// still checks the connection itself).
        var upstreamReusable: Bool
        /// The answer was paused for backpressure: the client's write watermark is raised.
        var responseWasPaused: Bool
        var closeClient: Bool
    }

    /// How the exchange ends, with the failure's details.
    struct Ending: Equatable {
        var error: TransportError?
        var answer: ErrorAnswer?
        /// As far as the exchange goes, the upstream may go back to the pool (the driver
        /// still checks the connection itself).
        var upstreamReusable: Bool
        /// The answer was paused for backpressure: the client's write watermark is raised.
        var responseWasPaused: Bool
        var closeClient: Bool
    }

    /// The limits the machine's decisions and messages depend on.
    struct Limits: Equatable {
        var highWaterBytes: Int
        var upstreamReadTimeout: Double
        var clientIdleTimeout: Double
    }

    /// The Connection field of a forwarded response head.
    enum ConnectionField: Equatable {
        case none, close, keepAlive
    }

    /// Plain values only (no strings), so that returning and iterating them copies bytes
    /// and nothing else; an ending's details are in `ending`.
    enum Action: Equatable {
        case pauseClientReading
        /// Open a new upstream connection.
        case connect
        /// Take the connection as this exchange's and send the head; then, with
        /// `bodyFollows`, stream the request body, else the request is sent.
        case attach(bodyFollows: Bool)
        /// The request is whole upstream: the answer's read timeout starts.
        case requestSent
        case pumpRequest
        case pauseRequestBody
        case resumeRequestBody
        case noteFirstResponseByte
        case forwardInterim
        /// Send the response head with this Connection field.
        case forwardResponseHead(connection: ConnectionField, dechunk: Bool)
        case pumpResponse
        case pauseResponseBody
        case resumeResponseBody
        case startWebSocket
        /// Drop the pooled connection the origin had closed and connect again.
        case retry
        case closeUpstream
        /// The finished exchange's upstream is whole and idle: it goes back to the pool.
        case returnToPool
        /// The exchange ended; a failure's error and answer are in `failure`.
        case finish(Outcome)
        /// Close the client connection at once (after a stall).
        case closeClient
    }

    /// How a body pump went.
    enum Progress: Equatable {
        case complete
        /// The body broke its framing.
        case malformed(HTTPParseError)
        /// More to come; the destination holds `queued` bytes.
        case partial(queued: Int)
    }

    private(set) var state: State = .idle
    /// How the exchange failed, once it has.
    var failure: Failure? {
        if case .failed(_, _, let failure) = state { return failure } else { return nil }
    }
    /// How the exchange ended, once it has (not for a tunnel).
    var ending: Ending? {
        let outcome: Outcome
        switch state {
        case .finished(let o, _), .failed(let o, _, _): outcome = o
        case .idle, .connecting, .exchanging, .tunnelled: return nil
        }
        let failure = self.failure
        return Ending(error: failure?.error, answer: failure?.answer, upstreamReusable: outcome.upstreamReusable,
                      responseWasPaused: outcome.responseWasPaused, closeClient: outcome.closeClient)
    }
    /// Whether the upstream of the last attempt came from the pool (kept past the end).
    var connectionReused: Bool {
        switch state {
        case .idle: return false
        case .connecting(let a), .exchanging(let a, _, _, _): return a.reused
        case .finished(_, let reused), .failed(_, let reused, _), .tunnelled(let reused): return reused
        }
    }
    let limits: Limits
    let hasBody: Bool
    let isHTTP10: Bool
    let wantsUpgrade: Bool
    /// The request asked for the connection to close after the answer.
    let clientWantsClose: Bool
    /// The client half-closed before the exchange could read its body (its request was
    /// held for the log): the body can only be what is already buffered.
    let clientEndedBeforeStart: Bool

    init(limits: Limits, hasBody: Bool, isHTTP10: Bool, wantsUpgrade: Bool, clientWantsClose: Bool,
         clientEndedBeforeStart: Bool = false) {
        self.limits = limits
        self.hasBody = hasBody
        self.isHTTP10 = isHTTP10
        self.wantsUpgrade = wantsUpgrade
        self.clientWantsClose = clientWantsClose
        self.clientEndedBeforeStart = clientEndedBeforeStart
    }

    // MARK: queries

    var isFinished: Bool {
        switch state {
        case .finished, .failed, .tunnelled: return true
        case .idle, .connecting, .exchanging: return false
        }
    }

    var attempt: Attempt? {
        switch state {
        case .connecting(let a), .exchanging(let a, _, _, _): return a
        case .idle, .finished, .failed, .tunnelled: return nil
        }
    }

    /// The head went out on an attached upstream and the body is still being sent.
    var isSendingRequest: Bool {
        if case .exchanging(_, .sending, _, _) = state { return true } else { return false }
    }

    var isAwaitingResponseHead: Bool {
        if case .exchanging(_, _, .awaitingHead, _) = state { return true } else { return false }
    }

    var isStreamingResponse: Bool {
        if case .exchanging(_, _, .streaming, _) = state { return true } else { return false }
    }

    var isDechunking: Bool {
        if case .exchanging(_, _, .streaming(dechunk: true, _), _) = state { return true } else { return false }
    }

    /// The request is whole upstream.
    var requestSent: Bool {
        if case .exchanging(_, .sent, _, _) = state { return true } else { return false }
    }

    /// A request without a body is whole once its head is read, even while connecting.
    var isRequestComplete: Bool { requestSent || !hasBody }

    /// Whether a request with `method` may be sent twice (RFC 9110 §9.2.2). Asked only when
    /// a retry is in question, not for every exchange.
    static func isIdempotent(_ method: String) -> Bool {
        switch method {
        case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE": return true
        default: return false
        }
    }

    /// The status an exchange that failed before its answer began gets.
    static func answer(for error: TransportError) -> ProxyStatus { error.code.statusForClient }

    // MARK: starting

    /// `pooled`: a pooled connection to the origin was taken.
    mutating func begin(pooled: Bool) -> ActionList<Action> {
        guard state == .idle else { return ActionList() }
        if pooled {
            return attach(Attempt(reused: true, retried: false))
        }
        state = .connecting(Attempt(reused: false, retried: false))
        return hasBody ? ActionList(.pauseClientReading, .connect) : ActionList(.connect)
    }

    mutating func connected() -> ActionList<Action> {
        guard case .connecting(let a) = state else { return ActionList() }
        return attach(a)
    }

    mutating func connectFailed(_ error: TransportError) -> ActionList<Action> {
        guard case .connecting = state else { return ActionList() }
        return failBeforeResponse(error)
    }

    private mutating func attach(_ a: Attempt) -> ActionList<Action> {
        state = .exchanging(a, hasBody ? .sending : .sent, .awaitingHead(bytesSeen: false), .none)
        return ActionList(.attach(bodyFollows: hasBody))
    }

    // MARK: request body

    /// The client sent more (or its bytes are to be forwarded now).
    mutating func clientReadable() -> ActionList<Action> {
        isSendingRequest ? ActionList(.pumpRequest) : ActionList()
    }

    /// The driver pumped the request body; `clientInputEmpty`: nothing is left unread.
    mutating func requestBodyPumped(_ progress: Progress, clientInputEmpty: Bool) -> ActionList<Action> {
        guard case .exchanging(let a, .sending, let response, let stall) = state else { return ActionList() }
        switch progress {
        case .complete:
            state = .exchanging(a, .sent, response, stall.resuming(.request))
            return ActionList(.requestSent)
        case .malformed(let e):
            let error = TransportError(.malformedRequest, e.reason)
            if case .streaming = response { return finish(error: error, answer: nil, closingClient: true) }
            return finish(error: error, answer: ErrorAnswer(status: e.answerStatus, detail: e.reason), closingClient: true)
        case .partial(let queued):
            var actions = ActionList<Action>()
            if queued >= limits.highWaterBytes {
                state = .exchanging(a, .sending, response, stall.pausing(.request))
                actions.append(.pauseRequestBody)
            }
            if clientEndedBeforeStart && clientInputEmpty {
                // Everything the client sent before its half-close is forwarded and the body
                // is still short: no more is coming.
                actions.append(contentsOf: clientFailed(TransportError(.clientAborted, "the client closed the connection mid-exchange")))
            }
            return actions
        }
    }

    /// The upstream's output drained below its mark.
    mutating func upstreamDrained() -> ActionList<Action> {
        guard case .exchanging(let a, .sending, let response, let stall) = state, stall.requestPaused else { return ActionList() }
        state = .exchanging(a, .sending, response, stall.resuming(.request))
        return ActionList(.resumeRequestBody, .pumpRequest)
    }

    /// The direction still paused, if any (the one paused last of two): the stall timer
    /// must keep running for it when the other direction resumes (one timer serves both,
    /// and a paused side has no read timeout).
    var stalledSide: StallSide? {
        guard case .exchanging(_, _, _, let stall) = state else { return nil }
        return stall.timing
    }

    /// The client reset, timed out, or the engine cut the exchange (`error` says which).
    mutating func clientFailed(_ error: TransportError) -> ActionList<Action> {
        guard !isFinished, state != .idle else { return ActionList() }
        return finish(error: error, answer: nil, closingClient: true)
    }

    // MARK: response

    /// Bytes from the origin are buffered.
    mutating func upstreamBytesArrived() -> ActionList<Action> {
        guard case .exchanging(let a, let request, .awaitingHead(bytesSeen: false), let stall) = state else { return ActionList() }
        state = .exchanging(a, request, .awaitingHead(bytesSeen: true), stall)
        return ActionList(.noteFirstResponseByte)
    }

    /// The origin's head or body broke the protocol (`message` says how).
    mutating func malformedResponse(_ message: String) -> ActionList<Action> {
        guard case .exchanging(_, _, let response, _) = state else { return ActionList() }
        let error = TransportError(.malformedResponse, message)
        if case .streaming = response { return finish(error: error, answer: nil, closingClient: true) }
        return failBeforeResponse(error)
    }

    /// The parent proxy answered the request in place of the origin with a refusal that is
    /// not passed on (its 407: the credentials are Tapwire's concern, not the client's).
    mutating func parentRefused(_ error: TransportError) -> ActionList<Action> {
        guard case .exchanging(_, _, .awaitingHead, _) = state else { return ActionList() }
        return failBeforeResponse(error)
    }

    /// A whole response head with `status`; `framing` its body's, for a final answer.
    /// `draining`: the engine is shutting down; `clientSentLast`: the client half-closed and
    /// nothing more of it is buffered.
    mutating func responseHead(status: Int, framing: BodyFraming?, draining: Bool, clientSentLast: Bool) -> ActionList<Action> {
        guard case .exchanging(let a, let request, .awaitingHead, let stall) = state else { return ActionList() }
        if status == 101 {
            guard wantsUpgrade else { return malformedResponse("the origin switched protocols without being asked") }
            state = .tunnelled(connectionReused: a.reused)
            return ActionList(.startWebSocket)
        }
        if status < 200 {
            // An HTTP/1.0 client would take an interim answer for the final one (RFC 9110 §15.2).
            return isHTTP10 ? ActionList() : ActionList(.forwardInterim)
        }
        guard let framing else { return ActionList() }
        // The request goes upstream as HTTP/1.1, so the origin may chunk; an HTTP/1.0 client
        // gets the payload without Transfer-Encoding and the end of the body by the close,
        // as nginx and squid do (RFC 9112 §6.1).
        let dechunk = framing == .chunked && isHTTP10
        let closesClient = clientWantsClose || framing == .closeDelimited || dechunk || request != .sent || draining
            || clientSentLast
        state = .exchanging(a, request, .streaming(dechunk: dechunk, closesClient: closesClient), stall)
        let connection: ConnectionField = closesClient ? .close : isHTTP10 ? .keepAlive : .none
        return ActionList(.forwardResponseHead(connection: connection, dechunk: dechunk))
    }

    mutating func responseBodyPumped(_ progress: Progress) -> ActionList<Action> {
        guard case .exchanging(let a, let request, let response, let stall) = state, case .streaming = response else {
            return ActionList()
        }
        switch progress {
        case .complete:
            return finish(error: nil, answer: nil)
        case .malformed(let e):
            return malformedResponse("malformed response body from the origin: \(e.reason)")
        case .partial(let queued):
            guard queued >= limits.highWaterBytes else { return ActionList() }
            state = .exchanging(a, request, response, stall.pausing(.response))
            return ActionList(.pauseResponseBody)
        }
    }

    /// The client's output drained below its mark.
    mutating func clientDrained() -> ActionList<Action> {
        guard case .exchanging(let a, let request, let response, let stall) = state, stall.responsePaused else {
            return ActionList()
        }
        state = .exchanging(a, request, response, stall.resuming(.response))
        return ActionList(.resumeResponseBody, .pumpResponse)
    }

    /// A paused direction took nothing for its whole limit.
    mutating func stallTimerFired() -> ActionList<Action> {
        guard case .exchanging(_, _, _, let stall) = state, let side = stall.timing else { return ActionList() }
        // The stall armed last is the one reported.
        let error = side == .response
            ? TransportError(.clientTimeout, "the client took none of the answer for \(limits.clientIdleTimeout) s")
            : TransportError(.upstreamTimeout, "the origin took none of the request body for \(limits.upstreamReadTimeout) s")
        var actions = finish(error: error, answer: nil, closingClient: true)
        actions.append(.closeClient)
        return actions
    }

    /// The origin sent nothing for `upstreamReadTimeout` while an answer was due.
    mutating func upstreamTimedOut() -> ActionList<Action> {
        guard case .exchanging(_, _, let response, _) = state else { return ActionList() }
        let error = TransportError(.upstreamTimeout, "the origin sent nothing for \(limits.upstreamReadTimeout) s")
        if case .streaming = response { return finish(error: error, answer: nil, closingClient: true) }
        return failBeforeResponse(error)
    }

    /// The origin closed or reset the connection (after what it had sent was handled).
    /// `cleanEndOfBody`: the answer's framing ends at the close, and it was not a reset;
    /// `idempotent`: the request's method may be sent twice; `cause`: what ended it, when
    /// known better than "closed" (an HTTP/2 origin's stream reset).
    mutating func upstreamClosed(reset: Bool, cleanEndOfBody: Bool, idempotent: Bool, cause: String? = nil) -> ActionList<Action> {
        upstreamEnded()
        guard case .exchanging(let a, _, let response, _) = state else { return ActionList() }
        switch response {
        case .streaming:
            var actions: ActionList<Action> = ActionList(.closeUpstream)
            actions.append(contentsOf: finish(error: cleanEndOfBody ? nil : TransportError(.upstreamReset,
                cause ?? "the origin closed the connection before the body was complete"), answer: nil, closingClient: true))
            return actions
        case .awaitingHead(let bytesSeen):
            if !bytesSeen && a.reused && !a.retried && idempotent && !hasBody {
                // A pooled connection the origin had already closed: try once more on a fresh one.
                state = .connecting(Attempt(reused: false, retried: true))
                return ActionList(.retry)
            }
            return failBeforeResponse(bytesSeen
                ? TransportError(.malformedResponse, "the origin closed the connection inside the response head")
                : TransportError(.upstreamReset, cause ?? "the origin closed the connection without answering"))
        }
    }

    /// The origin ended the connection (an error or EOF), noted before the driver handles
    /// what was buffered: however the exchange ends, this connection is not pooled. No
    /// action: `upstreamClosed` follows once the buffered bytes are handled.
    mutating func upstreamEnded() {
        switch state {
        case .connecting(var a):
            a.upstreamEnded = true
            state = .connecting(a)
        case .exchanging(var a, let request, let response, let stall):
            a.upstreamEnded = true
            state = .exchanging(a, request, response, stall)
        case .idle, .finished, .failed, .tunnelled:
            break
        }
    }

    // MARK: ending

    /// A failure before any response head reached the client: answered with its status.
    private mutating func failBeforeResponse(_ error: TransportError) -> ActionList<Action> {
        finish(error: error, answer: ErrorAnswer(status: Self.answer(for: error), detail: error.message),
               closingClient: !requestSent)
    }

    /// `closingClient`: the ending closes the client connection, whatever the request and
    /// the answer's head said.
    private mutating func finish(error: TransportError?, answer: ErrorAnswer?, closingClient: Bool = false) -> ActionList<Action> {
        var wasPaused = false, reusable = false, closeClient = closingClient || clientWantsClose
        if case .exchanging(let a, let request, let response, let stall) = state {
            wasPaused = stall.responsePaused
            reusable = error == nil && request == .sent && !a.upstreamEnded
            if case .streaming(_, closesClient: true) = response { closeClient = true }
        }
        let outcome = Outcome(upstreamReusable: reusable, responseWasPaused: wasPaused, closeClient: closeClient)
        if let error {
            state = .failed(outcome, connectionReused: connectionReused, Failure(error: error, answer: answer))
        } else {
            state = .finished(outcome, connectionReused: connectionReused)
        }
        return ActionList(.finish(outcome))
    }

    /// The finished exchange lets go of its upstream. The driver reports what it alone
    /// sees: `responseAllowsReuse`, a final answer without `Connection: close`;
    /// `responseComplete`, its framing ended; `connectionIdle`, the connection is open with
    /// nothing left to send; `draining`, Tapwire is shutting down.
    mutating func releaseUpstream(responseAllowsReuse: Bool, responseComplete: Bool, connectionIdle: Bool,
                                  draining: Bool) -> ActionList<Action> {
        guard case .finished(let outcome, _) = state, outcome.upstreamReusable,
              responseAllowsReuse, responseComplete, connectionIdle, !draining else { return ActionList(.closeUpstream) }
        return ActionList(.returnToPool)
    }

    // MARK: CONNECT

    /// A CONNECT tunnel's upstream is being connected.
    mutating func beginTunnel() {
        if state == .idle { state = .connecting(Attempt(reused: false, retried: false)) }
    }

    /// The tunnel's connect finished; whether the exchange was still waiting for it.
    mutating func tunnelConnectFinished() -> Bool {
        guard case .connecting = state else { return false }
        state = .tunnelled(connectionReused: false)
        return true
    }
}
