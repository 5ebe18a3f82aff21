import CLibevent
import Foundation
import HTTP1

/// One client connection: reads request heads, routes each request (forward,
/// CONNECT tunnel, admin endpoint), streams bodies both ways with
/// backpressure, and answers pipelined requests strictly in order (the next
/// head is not read until the current response is complete). Drives a
/// `ClientSessionStateMachine`, which states the rules.
final class ClientSession: ExchangeClient {
    let loop: EventLoop
    let engine: ProxyEngine
    private(set) var bev: OpaquePointer?
    let peer: SocketAddress
    let peerText: String
    /// Set exactly while `machine.hasExchange`.
    private var exchange: Exchange<ClientSession>?
    /// Set once an intercepted client picked `h2` by ALPN: from then on the connection's
    /// bytes go to it, and the head parsing and exchange above are unused.
    private var http2: HTTP2Connection?
    /// ALPN was looked at after the client's handshake (once: it cannot change).
    private var alpnChecked = false
    /// A reverse listener with `h2c`: whether the first bytes were looked at for HTTP/2's preface.
    private var prefaceChecked = false
    /// Unchecked: the machine's methods never call out, so no two accesses can overlap,
    /// and the runtime's exclusivity bookkeeping cost more than the machine's work.
    @exclusivity(unchecked) private var machine: ClientSessionStateMachine
    /// The slow-header / idle deadline while waiting for a head (`clientIdleTimeout`).
    private var headTimer: LoopTimer?
    /// When the head timer's wait ends (monotonic seconds); nil when none is awaited. The
    /// libevent timer is not moved for every exchange: it fires when it was scheduled to and,
    /// when the deadline has moved later meanwhile, is scheduled again for the rest.
    private var headDeadline: Double?
    /// When the libevent timer fires, while it is scheduled.
    private var headTimerFiresAt: Double?
    /// Resumes the scan of a head that arrives in pieces; the input only grows until
    /// the head is drained, which is the parser's invariant.
    private var requestHeadParser = HTTPHeadParser()
    /// The timer of `pollOutput`, while the session waits for its output to drain.
    private var outputPoll: LoopTimer?
    /// Parsing waits for the output to drain below `limits.highWaterBytes` (`parseNextHead`).
    private var parseWaitsForOutput = false
    private let staged = SocketOutput()
    /// Reads the socket (see `SocketReader`); after an intercepted CONNECT, the TLS filter's,
    /// which passes every call on to the filter's own reading.
    private var reader: SocketReader?
    private var interceptStart = 0.0
    /// The listener's mode and replay source.
    let role: ListenerRole
    /// On a `socks5` listener: the handshake, until its CONNECT is answered; then how the
    /// CONNECT is answered (`answerConnectEstablished`, `refuseConnect`).
    var socks: SOCKS5ServerStateMachine?

    var config: EngineConfiguration { _read { yield engine.configuration } }
    var isIdle: Bool { http2.map { $0.isIdle } ?? !machine.hasExchange }
    private var closed: Bool { machine.isClosed }
    /// Set after an intercepted CONNECT: requests inside the TLS stream go to this origin.
    var interceptedAuthority: HTTPAuthority? { machine.interceptedAuthority }
    /// Whether requests go to an intercepted origin (cheaper to ask than `interceptedAuthority`).
    var isIntercepting: Bool { machine.isIntercepting }

    init(loop: EventLoop, engine: ProxyEngine, fd: Int32, peer: SocketAddress, role: ListenerRole = .forward) throws {
        self.loop = loop
        self.engine = engine
        self.peer = peer
        self.role = role
        if case .socks5(let users) = role.mode { socks = SOCKS5ServerStateMachine(credentials: users) }
        self.peerText = peer.description
        machine = ClientSessionStateMachine(clientIdleTimeout: engine.configuration.clientIdleTimeout)
        guard let b = bufferevent_socket_new(loop.base, fd, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            Foundation.close(fd)
            throw EngineError.eventBase
        }
        bev = b
        _ = bufferevent_set_max_single_read(b, EngineConfiguration.maxSingleRead)
        installCallbacks(b)
        reader = SocketReader(loop: loop, bev: b, enabled: true)
        engine.metrics.activeClients.add()
        armHeadTimer()
    }

    private func installCallbacks(_ b: OpaquePointer) {
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(b, { _, ctx in
            guard let ctx else { return }
            Unmanaged<ClientSession>.fromOpaque(ctx).takeUnretainedValue().readable()
        }, { _, ctx in
            guard let ctx else { return }
            Unmanaged<ClientSession>.fromOpaque(ctx).takeUnretainedValue().writable()
        }, { _, events, ctx in
            guard let ctx else { return }
            Unmanaged<ClientSession>.fromOpaque(ctx).takeUnretainedValue().event(events)
        }, ctx)
        // Reading is switched on by the session's SocketReader: enabling it here too made the
        // reader switch the bufferevent's read event off again, two epoll_ctl per connection.
        bufferevent_enable(b, Int16(EV_WRITE))
    }

    private var input: OpaquePointer? { bev.flatMap { bufferevent_get_input($0) } }
    private var output: OpaquePointer? { bev.flatMap { bufferevent_get_output($0) } }

