import CLibevent
import Foundation
import HTTP1

/// One request/response exchange on a client session: connects (or reuses) the
/// upstream, forwards the rewritten head, streams both bodies with backpressure,
/// and hands a `CapturedExchange` to the sink when it ends, however it ends.
/// Drives an `ExchangeStateMachine`, which states the rules; this class parses heads,
/// pumps bodies and keeps what changes with every chunk (framers, captures, the clock).
final class Exchange<Session: ExchangeClient>: UpstreamOwner {
    /// Strong on purpose: the session drops its exchange when it ends, which breaks the
    /// cycle; an `unowned` reference would take a slow-path refcount on every access.
    /// Generic rather than an existential so the HTTP/1.1 path stays statically dispatched.
    let session: Session
    let head: HTTPRequestHead
    let authority: HTTPAuthority
    let originTarget: String
    let requestFraming: BodyFraming
    private var requestFramer: BodyFramer
    /// Unchecked: the machine's methods never call out, so no two accesses can overlap,
    /// and the runtime's exclusivity bookkeeping cost more than the machine's work.
    @exclusivity(unchecked) private var machine: ExchangeStateMachine
    private var upstream: UpstreamConnection?
    private var responseHead: HTTPResponseHead?
    /// The response's header fields as an HTTP/2 origin sent them, for the record.
    private var originResponseHeaders: HTTPHeaders?
    private var responseFramer: BodyFramer?
    /// Resumes the scan of a response head that arrives in pieces (interim heads
    /// included); the upstream input only grows until a head is drained.
    private var responseHeadParser = HTTPHeadParser()
    private var requestCapture = CapturedBody()
    private var responseCapture = CapturedBody()
    private var clock = ExchangeClock()
    private let wall0: Double
    private let mono0: Double
    /// While one side waits for the other to drain (backpressure) no read timeout runs on
    /// either, so a peer that stopped reading would hold both sockets and a connection slot
    /// for good. Armed at each pause, cancelled at the resume.
    private var stallTimer: LoopTimer?

    /// Borrowed, not returned: a getter returned the whole struct through the client's
    /// witness table, retaining and releasing its arrays at every limit read on the hot path.
    var config: EngineConfiguration { _read { yield session.engine.configuration } }
    var engine: ProxyEngine { session.engine }

    /// The URL the record shows: the absolute-form target, or https://host/path when intercepted.
    let url: String
    /// The Host value sent upstream instead of the authority's (a reverse listener's `keepHost`).
    var forwardedHost: String?

    /// - Parameter clientEnded: the client half-closed while this request was held
    ///   (`log.whenBehind: wait`), before the exchange could read its body: the body can
    ///   only be what is buffered, which the pump forwards once an upstream is attached,
    ///   and then judges.
    init(session: Session, head: HTTPRequestHead, authority: HTTPAuthority, originTarget: String, framing: BodyFraming,
         url: String? = nil, clientEnded: Bool = false) {
        self.session = session
        self.url = url ?? head.target
        self.head = head
        self.authority = authority
        self.originTarget = originTarget
        self.requestFraming = framing
        self.requestFramer = BodyFramer(framing)
        wall0 = Date().timeIntervalSince1970
        mono0 = EventLoop.monotonicNow()
        clock.requestStart = wall0
        // Upgrades are forwarded in plain HTTP and inside an intercepted TLS stream alike (the
        // tunnel after the 101 moves bytes between bufferevents, TLS filters included). An
        // HTTP/1.0 request's Upgrade, and `Upgrade: h2c`, go on without it (`forwardsUpgrade`).
        let wantsUpgrade = head.forwardsUpgrade
        let engine = session.engine
        machine = ExchangeStateMachine(
            limits: .init(highWaterBytes: engine.configuration.highWaterBytes, upstreamReadTimeout: engine.configuration.upstreamReadTimeout,
                          clientIdleTimeout: engine.configuration.clientIdleTimeout),
            hasBody: framing != .none, isHTTP10: head.version == .http1_0,
            wantsUpgrade: wantsUpgrade, clientWantsClose: head.wantsClose, clientEndedBeforeStart: clientEnded)
    }

    private func now() -> Double { wall0 + (EventLoop.monotonicNow() - mono0) }

    // MARK: performing the machine's actions

