import CLibevent
import Foundation
import HTTP1

/// Moves one message body from `source` to `destination` without copying
/// (evbuffer chain moves), through `framer` to find where the body ends; copies
/// at most `captureLimit` payload bytes into `capture` for decoding later.
/// Returns true once the body is complete.
/// With `payloadOnly`, only the payload is copied to `destination` and the framing (chunk
/// sizes, trailers) is dropped: for an HTTP/1.0 client, which cannot read chunks.
func pumpBody(from source: OpaquePointer, to destination: OpaquePointer, framer: inout BodyFramer,
              capture: inout CapturedBody, captureLimit: Int, payloadOnly: Bool = false) throws(HTTPParseError) -> Bool {
    while !framer.isComplete {
        var vec = iovec()
        let n = evbuffer_peek(source, -1, nil, &vec, 1)
        guard n > 0, vec.iov_len > 0, let base = vec.iov_base else { break }
        let segment = UnsafeRawBufferPointer(start: base, count: vec.iov_len)
        let consumed = try framer.consume(segment) { payload in
            let room = captureLimit - capture.bytes.count
            if room > 0 {
                let piece = payload.prefix(room)
                let needed = capture.bytes.count + piece.count
                if needed > capture.bytes.capacity {
                    // Grown by the array's doubling, a capture could take twice the limit
                    // (which the pipeline's byte bound would not see): never past the limit.
                    // Not reserved from a declared Content-Length: a peer could declare the
                    // limit, send a byte and reset, holding the whole limit in the queue.
                    capture.bytes.reserveCapacity(min(captureLimit, max(needed, capture.bytes.capacity * 2)))
                }
                // As typed bytes: appending a slice of raw bytes went element by element
                // (~1.7 instructions a byte, callgrind), a memcpy this way.
                UnsafeRawBufferPointer(rebasing: piece).withMemoryRebound(to: UInt8.self) { capture.bytes.append(contentsOf: $0) }
            }
            // Copied while `segment` (the source's memory) is still there: drained below.
            if payloadOnly, let p = payload.baseAddress, payload.count > 0 { evbuffer_add(destination, p, payload.count) }
        }
        capture.totalBytes = framer.payloadBytes
        if consumed > 0 {
            if payloadOnly { evbuffer_drain(source, consumed) } else { evbuffer_remove_buffer(source, destination, consumed) }
        }
        if consumed < segment.count { break }
    }
    return framer.isComplete
}

/// One request/response exchange on a client session: connects (or reuses) the
/// upstream, forwards the rewritten head, streams both bodies with backpressure,
/// and hands a `CapturedExchange` to the sink when it ends, however it ends.
final class Exchange: UpstreamOwner {
    /// Strong on purpose: the session drops its exchange when it ends, which breaks the
    /// cycle; an `unowned` reference cost a slow-path refcount on every access.
    let session: ClientSession
    let head: HTTPRequestHead
    let authority: HTTPAuthority
    let originTarget: String
    let requestFraming: BodyFraming
    private var requestFramer: BodyFramer
    private var requestDone = false
    private let wantsUpgrade: Bool
    private var upstream: UpstreamConnection?
    private var responseHead: HTTPResponseHead?
    private var responseFramer: BodyFramer?
    private var responseBytesSeen = false
    /// A chunked response to an HTTP/1.0 client: sent as its payload, ended by closing.
    private var dechunkResponse = false
    private var headForwarded = false
    private var requestCapture = CapturedBody()
    private var responseCapture = CapturedBody()
    private var clock = ExchangeClock()
    private let wall0: Double
    private let mono0: Double
    private var retried = false
    private var closeClientAfter = false
    private var upstreamPaused = false
    private var clientPaused = false
    /// While one side waits for the other to drain (backpressure) no read timeout runs on
    /// either, so a peer that stopped reading held both sockets and a connection slot for
    /// good. Armed at each pause, cancelled at the resume; `stallError` says which side.
    private var stallTimer: LoopTimer?
    private var stallError: TransportError?
    /// See `clientEndedWhileHeld`.
    private var clientEnded = false
    private var finished = false
    private var connectionReused = false
    /// An upstream is attached and the head went out: body bytes may follow.
    private var attached = false
    /// The origin closed (or reset) this connection: never pool it.
    private var upstreamEnded = false

    var config: EngineConfiguration { session.config }
    var engine: ProxyEngine { session.engine }