    // MARK: reading heads

    private func armHeadTimer() {
        let timeout = config.clientIdleTimeout
        let deadline = EventLoop.monotonicNow() + timeout
        headDeadline = deadline
        // Already due by then: nothing to move (the common case, once per keep-alive exchange).
        if let firesAt = headTimerFiresAt, firesAt <= deadline { return }
        if headTimer == nil {
            // Unowned, not weak (a weak reference gives the session a side table and every
            // retain of it the slow path): the timer is the session's and never outlives it.
            headTimer = LoopTimer(loop: loop) { [unowned self] in self.headTimerLapsed() }
        }
        headTimer?.schedule(after: timeout)
        headTimerFiresAt = deadline
    }

    func cancelHeadTimer() {
        headDeadline = nil
    }

    /// The libevent timer fired: the wait is over, or it goes on for what is left of it.
    private func headTimerLapsed() {
        headTimerFiresAt = nil
        guard let deadline = headDeadline else { return }
        let remaining = deadline - EventLoop.monotonicNow()
        // libevent's clock may run a little behind this one: a millisecond short is due.
        if remaining > 0.001 {
            headTimer?.schedule(after: remaining)
            headTimerFiresAt = deadline
            return
        }
        headDeadline = nil
        // A SOCKS handshake that stalls gets no HTTP 408: there is no way to say it.
        if isNegotiatingSOCKS { close(); return }
        perform(machine.headTimerFired(inputBuffered: input.map { evbuffer_get_length($0) > 0 } ?? false))
    }

    /// Why OpenSSL says the client's handshake failed, with a hint for the two usual causes.
    private func handshakeFailure() -> String {
        let ssl = bev.flatMap { bufferevent_openssl_get_ssl($0) }
        let code = bev.map { bufferevent_get_openssl_error($0) } ?? 0
        var why = engine.tlsInterceptor?.failureDescription(ssl: ssl, error: UInt(code)) ?? "handshake failed"
        if why.contains("alert") {
            why += " (the client does not trust Tapwire's CA, or pins certificates)"
        } else if why.contains("wrong version number") || why.contains("http request") || why.contains("packet length too long") {
            why += " (the client did not speak TLS after CONNECT)"
        }
        return why
    }

    private func perform(_ actions: ActionList<ClientSessionStateMachine.Action>) {
        for action in actions {
            switch action {
            case .pauseReading:
                reader?.setEnabled(false)
            case .deliverToExchange:
                guard let ex = exchange else { break }
                ex.clientReadable()
                // `input` is re-read: clientReadable may have closed the session and freed its
                // bufferevent (libevent 2.1 delays that free past this callback, a guarantee
                // this line should not lean on).
                guard let input = self.input else { break }
                perform(machine.exchangeTookInput(requestComplete: ex.isRequestComplete, buffered: evbuffer_get_length(input),
                                                  maxHeaderBytes: config.maxHeaderBytes))
            case .parseHeads:
                if let input { parseNextHead(input) }
            case .inspectFirstByte:
                if let input { firstBytesAfterConnect(input) }
            case .respondRequestTimeout:
                respondError(.requestTimeout, "the request head did not arrive within \(config.clientIdleTimeout) s", close: true)
            case .startBlindTunnel:
                startParkedTunnel()
            case .recordInterceptionFailure(let failure):
                guard let authority = machine.interceptionAuthority else { break }
                let why: String
                switch failure {
                case .nothingSent: why = "nothing sent within \(config.clientIdleTimeout) s"
                case .notCompleted: why = "not completed within \(config.clientIdleTimeout) s"
                case .closedBeforeHello: why = "the connection closed before it began"
                case .handshakeFailed: why = handshakeFailure()
                }
                recordInterceptionFailure(authority, TransportError(.clientTLSFailed,
                    "TLS handshake with the client for \(authority.host) failed: \(why)"))
            case .failExchange(let code):
                exchange?.clientFailed(TransportError(code, code == .clientTimeout
                    ? "client sent nothing for \(config.clientIdleTimeout) s"
                    : "the client closed the connection mid-exchange"))
            case .answerBufferedThenClose:
                answerBufferedThenClose()
            case .answerBufferedThenCloseNextTurn:
                loop.execute { [self] in answerBufferedThenClose() }
            case .parseHeadsNextTurn:
                loop.execute { [self] in
                    guard let input else { return }
                    parseNextHead(input)
                }
            case .resumeReading:
                reader?.setEnabled(true)
            case .armHeadTimer:
                armHeadTimer()
            case .cancelHeadTimer:
                cancelHeadTimer()
            case .registerHeld:
                loop.heldSessions[ObjectIdentifier(self)] = self
                engine.metrics.heldClients.add()
                engine.metrics.holds.add()
            case .unregisterHeld:
                engine.metrics.heldClients.sub()
                loop.heldSessions[ObjectIdentifier(self)] = nil
            case .closeAfterFlush:
                stopReadingUntilFlushed()
            case .refuseHeldForShutdown:
                if socks != nil {
                    refuseConnect(.serviceUnavailable, TransportError(.shuttingDown, "Tapwire is shutting down"), parentAnswer: nil)
                } else {
                    respondError(.serviceUnavailable, "Tapwire is shutting down", close: true)
                }
            case .leaveLoop:
                finishClose()
            case .close:
                close()
            }
        }
    }