    private func perform(_ actions: ActionList<ExchangeStateMachine.Action>) {
        for action in actions {
            switch action {
            case .pauseClientReading:
                // A body stays in the client's buffer until an upstream is ready, so a failed
                // address can be retried without losing bytes.
                session.pauseReading()
            case .connect:
                connectNew()
            case .attach(let bodyFollows):
                attach(bodyFollows: bodyFollows)
            case .requestSent:
                requestSent()
            case .pumpRequest:
                pumpRequest()
            case .pauseRequestBody:
                guard let c = upstream, let bev = c.bev else { break }
                session.pauseReading()
                bufferevent_setwatermark(bev, Int16(EV_WRITE), config.highWaterBytes / 2, 0)
                armStallTimer(after: config.upstreamReadTimeout)
            case .resumeRequestBody:
                guard let bev = upstream?.bev else { break }
                keepStallTimerForPausedSide()
                bufferevent_setwatermark(bev, Int16(EV_WRITE), 0, 0)
                session.resumeReading()
            case .noteFirstResponseByte:
                clock.firstResponseByte = now()
            case .forwardInterim:
                guard let rh = pendingHead else { break }
                // 100 Continue and other interim answers go to the client as they are.
                var interim = rh
                interim.headers = rh.headers.removingHopByHop(keepUpgrade: false)
                session.forwardInterim(interim)
            case .forwardResponseHead(let connection, let dechunk):
                guard let rh = responseHead else { break }
                let field: String? = switch connection { case .none: nil; case .close: "close"; case .keepAlive: "keep-alive" }
                session.forwardResponseHead(rh, connection: field, droppingTransferEncoding: dechunk)
            case .pumpResponse:
                pumpResponse()
            case .pauseResponseBody:
                guard let c = upstream, session.isOpen else { break }
                c.setReading(false)
                session.watchOutputDrain(below: config.highWaterBytes / 2)
                armStallTimer(after: config.clientIdleTimeout)
            case .resumeResponseBody:
                guard let c = upstream, session.isOpen else { break }
                keepStallTimerForPausedSide()
                session.watchOutputDrain(below: nil)
                c.setReading(true)
            case .startWebSocket:
                if let rh = pendingHead, let c = upstream { startWebSocket(rh, c) }
            case .retry:
                if let c = upstream {
                    c.owner = nil
                    c.close()
                }
                upstream = nil
                connectNew()
            case .closeUpstream:
                upstream?.close()
            case .returnToPool:
                if let c = upstream { session.loop.pool.put(c, idleTimeout: config.upstreamIdleTimeout) }
            case .finish(let outcome):
                finish(outcome)
            case .closeClient:
                session.close()
            }
        }
    }

    // MARK: starting

    func begin() {
        if !machine.wantsUpgrade, let pooled = session.loop.pool.take(authority) {
            upstream = pooled
            perform(machine.begin(pooled: true))
            return
        }
        perform(machine.begin(pooled: false))
    }

    private func connectNew() {
        clock.connectStart = now()
        connectOrWait()
    }

    /// A connection to this origin that may turn out HTTP/2 is handshaking: wait for it
    /// rather than open another (see `UpstreamPool.waitForHandshake`); else connect.
    private func connectOrWait() {
        if !machine.wantsUpgrade, authority.scheme == "https", session.loop.pool.isHandshakingHTTP2(authority) {
            // Strong: the pool holds the waiter at most until that handshake ends.
            session.loop.pool.waitForHandshake(authority) { [self] in handshakeAwaited() }
            return
        }
        connect()
    }

    /// The handshake this exchange waited for ended: a stream on its connection if it is
    /// HTTP/2 with room, else a connection of its own (or another wait, if one began meanwhile).
    private func handshakeAwaited() {
        guard !machine.isFinished, upstream == nil else { return }
        if let shared = session.loop.pool.take(authority) {
            upstream = shared
            via = shared.via
            clock.connected = now()
            perform(machine.connected())
            return
        }
        connectOrWait()
    }