    /// The URL the record shows: the absolute-form target, or https://host/path when intercepted.
    let url: String

    init(session: ClientSession, head: HTTPRequestHead, authority: HTTPAuthority, originTarget: String, framing: BodyFraming,
         url: String? = nil) {
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
        // Upgrades inside an intercepted TLS stream are not tunnelled (the tunnel code
        // works on plain sockets): the request goes on without its Upgrade fields. So does
        // an HTTP/1.0 request's, which must be ignored (RFC 9110 §7.8); it would otherwise
        // reach the origin as an HTTP/1.1 upgrade request.
        wantsUpgrade = head.headers.listContains(name: "connection", token: "upgrade") && head.headers.contains(name: "Upgrade")
            && session.interceptedAuthority == nil && head.version != .http1_0
        closeClientAfter = head.wantsClose
    }

    private func now() -> Double { wall0 + (EventLoop.monotonicNow() - mono0) }

    private var isIdempotent: Bool {
        ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"].contains(head.method)
    }

    // MARK: starting

    func begin() {
        if !wantsUpgrade, let pooled = session.loop.pool.take(authority) {
            connectionReused = true
            attach(pooled)
            return
        }
        // A body stays in the client's buffer until an upstream is ready, so a failed
        // address can be retried without losing bytes. Without a body nothing needs
        // pausing (and toggling the read event costs two epoll_ctl calls).
        if requestFraming != .none { session.pauseReading() }
        connectNew()
    }

    private func connectNew() {
        clock.connectStart = now()
        let c = UpstreamConnection(loop: session.loop, authority: authority)
        upstream = c
        connectionReused = false
        c.connect(timeout: config.connectTimeout, isOwnListener: engine.isOwnListener, phase: { [weak self] phase in
            guard let self else { return }
            switch phase {
            // metrics.dns is null when no lookup was made (a numeric host), as in the spec's example.
            case .resolved(let lookedUp): if lookedUp { self.clock.dnsDone = self.now() }
            case .tcpConnected: self.clock.connected = self.now()
            }
        }) { [weak self] result in
            guard let self, !self.finished else { return }
            switch result {
            case .success:
                if self.clock.connected == nil { self.clock.connected = self.now() } else { self.clock.tlsDone = self.now() }
                self.attach(c)
            case .failure(let error):
                self.failBeforeResponse(error)
            }
        }
    }