    private func readable() {
        if let http2 { http2.readable(); return }
        // Decrypted bytes can be read before the handshake's CONNECTED event is delivered:
        // ALPN is asked here too, or an h2 preface would be parsed as an HTTP/1 head.
        if machine.isIntercepting, !alpnChecked, startHTTP2IfNegotiated() { return }
        guard let input else { return }
        if !prefaceChecked, case .reverse(let upstream) = role.mode, upstream.h2c, startHTTP2IfPreface(input, upstream) { return }
        if isNegotiatingSOCKS { socksReadable(input); return }
        perform(machine.readable(buffered: evbuffer_get_length(input), maxHeaderBytes: config.maxHeaderBytes))
    }

    /// Parses and starts the next request if a whole head is buffered.
    ///
    /// Not while the output holds more than `limits.highWaterBytes`: requests Tapwire answers
    /// itself (offline replay, its own endpoints) finish at once, so a client that pipelines
    /// them and does not read would otherwise add a whole answer to the output per request.
    func parseNextHead(_ firstInput: OpaquePointer) {
        while machine.canReadHead {
            // Re-read each pass: an intercepted CONNECT replaces the bufferevent.
            guard let input = self.input else { return }
            let available = evbuffer_get_length(input)
            if available == 0 { return }
            if parseWaitsForOutput { return }
            if outputLength > config.highWaterBytes {
                parseWaitsForOutput = true
                reader?.setEnabled(false)
                pollOutput(downTo: config.highWaterBytes) { [unowned self] in
                    self.parseWaitsForOutput = false
                    self.reader?.setEnabled(true)
                    if let input = self.input { self.parseNextHead(input) }
                }
                return
            }
            let n = min(available, config.maxHeaderBytes + 4)
            guard let p = evbuffer_pullup(input, n) else { return }
            let result: HeadParseResult<HTTPRequestHead>
            do {
                result = try requestHeadParser.parseRequestHead(UnsafeRawBufferPointer(start: p, count: n), maxHeadBytes: config.maxHeaderBytes)
            } catch {
                respondError(error.answerStatus, error.reason, close: true)
                return
            }
            guard case .complete(let head, let length) = result else { return }
            evbuffer_drain(input, length)
            engine.metrics.bytesFromClients.add(length)
            start(head)
        }
    }

    /// A SOCKS5 CONNECT, as the CONNECT head an HTTP client would have sent: held like one
    /// while the log is behind (`log.whenBehind: wait`), then the tunnel.
    /// A target that is no CONNECT authority (the SOCKS name allows more than a URI host
    /// does) gets the SOCKS failure reply, never an HTTP answer.
    func startSOCKSConnect(_ head: HTTPRequestHead) {
        guard case .authority? = try? head.proxyForm() else {
            refuseConnect(.badRequest, TransportError(.malformedRequest, "the SOCKS5 CONNECT names no usable host: \(head.target)"),
                          parentAnswer: nil)
            return
        }
        start(head)
    }

    /// Starts (or holds, or answers) a parsed request. `clientEnded`: the client half-closed
    /// while this request was held, before an exchange could read its body.
    private func start(_ head: HTTPRequestHead, clientEnded: Bool = false) {
        let form: ProxyRequestForm
        let framing: BodyFraming
        do {
            form = try head.proxyForm()
            framing = try head.bodyFraming()
        } catch {
            respondError(error.answerStatus, error.reason, close: true)
            return
        }
        if case .reverse(let upstream) = role.mode {
            startReverse(head: head, form: form, framing: framing, upstream: upstream, clientEnded: clientEnded)
            return
        }
        // Tapwire's own endpoints, also when asked through the proxy: never held, since a
        // health check matters most while the log is behind.
        if case .absolute(let authority, let originTarget) = form, !isIntercepting,
           engine.isOwnAdminRequest(authority, target: originTarget) {
            answerAdmin(head: head, path: originTarget, close: head.wantsClose || framing != .none)
            return
        }
        if let sink = engine.sink, sink.isBehind, form.startsExchange(intercepted: isIntercepting) {
            perform(machine.hold(head))
            return
        }
        switch form {
        case .absolute(let authority, let originTarget):
            if answerFromReplay(head, url: head.target, framing: framing) { return }
            let ex = Exchange(session: self, head: head, authority: authority, originTarget: originTarget, framing: framing,
                              clientEnded: clientEnded)
            exchange = ex
            perform(machine.exchangeStarted())
            ex.begin()
        case .authority(let authority):
            guard framing == .none else {
                respondError(.badRequest, "CONNECT must not carry a body", close: true)
                return
            }
            startTunnel(head: head, authority: authority)
        case .origin(let path) where isIntercepting:
            guard let authority = interceptedAuthority else { return }
            if answerFromReplay(head, url: authority.url(originTarget: path), framing: framing) { return }
            let ex = Exchange(session: self, head: head, authority: authority, originTarget: path, framing: framing,
                              url: authority.url(originTarget: path), clientEnded: clientEnded)
            exchange = ex
            perform(machine.exchangeStarted())
            ex.begin()
        case .origin(let path):
            if AdminEndpoint(target: path) == nil, let viewer = engine.viewer {
                handOverToViewer(head, viewer)
            } else {
                answerAdmin(head: head, path: path, close: head.wantsClose || framing != .none)
            }
        case .asterisk:
            // Its body is not read: closing keeps the body's bytes from being parsed as the
            // next request (as for the admin endpoints above).
            respond(.ok, body: "", extraHeaders: [("Allow", "GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, CONNECT")],
                    close: head.wantsClose || framing != .none)
        }
    }