    private func connect() {
        // An upgrade needs HTTP/1.1; any other request can go to an origin that picks h2.
        let c = UpstreamConnection(loop: session.loop, authority: authority, offersHTTP2: !machine.wantsUpgrade)
        upstream = c
        via = c.via
        c.connect(timeout: config.connectTimeout, isOwnListener: engine.isOwnListener, phase: { [weak self] phase in
            guard let self else { return }
            switch phase {
            // metrics.dns is null when no lookup was made (a numeric host), as in the spec's example.
            case .resolved(let lookedUp): if lookedUp { self.clock.dnsDone = self.now() }
            case .tcpConnected: self.clock.connected = self.now()
            }
        }) { [weak self] result in
            guard let self, !self.machine.isFinished else { return }
            switch result {
            case .success:
                // Through a parent, `connected` (TCP with the parent) is also reported for plain
                // HTTP: without TLS with the origin, connecting ends here, handshakes included.
                if self.clock.connected == nil || self.authority.scheme != "https" { self.clock.connected = self.now() } else { self.clock.tlsDone = self.now() }
                self.perform(self.machine.connected())
            case .failure(let error):
                self.parentPage = c.parentAnswer
                self.perform(self.machine.connectFailed(error))
            }
        }
    }

    private func attach(bodyFollows: Bool) {
        guard let c = upstream else { return }
        upstreamAddressText = c.addressText
        upstreamSpeaksHTTP2 = c.speaksHTTP2
        via = c.via
        c.owner = self
        // The read timeout waits for an answer: it starts once the request is sent, so a
        // long upload is not cut by it (writes do not reset libevent's read timeout).
        c.setReadTimeout(bodyFollows ? nil : config.upstreamReadTimeout)
        if let bev = c.bev {
            if let parent = c.parent, c.forwardsAbsoluteForm {
                ParentRequestHead.write(head, authority: authority, originTarget: originTarget, parent: parent,
                                        keepUpgrade: machine.wantsUpgrade, host: forwardedHost) { c.stage(capacity: $0, bev, $1) }
            } else {
                head.writeForwardedWireForm(authority: authority, originTarget: originTarget, keepUpgrade: machine.wantsUpgrade,
                                            host: forwardedHost) {
                    c.stage(capacity: $0, bev, $1)
                }
            }
        }
        if !bodyFollows {
            requestSent()
            c.flush()
        } else {
            session.resumeReading()
            session.setClientReadTimeout(config.clientIdleTimeout)
            pumpRequest()
        }
        if let input = c.input, evbuffer_get_length(input) > 0 { upstreamReadable(c) }
    }

    /// Pipelined requests behind this one simply wait in the client's input buffer:
    /// reading stays on, so a client that closes is still noticed.
    private func requestSent() {
        clock.requestSent = now()
        session.setClientReadTimeout(nil)
        if requestFraming != .none { upstream?.setReadTimeout(config.upstreamReadTimeout) }
    }

    /// A request without a body is complete from its head on, even while the upstream
    /// connects (DNS, connect: up to connectTimeout): what the client sends after the head
    /// is then read only up to a head's worth.
    var isRequestComplete: Bool { machine.isRequestComplete }

    // MARK: request body

    func clientReadable() {
        guard upstream?.bev != nil else { return }
        perform(machine.clientReadable())
    }

    private func pumpRequest() {
        guard machine.isSendingRequest, let input = session.clientInput, let c = upstream, let out = c.output else { return }
        let before = evbuffer_get_length(input)
        let progress: ExchangeStateMachine.Progress
        do {
            let done = try BodyPump.pump(from: input, to: out, framer: &requestFramer, capture: &requestCapture,
                                         captureLimit: config.captureRequestBodies ? config.captureMaxBodyBytes : 0)
            engine.metrics.bytesFromClients.add(before - evbuffer_get_length(input))
            session.requestBodyTaken()
            c.flush()
            progress = done ? .complete : .partial(queued: c.bev != nil ? c.queuedOutputLength : 0)
        } catch {
            progress = .malformed(error)
        }
        perform(machine.requestBodyPumped(progress, clientInputEmpty: evbuffer_get_length(input) == 0))
    }

    func upstreamWritable(_ connection: UpstreamConnection) {
        guard connection.bev != nil else { return }
        perform(machine.upstreamDrained())
    }

    /// The client half-closed; whether this exchange can still complete (the session
    /// closes the connection once the requests it already holds are answered).
    func clientEOF() -> Bool { machine.isRequestComplete }

    func clientFailed(_ error: TransportError) {
        perform(machine.clientFailed(error))
    }

    /// The session is going away: account for the exchange and drop the upstream.
    func abandon() {
        perform(machine.clientFailed(TransportError(.clientAborted, "the client closed the connection mid-exchange")))
    }

    // MARK: response

    /// The head being handled by the machine (interim, or 101).
    private var pendingHead: HTTPResponseHead?