    private func attach(_ c: UpstreamConnection) {
        upstream = c
        attached = true
        upstreamAddressText = c.addressText
        c.owner = self
        // The read timeout waits for an answer: it starts once the request is sent, so a
        // long upload is not cut by it (writes do not reset libevent's read timeout).
        c.setReadTimeout(requestFraming == .none ? config.upstreamReadTimeout : nil)
        if let bev = c.bev {
            head.writeForwardedWireForm(authority: authority, originTarget: originTarget, keepUpgrade: wantsUpgrade) {
                c.stage(capacity: $0, bev, $1)
            }
        }
        if requestFraming == .none {
            requestComplete()
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
    private func requestComplete() {
        requestDone = true
        clock.requestSent = now()
        session.setClientReadTimeout(nil)
        if requestFraming != .none { upstream?.setReadTimeout(config.upstreamReadTimeout) }
    }

    /// A request without a body is complete from its head on: `requestDone` waits for the
    /// upstream to attach, and until then (DNS, connect: up to connectTimeout) whatever the
    /// client sent after the head was read without bound.
    var isRequestComplete: Bool { requestDone || requestFraming == .none }

    // MARK: request body

    func clientReadable() {
        guard attached, upstream?.bev != nil, !requestDone, !finished else { return }
        pumpRequest()
    }

    private func pumpRequest() {
        guard !requestDone, let input = session.clientInput, let c = upstream, let out = c.output else { return }
        let before = evbuffer_get_length(input)
        do {
            let done = try pumpBody(from: input, to: out, framer: &requestFramer, capture: &requestCapture,
                                    captureLimit: config.captureRequestBodies ? config.captureMaxBodyBytes : 0)
            engine.metrics.bytesFromClients.add(before - evbuffer_get_length(input))
            c.flush()
            if done { requestComplete(); return }
        } catch {
            closeClientAfter = true
            if !headForwarded {
                finish(error: TransportError(.malformedRequest, error.reason), respond: (error.status, error.reasonPhrase, error.reason))
            } else {
                finish(error: TransportError(.malformedRequest, error.reason), respond: nil)
            }
            return
        }
        if c.queuedOutputLength >= config.highWaterBytes, let bev = c.bev {
            clientPaused = true
            session.pauseReading()
            bufferevent_setwatermark(bev, Int16(EV_WRITE), config.highWaterBytes / 2, 0)
            armStallTimer(after: config.upstreamReadTimeout, TransportError(.upstreamTimeout,
                "the origin took none of the request body for \(config.upstreamReadTimeout) s"))
        }
        if clientEnded && evbuffer_get_length(input) == 0 {
            // Everything the client sent before its half-close is forwarded and the body is
            // still short: no more is coming.
            clientFailed(TransportError(.clientAborted, "the client closed the connection mid-exchange"))
        }
    }

    /// The client half-closed while this request was held (`log.whenBehind: wait`), before
    /// the exchange could read its body: the body can only be what is already buffered,
    /// which the pump forwards once an upstream is attached, and then judges.
    func clientEndedWhileHeld() {
        clientEnded = true
        if attached && !requestDone { pumpRequest() }
    }

    func upstreamWritable(_ connection: UpstreamConnection) {
        guard clientPaused, let bev = connection.bev else { return }
        clientPaused = false
        stallTimer?.cancel()
        bufferevent_setwatermark(bev, Int16(EV_WRITE), 0, 0)
        session.resumeReading()
        pumpRequest()
    }

    /// Returns true when the exchange goes on after the client's half-close.
    /// The client half-closed; whether this exchange can still complete (the session
    /// closes the connection once the requests it already holds are answered).
    func clientEOF() -> Bool {
        // A request without a body is whole once its head is read, even while connecting.
        requestDone || requestFraming == .none
    }

    func clientFailed(_ error: TransportError) {
        guard !finished else { return }
        closeClientAfter = true
        finish(error: error, respond: nil)
    }

    /// The session is going away: account for the exchange and drop the upstream.
    func abandon() {
        guard !finished else { return }
        closeClientAfter = true
        finish(error: TransportError(.clientAborted, "the client closed the connection mid-exchange"), respond: nil)
    }

    // MARK: response

    func upstreamReadable(_ c: UpstreamConnection) {
        guard !finished, let input = c.input else { return }
        // Interim answers and the head are staged; whatever was staged goes out in one write.
        defer { session.flush() }
        if !responseBytesSeen, evbuffer_get_length(input) > 0 {
            responseBytesSeen = true
            clock.firstResponseByte = now()
        }
        while responseHead == nil && !finished {
            let available = evbuffer_get_length(input)
            if available == 0 { return }
            let n = min(available, config.maxHeaderBytes + 4)
            guard let p = evbuffer_pullup(input, n) else { return }
            let parsed: HeadParseResult<HTTPResponseHead>
            do {
                parsed = try HTTPHeadParser.parseResponseHead(UnsafeRawBufferPointer(start: p, count: n), maxHeadBytes: config.maxHeaderBytes)
            } catch {
                failBeforeResponse(TransportError(.malformedResponse, "malformed response head from the origin: \(error.reason)"))
                return
            }
            guard case .complete(let rh, let length) = parsed else { return }
            evbuffer_drain(input, length)
            engine.metrics.bytesFromUpstreams.add(length)
            if rh.status == 101 {
                guard wantsUpgrade else {
                    failBeforeResponse(TransportError(.malformedResponse, "the origin switched protocols without being asked"))
                    return
                }
                responseHead = rh
                startWebSocket(rh, c)
                return
            }
            if rh.status < 200 {
                // 100 Continue and other interim answers go to the client as they are, except
                // to an HTTP/1.0 client, which would take one for the final answer (RFC 9110 §15.2).
                if head.version == .http1_0 { continue }
                var interim = rh
                interim.headers = rh.headers.removingHopByHop(keepUpgrade: false)
                session.write(interim.serialized())
                continue
            }
            let framing: BodyFraming
            do { framing = try rh.bodyFraming(requestMethod: head.method) } catch {
                failBeforeResponse(TransportError(.malformedResponse, "malformed response framing from the origin: \(error.reason)"))
                return
            }
            responseHead = rh
            responseFramer = BodyFramer(framing)
            forwardResponseHead(rh, framing: framing)
        }
        pumpResponse()
    }

    private func forwardResponseHead(_ rh: HTTPResponseHead, framing: BodyFraming) {
        // The request goes upstream as HTTP/1.1, so the origin may chunk; an HTTP/1.0 client
        // gets the payload without Transfer-Encoding and the end of the body by the close,
        // as nginx and squid do (RFC 9112 §6.1).
        dechunkResponse = framing == .chunked && head.version == .http1_0
        if framing == .closeDelimited || dechunkResponse || !requestDone || engine.isDraining || session.sentItsLastRequest {
            closeClientAfter = true
        }
        let connection: String? = closeClientAfter ? "close" : head.version == .http1_0 ? "keep-alive" : nil
        rh.writeForwardedWireForm(connection: connection, droppingTransferEncoding: dechunkResponse) { session.write(capacity: $0, $1) }
        headForwarded = true
    }

    private func pumpResponse() {
        guard !finished, let c = upstream, let input = c.input, let out = session.clientOutput, var framer = responseFramer else { return }
        let before = evbuffer_get_length(input)
        let done: Bool
        do {
            done = try pumpBody(from: input, to: out, framer: &framer, capture: &responseCapture, captureLimit: config.captureMaxBodyBytes,
                                payloadOnly: dechunkResponse)
            responseFramer = framer
            session.flush()
        } catch {
            responseFramer = framer
            session.flush()
            closeClientAfter = true
            finish(error: TransportError(.malformedResponse, "malformed response body from the origin: \(error.reason)"), respond: nil)
            return
        }
        engine.metrics.bytesFromUpstreams.add(before - evbuffer_get_length(input))
        if done {
            clock.lastResponseByte = now()
            finish(error: nil, respond: nil)
            return
        }
        if session.queuedOutputLength >= config.highWaterBytes, let cbev = session.bev {
            upstreamPaused = true
            c.setReading(false)
            bufferevent_setwatermark(cbev, Int16(EV_WRITE), config.highWaterBytes / 2, 0)
            armStallTimer(after: config.clientIdleTimeout, TransportError(.clientTimeout,
                "the client took none of the answer for \(config.clientIdleTimeout) s"))
        }
    }

    private func armStallTimer(after seconds: Double, _ error: TransportError) {
        stallError = error
        let timer = stallTimer ?? LoopTimer(loop: session.loop) { [weak self] in self?.stalled() }
        timer.schedule(after: seconds)
        stallTimer = timer
    }

    /// The paused side took nothing for its whole limit: the exchange fails and the client
    /// connection closes at once (what is queued for it would never be read).
    private func stalled() {
        guard !finished, upstreamPaused || clientPaused, let error = stallError else { return }
        closeClientAfter = true
        finish(error: error, respond: nil)
        session.close()
    }

    func clientWritable() {
        guard upstreamPaused, let c = upstream, let cbev = session.bev else { return }
        upstreamPaused = false
        stallTimer?.cancel()
        bufferevent_setwatermark(cbev, Int16(EV_WRITE), 0, 0)
        c.setReading(true)
        pumpResponse()
    }

    func upstreamEvent(_ c: UpstreamConnection, events: Int16) {
        guard !finished else { return }
        let e = Int32(events)
        if e & (BEV_EVENT_EOF | BEV_EVENT_ERROR) != 0 { upstreamEnded = true }
        if e & BEV_EVENT_TIMEOUT != 0 {
            let err = TransportError(.upstreamTimeout, "the origin sent nothing for \(config.upstreamReadTimeout) s")
            if headForwarded { closeClientAfter = true; finish(error: err, respond: nil) } else { failBeforeResponse(err) }
            return
        }
        // EOF or error: whatever is still buffered belongs to the response.
        if responseHead != nil { pumpResponse() } else if let input = c.input, evbuffer_get_length(input) > 0 { upstreamReadable(c) }
        guard !finished else { return }
        let reset = e & BEV_EVENT_ERROR != 0
        if var framer = responseFramer {
            let cleanEnd = !reset && framer.finishAtEOF()
            responseFramer = framer
            closeClientAfter = true
            c.close()
            if cleanEnd {
                clock.lastResponseByte = now()
                finish(error: nil, respond: nil)
            } else {
                finish(error: TransportError(.upstreamReset, "the origin closed the connection before the body was complete"), respond: nil)
            }
            return
        }
        if !responseBytesSeen && connectionReused && !retried && isIdempotent && requestFraming == .none {
            // A pooled connection the origin had already closed: try once more on a fresh one.
            retried = true
            c.owner = nil
            c.close()
            upstream = nil
            connectNew()
            return
        }
        let why = responseBytesSeen ? "the origin closed the connection inside the response head"
                                    : "the origin closed the connection without answering"
        failBeforeResponse(TransportError(responseBytesSeen ? .malformedResponse : .upstreamReset, why))
    }

    // MARK: ending

    /// A failure before any response head reached the client: answer with the matching status.
    private func failBeforeResponse(_ error: TransportError) {
        guard !finished else { return }
        let (status, reason) = error.code.statusForClient
        if !requestDone { closeClientAfter = true }
        finish(error: error, respond: (status, reason, error.message))
    }

    private func finish(error: TransportError?, respond: (Int, String, String)?) {
        guard !finished else { return }
        finished = true
        stallTimer?.cancel()
        if clock.lastResponseByte == nil { clock.lastResponseByte = now() }
        if let c = upstream {
            c.owner = nil
            let reusable = error == nil && requestDone && !(responseHead?.wantsClose ?? true)
                && responseFramer.map { $0.isComplete } == true && c.bev != nil
                && !upstreamEnded && c.outputLength == 0
                && !engine.isDraining
            if reusable, let rh = responseHead, rh.status >= 200 {
                session.loop.pool.put(c, idleTimeout: config.upstreamIdleTimeout)
            } else {
                c.close()
            }
            if upstreamPaused, let cbev = session.bev { bufferevent_setwatermark(cbev, Int16(EV_WRITE), 0, 0) }
        }
        upstream = nil
        emitRecord(error: error)
        if let (status, reason, detail) = respond {
            session.respondError(status, reason, detail, close: closeClientAfter)
        } else if error != nil {
            session.closeAfterFlush()
        } else {
            session.exchangeFinished(keepAlive: !closeClientAfter)
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
        return CapturedExchange(client: session.peerText, url: url, request: head, requestBody: requestBody,
                                response: responseHead, responseBody: responseBody, error: error, clock: clock,
                                connectionReused: connectionReused, upstreamAddress: upstreamAddressText)
    }

    private var upstreamAddressText: String?

    private func emitRecord(error: TransportError?) {
        let duration = (clock.lastResponseByte ?? now()) - clock.requestStart
        engine.metrics.recordExchange(status: responseHead?.status, duration: duration)
        engine.sink?.accept(.http(capturedValue(error: error)))
    }

    // MARK: tunnels

    /// - Parameter answered: the client already got its 200 (an intercepted CONNECT that
    ///   turned out not to speak TLS): none is sent, and a failure can only close.
    func beginConnectTunnel(answered: Bool = false) {
        session.pauseReading()
        let c = UpstreamConnection(loop: session.loop, authority: authority)
        upstream = c
        let start = now()
        c.connect(timeout: config.connectTimeout, isOwnListener: engine.isOwnListener, phase: { _ in }) { [weak self] result in
            guard let self, !self.finished else { return }
            self.finished = true
            self.upstream = nil
            switch result {
            case .failure(let error):
                let (status, reason) = error.code.statusForClient
                self.engine.sink?.accept(.tunnel(CapturedTunnel(kind: .connect, client: self.session.peerText,
                    target: self.authority.description, status: status, bytesFromClient: 0, bytesFromUpstream: 0,
                    start: start, end: self.now(), closedBy: .error, error: error, upgrade: nil)))
                if answered { self.session.close() } else { self.session.respondError(status, reason, error.message, close: true) }
            case .success:
                if !answered { self.session.write(Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)) }
                guard let upstreamSocket = c.detachBufferevent() else { self.session.close(); return }
                let session = self.session
                let tunnelStart = start
                session.handOver { clientSocket in
                    Tunnel.start(loop: session.loop, engine: session.engine, kind: .connect, client: clientSocket,
                                 upstream: upstreamSocket, clientText: session.peerText, target: self.authority.description,
                                 status: 200, start: tunnelStart, upgrade: nil)
                }
            }
        }
    }

    private func startWebSocket(_ rh: HTTPResponseHead, _ c: UpstreamConnection) {
        finished = true
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
        session.handOver { clientSocket in
            Tunnel.start(loop: session.loop, engine: session.engine, kind: .websocket, client: clientSocket,
                         upstream: upstreamSocket, clientText: session.peerText, target: target,
                         status: 101, start: start, upgrade: upgrade)
        }
    }
}