    /// A reverse listener: every origin-form request goes to its upstream, as if the client
    /// had sent it there; Tapwire's own endpoints are the upstream's paths here.
    private func startReverse(head: HTTPRequestHead, form: ProxyRequestForm, framing: BodyFraming, upstream: ReverseUpstream,
                              clientEnded: Bool) {
        guard case .origin(let path) = form else {
            respondError(.badRequest, "this listener is a reverse proxy for \(upstream.authority.url(originTarget: "/")): "
                         + "send origin-form requests (GET /path), not proxy requests", close: true)
            return
        }
        if let sink = engine.sink, sink.isBehind {
            perform(machine.hold(head))
            return
        }
        let url = upstream.authority.url(originTarget: path)
        if answerFromReplay(head, url: url, framing: framing) { return }
        let ex = Exchange(session: self, head: head, authority: upstream.authority, originTarget: path, framing: framing, url: url,
                          clientEnded: clientEnded)
        if upstream.keepHost { ex.forwardedHost = head.headers.first(name: "host") }
        exchange = ex
        perform(machine.exchangeStarted())
        ex.begin()
    }

    // MARK: holding requests while the log is behind

    // `log.whenBehind: wait`: the request is parsed but not started until the log catches
    // up (`machine.hold`). Admin endpoints are never held. Reading goes on (a head's worth
    // at most, see `readable`), so a client that resets or closes while held is noticed: a
    // reset closes the session, and a half-close is answered after the release, as it
    // would be for an exchange in flight.

    /// Called by the loop once the sink caught up.
    func releaseHeldRequest() {
        if let http2 {
            engine.metrics.heldClients.sub()
            http2.releaseHeld()
            return
        }
        guard let (head, actions) = machine.release() else { return }
        perform(actions)
        // A client that half-closed while held: the exchange's body is whatever is buffered.
        start(head, clientEnded: machine.inputEnded)
        perform(machine.heldRequestStarted())
    }

    // MARK: admin endpoints (origin-form requests to the proxy itself)

    /// `close`: also when the request has a body, which is not read (its bytes must not be
    /// parsed as the next request).
    private func answerAdmin(head: HTTPRequestHead, path: String, close: Bool) {
        switch AdminEndpoint(target: path) {
        case .health:
            respond(.ok, body: "ok\n", close: close, headOnly: head.method == "HEAD")
        case .metrics:
            respond(.ok, body: engine.metricsText(),
                    extraHeaders: [("Content-Type", "text/plain; version=0.0.4")], close: close, headOnly: head.method == "HEAD")
        case nil:
            respond(.badRequest,
                    body: "Tapwire is a proxy: send absolute-form requests (set HTTP_PROXY=http://\(engine.primaryListenText)). Its own endpoints are /healthz and /metrics.\n",
                    close: close)
        }
    }

    /// Gives the socket (a duplicate of it: the bufferevent closes its own) to the viewer,
    /// with the bytes buffered either way, and ends the session without answering.
    private func handOverToViewer(_ head: HTTPRequestHead, _ viewer: @Sendable (ViewerHandoff) -> Void) {
        flush()
        guard let b = bev else { return }
        let socket = dup(bufferevent_getfd(b))
        guard socket >= 0 else {
            respondError(.serviceUnavailable, "cannot hand the connection to the viewer: errno \(errno)", close: true)
            return
        }
        func take(_ buffer: OpaquePointer) -> [UInt8] {
            let n = evbuffer_get_length(buffer)
            guard n > 0 else { return [] }
            var bytes = [UInt8](repeating: 0, count: n)
            _ = bytes.withUnsafeMutableBytes { evbuffer_remove(buffer, $0.baseAddress, n) }
            return bytes
        }
        let buffered = take(bufferevent_get_input(b)), unsent = take(bufferevent_get_output(b))
        _ = reader?.detach()
        reader = nil
        bev = nil
        exchange = nil
        perform(machine.handedOver())
        bufferevent_free(b)
        viewer(ViewerHandoff(socket: socket, head: head, buffered: buffered, unsent: unsent, peer: peerText))
    }

    // MARK: CONNECT

    func startTunnel(head: HTTPRequestHead, authority: HTTPAuthority) {
        if isIntercepting {
            respondError(.badRequest, "CONNECT inside an intercepted tunnel", close: true)
            return
        }
        let route = engine.connectRoute(host: authority.host)
        if route == .inspect(interceptsTLS: true), let interceptor = engine.tlsInterceptor {
            startInterception(head: head, authority: authority, interceptor: interceptor)
            return
        }
        let ex = Exchange(session: self, head: head, authority: authority, originTarget: "", framing: .none)
        exchange = ex
        perform(machine.exchangeStarted())
        ex.beginConnectTunnel(inspectFirstBytes: route != .blind)
    }