    func upstreamReadable(_ c: UpstreamConnection) {
        guard !machine.isFinished, let input = c.input else { return }
        // Interim answers and the head are staged; whatever was staged goes out in one write.
        defer { session.flush() }
        if evbuffer_get_length(input) > 0 { perform(machine.upstreamBytesArrived()) }
        while machine.isAwaitingResponseHead {
            let available = evbuffer_get_length(input)
            if available == 0 { return }
            let n = min(available, config.maxHeaderBytes + 4)
            guard let p = evbuffer_pullup(input, n) else { return }
            let parsed: HeadParseResult<HTTPResponseHead>
            do {
                parsed = try responseHeadParser.parseResponseHead(UnsafeRawBufferPointer(start: p, count: n), maxHeadBytes: config.maxHeaderBytes)
            } catch {
                perform(machine.malformedResponse("malformed response head from the origin: \(error.reason)"))
                return
            }
            guard case .complete(let rh, let length) = parsed else { return }
            if rh.status == 407, c.forwardsAbsoluteForm, let parent = c.parent {
                let why = parent.credentials == nil ? "asks for credentials and none are set" : "refused the credentials"
                perform(machine.parentRefused(TransportError(.upstreamProxyAuthFailed,
                    "the parent proxy \(parent.via) \(why) (407 \(rh.reason))")))
                return
            }
            evbuffer_drain(input, length)
            engine.metrics.bytesFromUpstreams.add(length)
            var framing: BodyFraming?
            if rh.status >= 200 && rh.status != 101 {
                do { framing = try rh.bodyFraming(requestMethod: head.method) } catch {
                    perform(machine.malformedResponse("malformed response framing from the origin: \(error.reason)"))
                    return
                }
                responseHead = rh
                // An HTTP/2 origin's own fields are recorded, not the HTTP/1.1 framing the
                // stream wrote for this exchange to read.
                if let fields = upstream?.originResponseHeaders { originResponseHeaders = fields }
                responseFramer = framing.map { BodyFramer($0) }
                // Time to first event: only a plain event stream can be scanned as it comes.
                clock.eventStream = FirstEventScanner.applies(to: rh.headers)
            } else if rh.status == 101 && machine.wantsUpgrade {
                responseHead = rh
            }
            // Interim answers and a 101 are not kept as the response: the action reads them here.
            if rh.status < 200 { pendingHead = rh }
            perform(machine.responseHead(status: rh.status, framing: framing, draining: engine.isDraining,
                                         clientSentLast: session.sentItsLastRequest))
            if rh.status < 200 { pendingHead = nil }
            if machine.isFinished { return }
        }
        pumpResponse()
    }

    private func pumpResponse() {
        guard machine.isStreamingResponse, let c = upstream, let input = c.input, let out = session.clientOutput,
              var framer = responseFramer else { return }
        let before = evbuffer_get_length(input)
        let progress: ExchangeStateMachine.Progress
        do {
            let done = try BodyPump.pump(from: input, to: out, framer: &framer, capture: &responseCapture,
                                         captureLimit: config.captureMaxBodyBytes,
                                         payloadOnly: machine.isDechunking || session.takesPayloadOnly)
            responseFramer = framer
            session.flush()
            engine.metrics.bytesFromUpstreams.add(before - evbuffer_get_length(input))
            if clock.eventStream && clock.firstEvent == nil { scanForFirstEvent() }
            progress = done ? .complete : .partial(queued: session.isOpen ? session.queuedOutputLength : 0)
        } catch {
            responseFramer = framer
            session.flush()
            progress = .malformed(error)
        }
        perform(machine.responseBodyPumped(progress))
    }

    /// The event-stream scanner's progress over the captured body (a few bytes of state).
    private var firstEventScanner = FirstEventScanner()

    /// Looks at the captured bytes not yet scanned for the end of the first event. The scan
    /// stops there, so it costs the bytes before the first event, once; past the capture
    /// limit nothing is left to scan, and `firstEventTime` stays null.
    private func scanForFirstEvent() {
        let from = firstEventScanner.scanned
        guard from < responseCapture.bytes.count else { return }
        let found = responseCapture.bytes.withUnsafeBytes { firstEventScanner.scan(UnsafeRawBufferPointer(rebasing: $0[from...])) }
        if found { clock.firstEvent = now() }
    }

    /// A resumed direction cancels the stall timer unless the other is still paused: then the
    /// timer runs on with that side's limit, counted again from now, or the exchange could
    /// wait for good.
    private func keepStallTimerForPausedSide() {
        switch machine.stalledSide {
        case .request?: armStallTimer(after: config.upstreamReadTimeout)
        case .response?: armStallTimer(after: config.clientIdleTimeout)
        case nil: stallTimer?.cancel()
        }
    }

    private func armStallTimer(after seconds: Double) {
        // Unowned (no side table, see ClientSession's head timer): the exchange's own timer.
        let timer = stallTimer ?? LoopTimer(loop: session.loop) { [unowned self] in
            self.perform(self.machine.stallTimerFired())
        }
        timer.schedule(after: seconds)
        stallTimer = timer
    }

    func clientWritable() {
        guard upstream != nil, session.isOpen else { return }
        perform(machine.clientDrained())
    }

    func upstreamEvent(_ c: UpstreamConnection, events: Int16) {
        guard !machine.isFinished else { return }
        let e = Int32(events)
        if e & (BEV_EVENT_EOF | BEV_EVENT_ERROR) != 0 { machine.upstreamEnded() }
        if e & BEV_EVENT_TIMEOUT != 0 {
            perform(machine.upstreamTimedOut())
            return
        }
        // EOF or error: whatever is still buffered belongs to the response.
        if machine.isStreamingResponse { pumpResponse() } else if let input = c.input, evbuffer_get_length(input) > 0 { upstreamReadable(c) }
        guard !machine.isFinished else { return }
        let reset = e & BEV_EVENT_ERROR != 0
        var cleanEnd = false
        if machine.isStreamingResponse, var framer = responseFramer {
            cleanEnd = !reset && framer.finishAtEOF()
            responseFramer = framer
        }
        perform(machine.upstreamClosed(reset: reset, cleanEndOfBody: cleanEnd,
                                       idempotent: ExchangeStateMachine.isIdempotent(head.method), cause: c.closeCause))
    }

    // MARK: ending

    private func finish(_ outcome: ExchangeStateMachine.Outcome) {
        let failure = machine.failure
        stallTimer?.cancel()
        if clock.lastResponseByte == nil { clock.lastResponseByte = now() }
        if let c = upstream {
            c.owner = nil
            let allowsReuse = responseHead.map { $0.status >= 200 && !$0.wantsClose } ?? false
            perform(machine.releaseUpstream(responseAllowsReuse: allowsReuse,
                                            responseComplete: responseFramer.map { $0.isComplete } == true,
                                            connectionIdle: c.bev != nil && c.outputLength == 0,
                                            draining: engine.isDraining))
            if outcome.responseWasPaused, session.isOpen { session.watchOutputDrain(below: nil) }
        }
        upstream = nil
        // The parent's own page answers in Tapwire's place, and the record shows its head; as
        // HTTP/1 bytes, so an HTTP/2 client gets the 502 naming the parent's status instead.
        let page = failure?.answer != nil && !session.takesPayloadOnly ? parentPage : nil
        if let page { responseHead = ParentAnswer.head(page) }
        emitRecord(error: failure?.error)
        if let page {
            session.write(page)
            session.flush()
            session.closeAfterFlush()
        } else if let answer = failure?.answer {
            session.respondError(answer.status, answer.detail, close: outcome.closeClient)
        } else if failure != nil {
            session.closeAfterFlush()
        } else {
            if let trailers = responseCapture.trailers { session.forwardTrailers(trailers) }
            session.exchangeFinished(keepAlive: !outcome.closeClient)
        }
    }

    private func capturedValue(error: TransportError?) -> CapturedExchange {
        // A failure can end an exchange before or after its bodies were whole: only a body
        // whose framing had not finished is cut (a reset after the answer cuts nothing).
        var requestBody = requestCapture, responseBody = responseCapture
        if error != nil {
            requestBody.cutShort = !requestFramer.isComplete
            responseBody.cutShort = responseHead != nil && !(responseFramer?.isComplete ?? false)
        }
        // An HTTP/2 origin's answer reached the exchange in HTTP/1.1 form; the record says
        // what the origin spoke.
        let response = upstreamSpeaksHTTP2 ? responseHead.map { head -> HTTPResponseHead in
            var h = head
            h.version = .http2
            if let originResponseHeaders { h.headers = originResponseHeaders }
            return h
        } : responseHead
        return CapturedExchange(client: session.peerText, url: url, request: head, requestBody: requestBody,
                                response: response, responseBody: responseBody, error: error, clock: clock,
                                connectionReused: machine.connectionReused, upstreamAddress: upstreamAddressText,
                                upstreamHTTPVersion: upstreamAddressText == nil ? nil : upstreamSpeaksHTTP2 ? "HTTP/2" : "HTTP/1.1",
                                via: via)
    }