    /// A CONNECT's upstream is connected and the client has its 200: the client's first
    /// bytes decide what the connection is (`ConnectPayloadStateMachine`), while the upstream
    /// waits, watched for bytes of its own (a server that speaks first makes it blind).
    func awaitFirstBytes(head: HTTPRequestHead, authority: HTTPAuthority, upstream: HandedOverSocket, start: Double) {
        exchange = nil
        interceptStart = start
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(upstream.bev, { _, ctx in
            guard let ctx else { return }
            Unmanaged<ClientSession>.fromOpaque(ctx).takeUnretainedValue().parkedUpstreamSpoke()
        }, nil, { _, _, ctx in
            guard let ctx else { return }
            Unmanaged<ClientSession>.fromOpaque(ctx).takeUnretainedValue().parkedUpstreamSpoke()
        }, ctx)
        bufferevent_enable(upstream.bev, Int16(EV_READ))
        let wait = ClientSessionStateMachine.ClientHelloWait(head: head, authority: authority, ssl: nil, upstream: upstream,
                                                             payload: ConnectPayloadStateMachine(interceptsTLS: false))
        reader?.setEnabled(true)
        perform(machine.awaitClientHello(wait, inputBuffered: input.map { evbuffer_get_length($0) > 0 } ?? false))
        if upstream.pendingErrno != 0 || evbuffer_get_length(bufferevent_get_input(upstream.bev)) > 0 { parkedUpstreamSpoke() }
    }

    private func parkedUpstreamSpoke() {
        perform(machine.upstreamSpokeFirst())
    }

    /// The waiting CONNECT is a blind tunnel after all: both sockets go to a `Tunnel`, which
    /// relays what either side already sent.
    private func startParkedTunnel() {
        guard let wait = machine.firstByteArrived(), let upstream = wait.upstream else { return }
        if let ssl = wait.ssl { engine.tlsInterceptor?.free(ssl: ssl) }
        let start = interceptStart
        handOver { clientSocket in
            Tunnel.start(loop: loop, engine: engine, kind: .connect, client: clientSocket, upstream: upstream,
                         clientText: peerText, target: wait.authority.description, status: 200, start: start, upgrade: nil)
        }
    }

    /// Answers the CONNECT, then, once the client's first byte shows a TLS ClientHello,
    /// speaks TLS to it with a leaf certificate for the host and proxies the decrypted
    /// requests like any others (to https://host). Anything else (plain HTTP to port 80,
    /// SSH) goes through as a blind tunnel: wrapped in TLS it failed, recorded as a
    /// certificate problem.
    private func startInterception(head: HTTPRequestHead, authority: HTTPAuthority, interceptor: TLSInterceptor) {
        interceptStart = Date().timeIntervalSince1970
        let ssl: OpaquePointer
        do { ssl = try interceptor.serverSSL(forHost: authority.host) } catch {
            refuseConnect(.badGateway, TransportError(.tlsFailed, "cannot make a certificate for \(authority.host): \(error)"), parentAnswer: nil)
            recordInterceptionFailure(authority, TransportError(.tlsFailed, "no certificate for \(authority.host): \(error)"))
            return
        }
        answerConnectEstablished()
        flush()
        perform(machine.awaitClientHello(.init(head: head, authority: authority, ssl: ssl, upstream: nil,
                                               payload: ConnectPayloadStateMachine(interceptsTLS: true)),
                                         inputBuffered: input.map { evbuffer_get_length($0) > 0 } ?? false))
    }

    private func firstBytesAfterConnect(_ input: OpaquePointer) {
        guard evbuffer_get_length(input) > 0, var payload = machine.connectWait?.payload else { return }
        let n = min(evbuffer_get_length(input), ConnectPayloadStateMachine.requestLinePrefixBytes)
        guard let p = evbuffer_pullup(input, n),
              let decision = payload.clientSent(UnsafeRawBufferPointer(start: p, count: n)) else { return }
        switch decision {
        case .interceptTLS:
            guard let waiting = machine.firstByteArrived() else { return }
            if let ssl = waiting.ssl { beginTLS(authority: waiting.authority, ssl: ssl) } else { close() }
        case .decodeHTTP:
            guard let waiting = machine.firstByteArrived() else { return }
            if let ssl = waiting.ssl { engine.tlsInterceptor?.free(ssl: ssl) }
            // Requests go through exchanges of their own: the upstream connected for the
            // CONNECT is not needed.
            if let upstream = waiting.upstream { bufferevent_free(upstream.bev) }
            perform(machine.plainHTTPStarted(HTTPAuthority(scheme: "http", host: waiting.authority.host,
                                                           port: waiting.authority.port)))
        case .blindTunnel:
            if machine.connectWait?.upstream != nil { startParkedTunnel(); return }
            guard let waiting = machine.firstByteArrived() else { return }
            if let ssl = waiting.ssl { engine.tlsInterceptor?.free(ssl: ssl) }
            let ex = Exchange(session: self, head: waiting.head, authority: waiting.authority, originTarget: "", framing: .none)
            exchange = ex
            perform(machine.exchangeStarted())
            ex.beginConnectTunnel(answered: true)
        }
    }

    private func beginTLS(authority: HTTPAuthority, ssl: OpaquePointer) {
        guard let plain = bev else { engine.tlsInterceptor?.free(ssl: ssl); return }
        guard let filter = bufferevent_openssl_filter_new(loop.base, plain, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                          Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else {
            close()
            return
        }
        bufferevent_openssl_set_allow_dirty_shutdown(filter, 1)
        _ = bufferevent_set_max_single_read(filter, EngineConfiguration.maxSingleRead)
        // The filter stops encrypting into the socket below past this, so a slow client's
        // backlog stays in the filter's buffer, where backpressure can see it drain.
        bufferevent_setwatermark(plain, Int16(EV_WRITE), 0, config.highWaterBytes)
        // The filter reads the socket through the plain bufferevent.
        reader?.detach(buffereventReads: true)
        bev = filter
        let actions = machine.tlsStarted(HTTPAuthority(scheme: "https", host: authority.host, port: authority.port))
        installCallbacks(filter)
        reader = SocketReader(loop: loop, bev: filter, enabled: true)
        perform(actions)
    }

    /// A client that refuses our certificate (pinning, an untrusted CA) leaves a record saying so.
    private func recordInterceptionFailure(_ authority: HTTPAuthority, _ error: TransportError) {
        let now = Date().timeIntervalSince1970
        engine.metrics.recordTransportError(error.code)
        engine.sink?.accept(.tunnel(CapturedTunnel(kind: .connect, client: peerText, target: authority.description,
                                                   status: 200, bytesFromClient: 0, bytesFromUpstream: 0,
                                                   start: interceptStart, end: max(interceptStart, now),
                                                   closedBy: .client, error: error)))
    }

    /// Hands this session's socket to a tunnel; the session ends without closing it.
    func handOver(to tunnelBuilder: (HandedOverSocket) -> Void) {
        flush()
        guard let b = bev else { return }
        let pending = reader?.detach() ?? 0
        reader = nil
        bev = nil
        exchange = nil
        perform(machine.handedOver())
        tunnelBuilder(HandedOverSocket(bev: b, pendingErrno: pending))
    }

    // MARK: writing

    /// Stages bytes for the client; `flush()` sends them (see `SocketOutput`).
    func write(_ bytes: [UInt8]) {
        guard let bev else { return }
        staged.add(bytes, for: bev)
    }

    /// Stages a head written in place (a `WireFormSink`).
    func write(capacity: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Int) {
        guard let bev else { return }
        staged.write(capacity: capacity, for: bev, fill)
    }

    func flush() {
        guard let bev else { return }
        staged.flush(to: bev)
    }

    /// Bytes waiting in this bufferevent (the TLS filter's own buffer when there is one):
    /// what backpressure is decided on, since its write callback fires when it drains.
    /// The socket below a filter is capped by a write watermark (see `startInterception`).
    var queuedOutputLength: Int {
        guard let bev else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(bev)) + staged.pending
    }

    /// Bytes not yet on the wire, including what a TLS filter has passed to the socket below it.
    var outputLength: Int {
        guard let bev else { return 0 }
        var n = evbuffer_get_length(bufferevent_get_output(bev)) + staged.pending
        if let below = bufferevent_get_underlying(bev) { n += evbuffer_get_length(bufferevent_get_output(below)) }
        return n
    }
    var clientInput: OpaquePointer? { input }
    /// Where response bytes go until the next `flush()`.
    var clientOutput: OpaquePointer? { bev.map { staged.buffer(for: $0) } }

    func respond(_ status: ProxyStatus, body: String, extraHeaders: [(String, String)] = [],
                 close: Bool, headOnly: Bool = false) {
        let bytes = Array(body.utf8)
        var head = status.statusLine
        for (n, v) in extraHeaders { head += "\(n): \(v)\r\n" }
        if !extraHeaders.contains(where: { $0.0 == "Content-Type" }) { head += "Content-Type: text/plain; charset=utf-8\r\n" }
        head += "Content-Length: \(bytes.count)\r\n"
        if close { head += "Connection: close\r\n" }
        head += "\r\n"
        write(Array(head.utf8))
        if !headOnly { write(bytes) }
        flush()
        if close { closeAfterFlush() } else { exchangeFinished(keepAlive: true) }
    }

    /// A short error answer naming the cause, as nginx and HAProxy do.
    func respondError(_ status: ProxyStatus, _ detail: String, close: Bool) {
        respond(status, body: "\(status.code) \(status.reasonPhrase): \(detail)\n", close: close)
    }

    // MARK: flow control, called by the exchange

    func pauseReading() {
        perform(machine.pauseReadingRequested())
    }

    func resumeReading() {
        perform(machine.resumeReadingRequested())
    }

    func setClientReadTimeout(_ seconds: Double?) {
        reader?.setTimeout(seconds)
    }