    private var upstreamAddressText: String?
    private var upstreamSpeaksHTTP2 = false
    /// The parent proxy's answer when it refused the tunnel to the origin (intercepted HTTPS).
    private var parentPage: [UInt8]?
    /// The parent proxy used (`metrics.via`), set with the upstream connection.
    private var via: String?

    private func emitRecord(error: TransportError?) {
        let duration = (clock.lastResponseByte ?? now()) - clock.requestStart
        engine.metrics.recordExchange(status: responseHead?.status, duration: duration)
        if let error { engine.metrics.recordTransportError(error.code) }
        engine.sink?.accept(.http(capturedValue(error: error)))
    }

    // MARK: tunnels

    /// - Parameter answered: the client already got its 200 (an intercepted CONNECT that
    ///   turned out not to speak TLS): none is sent, and a failure can only close.
    /// - Parameter inspectFirstBytes: once connected and answered, the session looks at the
    ///   client's first bytes before anything is relayed (`ConnectPayloadStateMachine`).
    func beginConnectTunnel(answered: Bool = false, inspectFirstBytes: Bool = false) {
        session.pauseReading()
        machine.beginTunnel()
        let c = UpstreamConnection(loop: session.loop, authority: authority)
        upstream = c
        let start = now()
        let via = c.via
        c.connect(timeout: config.connectTimeout, isOwnListener: engine.isOwnListener, phase: { _ in }) { [weak self] result in
            guard let self, self.machine.tunnelConnectFinished() else { return }
            self.upstream = nil
            switch result {
            case .failure(let error):
                // A parent's refusal (its error page) goes to the client as the parent sent it.
                let parentAnswer = answered ? nil : c.parentAnswer
                let status = parentAnswer.flatMap(ParentAnswer.head)?.status ?? ExchangeStateMachine.answer(for: error).code
                self.engine.metrics.recordTransportError(error.code)
                self.engine.sink?.accept(.tunnel(CapturedTunnel(kind: .connect, client: self.session.peerText,
                    target: self.authority.description, status: status, bytesFromClient: 0, bytesFromUpstream: 0,
                    start: start, end: self.now(), closedBy: .error, error: error, upgrade: nil, via: via)))
                if answered {
                    self.session.close()
                } else {
                    self.session.refuseConnect(ExchangeStateMachine.answer(for: error), error, parentAnswer: parentAnswer)
                }
            case .success:
                if !answered { self.session.answerConnectEstablished() }
                guard let upstreamSocket = c.detachBufferevent() else { self.session.close(); return }
                let session = self.session
                let tunnelStart = start
                if inspectFirstBytes {
                    session.flush()
                    session.awaitFirstBytes(head: self.head, authority: self.authority, upstream: upstreamSocket, start: tunnelStart)
                    return
                }
                session.handOver { clientSocket in
                    Tunnel.start(loop: session.loop, engine: session.engine, kind: .connect, client: clientSocket,
                                 upstream: upstreamSocket, clientText: session.peerText, target: self.authority.description,
                                 status: 200, start: tunnelStart, upgrade: nil)
                }
            }
        }
    }

    private func startWebSocket(_ rh: HTTPResponseHead, _ c: UpstreamConnection) {
        upstream = nil
        c.owner = nil
        var out = rh
        out.headers = rh.headers.removingHopByHop(keepUpgrade: true)
        session.write(out.serialized())
        clock.lastResponseByte = now()
        let upgrade = capturedValue(error: nil)
        engine.metrics.recordExchange(status: 101, duration: now() - clock.requestStart)
        guard let upstreamSocket = c.detachBufferevent() else { session.close(); return }
        let session = self.session
        let start = clock.requestStart
        let target = url
        // Only a WebSocket's frames are parsed (any other protocol switch is relayed blind).
        let webSocket = config.captureWebSocketMessages && engine.sink != nil
            && rh.headers.listContains(name: "upgrade", token: "websocket") ? WebSocketCapture(upgrade: upgrade) : nil
        session.handOver { clientSocket in
            Tunnel.start(loop: session.loop, engine: session.engine, kind: .websocket, client: clientSocket,
                         upstream: upstreamSocket, clientText: session.peerText, target: target,
                         status: 101, start: start, upgrade: upgrade, webSocket: webSocket)
        }
    }
}