    /// The exchange is over; the machine decides between the next request and the close.
    func exchangeFinished(keepAlive: Bool) {
        exchange = nil
        setClientReadTimeout(nil)
        perform(machine.exchangeFinished(keepAlive: keepAlive, draining: engine.isDraining,
                                         inputBuffered: input.map { evbuffer_get_length($0) > 0 } ?? false))
    }

    /// The client half-closed and nothing of another request is buffered: the answer
    /// being sent is its last, so it says `Connection: close`.
    var sentItsLastRequest: Bool { machine.inputEnded && (input.map { evbuffer_get_length($0) == 0 } ?? true) }

    /// After the client's half-close: starts the next buffered request, or closes once
    /// the answers are out when no whole request is left.
    private func answerBufferedThenClose() {
        guard !closed, let input else { return }
        parseNextHead(input)
        perform(machine.bufferedHeadsParsed())
    }

    /// A CONNECT's target is reached (or, intercepted, about to be): 200 to an HTTP client,
    /// the success reply to a SOCKS5 one.
    func answerConnectEstablished() {
        if socks != nil {
            write(socks?.connectSucceeded() ?? [])
        } else {
            write(Array(ProxyStatus.connectionEstablishedHead.utf8))
        }
    }

    /// A CONNECT failed before its answer: the error status to an HTTP client, the SOCKS5
    /// reply for the failure to a SOCKS one; the connection closes either way.
    func refuseConnect(_ status: ProxyStatus, _ error: TransportError, parentAnswer: [UInt8]?) {
        if socks == nil, let parentAnswer {
            write(parentAnswer)
            flush()
            closeAfterFlush()
            return
        }
        guard socks != nil else { respondError(status, error.message, close: true); return }
        write(socks?.connectFailed(error.code) ?? [])
        flush()
        closeAfterFlush()
    }

    func closeAfterFlush() {
        perform(machine.closeAfterFlush())
    }

    private func stopReadingUntilFlushed() {
        guard bev != nil else { close(); return }
        reader?.setEnabled(false)
        if outputLength == 0 { close(); return }
        pollOutput(downTo: 0) { [unowned self] in self.close() }
    }

    /// Waits until at most `mark` bytes of output are left, then calls `done`; closes the
    /// session instead once the client has taken none of it for `limits.clientIdleTimeout`
    /// (a client that stops reading must not keep its slot). The limit counts time without
    /// progress, so a slow but steady reader gets the end of a long answer. Polled, from 5 ms
    /// to 250 ms, because a TLS filter reports its own buffer drained while the socket below
    /// still holds the tail, and that drain is not reported to us. Closing after the answer
    /// waits for 0; pipelined requests wait for `limits.highWaterBytes` (`parseNextHead`).
    private func pollOutput(downTo mark: Int, lastLength: Int? = nil, idleSince: Double? = nil, interval: Double = 0.005,
                            then done: @escaping () -> Void) {
        let lastLength = lastLength ?? outputLength
        let idleSince = idleSince ?? EventLoop.monotonicNow()
        let t = LoopTimer(loop: loop) { [unowned self] in
            guard !self.closed else { return }
            let length = self.outputLength
            if length <= mark {
                self.outputPoll = nil
                done()
                return
            }
            let now = EventLoop.monotonicNow()
            let since = length < lastLength ? now : idleSince
            if now - since > self.config.clientIdleTimeout { self.close(); return }
            self.pollOutput(downTo: mark, lastLength: length, idleSince: since, interval: min(interval * 2, 0.25), then: done)
        }
        t.schedule(after: interval)
        outputPoll = t
    }

    private func writable() {
        if let http2 { http2.writable(); return }
        if machine.isClosingAfterFlush && outputLength == 0 { close(); return }
        exchange?.clientWritable()
    }

    private func event(_ events: Int16) {
        let e = Int32(events)
        if let http2 {
            http2.socketEvent(eof: e & BEV_EVENT_EOF != 0, error: e & BEV_EVENT_ERROR != 0)
            return
        }
        // A SOCKS client gone mid-handshake: its partial message is no HTTP head to answer.
        if isNegotiatingSOCKS, e & (BEV_EVENT_EOF | BEV_EVENT_ERROR) != 0 { close(); return }
        perform(machine.socketEvent(eof: e & BEV_EVENT_EOF != 0, error: e & BEV_EVENT_ERROR != 0,
                                    timeout: e & BEV_EVENT_TIMEOUT != 0, connected: e & BEV_EVENT_CONNECTED != 0,
                                    exchangeRequestComplete: exchange?.clientEOF() ?? false,
                                    inputBuffered: input.map { evbuffer_get_length($0) > 0 } ?? false))
        if e & BEV_EVENT_CONNECTED != 0, machine.isIntercepting, !alpnChecked { _ = startHTTP2IfNegotiated() }
    }

    /// An HTTP/2 stream holds its request (`log.whenBehind: wait`): the session waits in
    /// the loop's held sessions, counted once however many of its streams wait.
    func holdForHTTP2() {
        loop.heldSessions[ObjectIdentifier(self)] = self
        engine.metrics.heldClients.add()
    }

    /// The held HTTP/2 streams are answered or gone without a release (shutdown, close).
    func releaseHTTP2Hold() {
        guard loop.heldSessions.removeValue(forKey: ObjectIdentifier(self)) != nil else { return }
        engine.metrics.heldClients.sub()
    }

    /// Once the client's handshake is done: if it picked `h2`, an `HTTP2Connection` takes
    /// the connection's bytes (the head timer stops; its own limits apply). True if it did.
    private func startHTTP2IfNegotiated() -> Bool {
        alpnChecked = true
        guard let bev, let ssl = bufferevent_openssl_get_ssl(bev),
              engine.tlsInterceptor?.negotiatedProtocol(ssl: ssl) == "h2", let authority = interceptedAuthority else { return false }
        startHTTP2(bev, authority: authority, keepHost: false)
        return true
    }

    /// A reverse listener with `h2c`: true when HTTP/2 took the connection (its preface
    /// came) or more bytes are needed to tell; false when it is HTTP/1.1.
    private func startHTTP2IfPreface(_ input: OpaquePointer, _ upstream: ReverseUpstream) -> Bool {
        let n = min(evbuffer_get_length(input), HTTP2PriorKnowledge.preface.count)
        guard n > 0, let p = evbuffer_pullup(input, n) else { return true }
        switch HTTP2PriorKnowledge.classify(UnsafeRawBufferPointer(start: p, count: n)) {
        case .needMore:
            return true
        case .http1:
            prefaceChecked = true
            return false
        case .http2:
            prefaceChecked = true
            guard let bev else { return true }
            startHTTP2(bev, authority: upstream.authority, keepHost: upstream.keepHost)
            return true
        }
    }

    private func startHTTP2(_ bev: OpaquePointer, authority: HTTPAuthority, keepHost: Bool) {
        // The head timer is HTTP/1's; the connection has its own idle limit from here.
        cancelHeadTimer()
        headTimer?.cancel()
        headTimerFiresAt = nil
        do {
            let connection = try HTTP2Connection(session: self, bev: bev, authority: authority, keepHost: keepHost)
            http2 = connection
            connection.start()
        } catch {
            close()
        }
    }

    /// The drain deadline passed: an exchange still in progress is recorded as cut by the
    /// shutdown (`TransportError.Code.shuttingDown`), not as a client abort.
    func closeAtShutdown() {
        http2?.closeAtShutdown()
        exchange?.clientFailed(TransportError(.shuttingDown,
            "Tapwire shut down before the exchange finished (limits.drainTimeout \(config.drainTimeout) s)"))
        close()
    }

    func close() {
        guard let leftovers = machine.close() else { return }
        if let ssl = leftovers.ssl { engine.tlsInterceptor?.free(ssl: ssl) }
        if let upstream = leftovers.upstream { bufferevent_free(upstream.bev) }
        if leftovers.held {
            engine.metrics.heldClients.sub()
            loop.heldSessions[ObjectIdentifier(self)] = nil
        }
        exchange?.abandon()
        exchange = nil
        let h2 = http2
        http2 = nil
        if let h2, h2.hasHeldStreams { releaseHTTP2Hold() }
        h2?.abandon()
        reader?.detach()
        reader = nil
        if let bev { bufferevent_free(bev); self.bev = nil }
        finishClose()
    }

    /// The machine is `closed` (closed here, or the socket handed over): stop counting it.
    private func finishClose() {
        headTimer?.cancel()
        headTimer = nil
        headDeadline = nil
        headTimerFiresAt = nil
        engine.metrics.activeClients.sub()
        engine.connectionClosed()
        loop.sessions[ObjectIdentifier(self)] = nil
    }

    /// At shutdown: idle keep-alive clients go at once; busy ones after their exchange.
    func drain() {
        if let http2 { http2.drain(); return }
        perform(machine.drain())
    }
}

extension ClientSession {
    var isOpen: Bool { bev != nil }
    var takesPayloadOnly: Bool { false }
    /// HTTP/1.1 has no windows: reading is paused and resumed instead.
    func requestBodyTaken() {}

    func forwardResponseHead(_ head: HTTPResponseHead, connection: String?, droppingTransferEncoding: Bool) {
        head.writeForwardedWireForm(connection: connection, droppingTransferEncoding: droppingTransferEncoding) {
            write(capacity: $0, $1)
        }
    }

    func forwardInterim(_ head: HTTPResponseHead) { write(head.serialized()) }

    /// Already on their way: HTTP/1.1 bodies are forwarded with their framing (and to an
    /// HTTP/1.0 client, which cannot receive them, dropped with it).
    func forwardTrailers(_ trailers: HTTPHeaders) {}

    /// The bufferevent's write callback (`writable`) fires once its output drains to `bytes`.
    func watchOutputDrain(below bytes: Int?) {
        guard let bev else { return }
        bufferevent_setwatermark(bev, Int16(EV_WRITE), bytes ?? 0, 0)
    }
}

private extension ProxyRequestForm {
    /// Whether the request goes upstream (and so into the log) rather than being answered
    /// by Tapwire itself.
    func startsExchange(intercepted: Bool) -> Bool {
        switch self {
        case .absolute, .authority: return true
        case .origin: return intercepted
        case .asterisk: return false
        }
    }
}
