import CLibevent
import CNghttp2
import Foundation
import HTTP1

/// One request stream of an `HTTP2Connection`, and the client side of its `Exchange`
/// (`ExchangeClient`): the request's fields become an `HTTPRequestHead` (version 2.0,
/// `:authority` as Host), its DATA an HTTP/1.1-framed body in `input` (as sent when the
/// client declared a Content-Length, else chunked by Tapwire), and the exchange's answer a
/// HEADERS frame and DATA frames fed from `output`. Drives an `HTTP2StreamStateMachine`.
///
/// Ownership: both evbuffers are this object's (freed in `deinit`); the exchange holds
/// this stream strongly until it finishes, and the connection holds it until nghttp2
/// reports the stream closed or the connection abandons its streams, which breaks the
/// stream → connection cycle.
final class HTTP2Stream: ExchangeClient {
    /// Strong, not `unowned`: an unowned load retains through the refcount's slow path
    /// (`swift_unownedRetainStrong`) on every access, which the per-stream hot path makes
    /// many times; the cycle is broken as described above.
    let connection: HTTP2Connection
    /// The session's, kept here so that the exchange's many `loop`/`engine`/`config` reads
    /// do not go through the connection and the session each time. Both outlive every stream.
    let loop: EventLoop
    let engine: ProxyEngine
    let id: Int32
    private let input: OpaquePointer
    private let output: OpaquePointer
    private var fields: [(name: String, value: String)] = []
    /// The request's trailer fields (a HEADERS frame after DATA), sent on in the last chunk.
    private var requestTrailers: [(name: String, value: String)] = []
    /// The response's, sent as a last HEADERS frame once the DATA is out.
    private var responseTrailers: HTTPHeaders?
    /// The request as forwarded, settled when its header block ended.
    private var parsedHead: Result<HTTP2RequestHead, HTTP2RequestHead.Refusal>?
    private var headerListBytes = 0
    private var machine = HTTP2StreamStateMachine()
    private var exchange: Exchange<HTTP2Stream>?
    /// DATA payload bytes received and not yet returned to the flow-control windows.
    private var unconsumed = 0
    private var drainMark: Int?
    private var readTimer: LoopTimer?
    private var readTimeout: Double?

    /// Nil when the buffers cannot be allocated (the stream is then refused).
    init?(connection: HTTP2Connection, id: Int32) {
        guard let input = evbuffer_new() else { return nil }
        guard let output = evbuffer_new() else { evbuffer_free(input); return nil }
        self.connection = connection
        self.loop = connection.session.loop
        self.engine = connection.session.engine
        self.id = id
        self.input = input
        self.output = output
    }

    deinit {
        evbuffer_free(input)
        evbuffer_free(output)
    }

    // MARK: ExchangeClient

    var config: EngineConfiguration { _read { yield engine.configuration } }
    var peerText: String { connection.session.peerText }
    var isIntercepting: Bool { true }
    var isOpen: Bool { machine.isOpen && connection.nghttp2Session != nil }
    var clientInput: OpaquePointer? { input }
    var clientOutput: OpaquePointer? { output }
    var queuedOutputLength: Int { evbuffer_get_length(output) }
    var sentItsLastRequest: Bool { false }
    var takesPayloadOnly: Bool { true }

    func pauseReading() { machine.pauseReading() }

    func resumeReading() {
        machine.resumeReading()
        consumeTaken()
        connection.send()
    }

    func setClientReadTimeout(_ seconds: Double?) {
        readTimeout = seconds
        armReadTimer()
    }

    func flush() {
        guard machine.responseStarted, let nghttp2 = connection.nghttp2Session else { return }
        _ = nghttp2_session_resume_data(nghttp2, id)
        connection.send()
    }

    func forwardResponseHead(_ head: HTTPResponseHead, connection _: String?, droppingTransferEncoding _: Bool) {
        let headers = head.headers.removingHopByHop(keepUpgrade: false)
        // An empty answer ends with its HEADERS frame: a gRPC trailers-only answer (its status
        // in the head) must, or the client finds no status in the trailers it waits for.
        submitResponse(status: head.status, headers: headers,
                       hasBody: HTTP2Stream.responseHasBody(status: head.status, requestMethod: exchange?.head.method)
                           && head.headers.first(name: "Content-Length") != "0")
    }

    func forwardTrailers(_ trailers: HTTPHeaders) { responseTrailers = trailers }

    /// Interim answers are not passed on: HTTP/2 clients do not wait for 100 Continue
    /// before sending (RFC 9113 §8.1 allows them but nothing needs them here).
    func forwardInterim(_ head: HTTPResponseHead) {}

    func watchOutputDrain(below bytes: Int?) { drainMark = bytes }

    func respondError(_ status: ProxyStatus, _ detail: String, close: Bool) {
        let body = Array("\(status.code) \(status.reasonPhrase): \(detail)\n".utf8)
        exchange = nil
        guard machine.isOpen, !machine.responseStarted else { reset(); return }
        evbuffer_add(output, body, body.count)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "text/plain; charset=utf-8")
        headers.add(name: "content-length", value: String(body.count))
        submitResponse(status: status.code, headers: headers, hasBody: true)
        machine.responseEnded()
        flush()
    }

    /// The answer was cut after its head: the stream is reset, as an HTTP/1.1 connection
    /// would be closed.
    func closeAfterFlush() {
        exchange = nil
        reset()
    }

    func exchangeFinished(keepAlive _: Bool) {
        exchange = nil
        readTimer?.cancel()
        machine.responseEnded()
        flush()
    }

    func close() {
        exchange = nil
        reset()
    }

    func write(_ bytes: [UInt8]) { evbuffer_add(output, bytes, bytes.count) }

    func handOver(to tunnelBuilder: (HandedOverSocket) -> Void) { reset() }

    /// Never reached (see `ExchangeClient`): HTTP/2 streams refuse CONNECT first.
    func answerConnectEstablished() { reset() }

    func refuseConnect(_ status: ProxyStatus, _ error: TransportError, parentAnswer _: [UInt8]?) {
        respondError(status, error.message, close: true)
    }

    /// Never reached (see `ExchangeClient`); the socket is freed rather than leaked.
    func awaitFirstBytes(head: HTTPRequestHead, authority: HTTPAuthority, upstream: HandedOverSocket, start: Double) {
        bufferevent_free(upstream.bev)
        reset()
    }

    /// The stream has a whole head (an exchange runs, waits for the log, or its answer is
    /// going out): the connection is busy. A header block still arriving is not: a client
    /// that stalls inside one stalls the whole connection (nothing may interleave with it).
    var keepsConnectionBusy: Bool { machine.isOpen && machine.headersDone }

    // MARK: from the connection (request side)

    /// One field of the request's head (or trailers); false once the list passes `limit`.
    func addHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, limit: Int) -> Bool {
        headerListBytes += name.count + value.count + 32
        guard headerListBytes <= limit else { return false }
        let field = (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
        if machine.headersDone { requestTrailers.append(field) } else { fields.append(field) }
        return true
    }

    /// The request's header block ended (called from nghttp2's callback: pure, no call-outs).
    /// True when an exchange is to start.
    func headBlockEnded(endStream: Bool) -> Bool {
        guard machine.headersComplete(endStream: endStream) else { return false }
        let parsed = HTTP2RequestHead.make(fields: fields, endStream: endStream)
        fields = []
        if case .success(let request) = parsed { machine.requestChunked = request.framing == .chunked }
        parsedHead = parsed
        return true
    }

    /// Starts the exchange, or, while the log is behind (`log.whenBehind: wait`), holds the
    /// stream as an HTTP/1.1 session holds its next request: its body stays unread, so the
    /// client's window stays closed, until `startHeld`.
    func headersComplete() {
        guard let parsed = parsedHead, machine.isOpen else { return }
        if case .success = parsed, let sink = engine.sink, sink.isBehind {
            connection.hold(self)
            return
        }
        parsedHead = nil
        switch parsed {
        case .failure(let error):
            respondError(.badRequest, error.reason, close: false)
        case .success(let request):
            let authority = connection.authority
            let ex = Exchange(session: self, head: request.head, authority: authority, originTarget: request.path,
                              framing: request.framing, url: authority.url(originTarget: request.path))
            if connection.keepHost { ex.forwardedHost = request.head.headers.first(name: "host") }
            exchange = ex
            ex.begin()
            // Bytes that came while held are taken now; the exchange reads what follows.
            if request.framing != .none { deliver() }
        }
    }

    /// The log caught up: the held stream starts (or is held again).
    func startHeld() { headersComplete() }

    /// Shutdown while held: answered, never started.
    func refuseHeld() {
        parsedHead = nil
        respondError(.serviceUnavailable, "Tapwire is shutting down", close: false)
    }

    /// DATA payload: kept framed for the exchange's HTTP/1.1 body framer.
    func received(_ data: UnsafeBufferPointer<UInt8>) {
        guard let base = data.baseAddress, !data.isEmpty else { return }
        unconsumed += data.count
        if machine.requestChunked {
            let size = Array((String(data.count, radix: 16) + "\r\n").utf8)
            evbuffer_add(input, size, size.count)
            evbuffer_add(input, base, data.count)
            evbuffer_add(input, "\r\n", 2)
        } else {
            evbuffer_add(input, base, data.count)
        }
    }

    func requestEnded() {
        guard machine.requestEnded() else { return }
        if machine.requestChunked {
            // The last chunk carries the trailers (RFC 9112 §7.1.2); a body sent with a
            // Content-Length has nowhere to put them over HTTP/1.1, so they are dropped.
            var last = "0\r\n"
            for (name, value) in requestTrailers where !HTTP2FieldList.isConnectionSpecific(name) {
                last += "\(name): \(value)\r\n"
            }
            last += "\r\n"
            let bytes = Array(last.utf8)
            evbuffer_add(input, bytes, bytes.count)
        }
        deliver()
    }

    /// Gives buffered body bytes to the exchange; what it took reopens the windows.
    func deliver() {
        armReadTimer()
        exchange?.clientReadable()
        consumeTaken()
    }

    func requestBodyTaken() {
        consumeTaken()
        connection.send()
    }

    /// Returns the bytes the exchange took to the flow-control windows, unless it paused
    /// the request (the upstream is slow): what still waits in `input` keeps the window
    /// closed, so a stream never buffers more than its window. (The waiting bytes include
    /// chunk framing, so slightly less is returned until the input empties.)
    private func consumeTaken() {
        guard unconsumed > 0, !machine.readingPaused, let nghttp2 = connection.nghttp2Session else { return }
        let taken = unconsumed - min(unconsumed, evbuffer_get_length(input))
        guard taken > 0 else { return }
        _ = nghttp2_session_consume(nghttp2, id, taken)
        unconsumed -= taken
    }

    /// nghttp2 closed the stream (answered whole, or reset by either side).
    func closed(errorCode: UInt32) {
        readTimer?.cancel()
        let wasOpen = machine.closed()
        // A bodyless answer ends the stream with its HEADERS frame, possibly before the
        // exchange has judged the (empty) body: it is whole, and the exchange finishes itself.
        let answeredWhole = errorCode == NGHTTP2_NO_ERROR.rawValue && machine.responseIsEnded
        if let ex = exchange, wasOpen, !answeredWhole {
            exchange = nil
            ex.clientFailed(TransportError(.clientAborted, errorCode == NGHTTP2_NO_ERROR.rawValue
                ? "the HTTP/2 stream closed mid-exchange"
                : "the client reset the HTTP/2 stream (\(HTTP2Connection.errorCodeName(errorCode)))"))
        }
        if unconsumed > 0, let nghttp2 = connection.nghttp2Session {
            _ = nghttp2_session_consume_connection(nghttp2, unconsumed)
            unconsumed = 0
        }
    }

    /// The whole connection ended.
    func connectionEnded(_ error: TransportError) {
        readTimer?.cancel()
        _ = machine.closed()
        guard let ex = exchange else { return }
        exchange = nil
        ex.clientFailed(error)
    }

    // MARK: response side

    private func submitResponse(status: Int, headers: HTTPHeaders, hasBody: Bool) {
        guard let nghttp2 = connection.nghttp2Session, machine.startResponse() else { return }
        var fields = HTTP2FieldList(capacity: headers.count + 1)
        fields.append(name: ":status", value: String(status))
        // Transfer-Encoding survives HTTP/1.1's hop-by-hop filter (it frames the body there);
        // the field list leaves it out with the other connection-specific fields.
        fields.append(headers)
        var provider = nghttp2_data_provider()
        provider.read_callback = { _, streamID, buffer, length, flags, _, user in
            guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            let connection = Unmanaged<HTTP2Connection>.fromOpaque(user).takeUnretainedValue()
            guard let stream = connection.streams[streamID] else {
                return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)
            }
            return stream.readResponse(into: buffer, length: length, flags: flags)
        }
        // nghttp2 copies the names and values before returning.
        let rc = fields.withList { list, count in
            hasBody ? nghttp2_submit_response(nghttp2, id, list, count, &provider)
                    : nghttp2_submit_response(nghttp2, id, list, count, nil)
        } ?? -1
        if rc != 0 { reset() }
        if !hasBody {
            evbuffer_drain(output, evbuffer_get_length(output))
            machine.responseEnded()
        }
    }

    /// nghttp2 asks for up to `length` bytes of DATA.
    private func readResponse(into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        let n = Int(evbuffer_remove(output, buffer, length))
        let left = evbuffer_get_length(output)
        if let mark = drainMark, left <= mark { drainMark = nil; connection.streamDrained(self) }
        if left == 0 && machine.responseIsEnded {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            if let trailers = responseTrailers, !trailers.isEmpty, let nghttp2 = connection.nghttp2Session {
                // The stream ends with the trailers' HEADERS frame instead (nghttp2 allows
                // submitting them from this callback).
                responseTrailers = nil
                var fields = HTTP2FieldList(capacity: trailers.count)
                fields.append(trailers)
                let rc = fields.withList { nghttp2_submit_trailer(nghttp2, id, $0, $1) } ?? -1
                if rc == 0 { flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue }
            }
            return max(0, n)
        }
        if n <= 0 { return Int(NGHTTP2_ERR_DEFERRED.rawValue) }
        return n
    }

    /// The exchange may send again (backpressure released).
    func outputDrained() { exchange?.clientWritable() }

    /// The answer's last frame went out (END_STREAM): a request body still coming is
    /// declined, as `HTTP2StreamStateMachine.declinesRestOfRequest` says.
    func lastResponseFrameSent() {
        guard machine.declinesRestOfRequest, let nghttp2 = connection.nghttp2Session else { return }
        _ = nghttp2_submit_rst_stream(nghttp2, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, UInt32(NGHTTP2_NO_ERROR.rawValue))
    }

    private func reset() {
        readTimer?.cancel()
        guard machine.closed(), let nghttp2 = connection.nghttp2Session else { return }
        _ = nghttp2_submit_rst_stream(nghttp2, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, UInt32(NGHTTP2_INTERNAL_ERROR.rawValue))
        connection.send()
    }

    /// `limits.clientIdleTimeout` while the exchange waits for request body bytes.
    private func armReadTimer() {
        guard let seconds = readTimeout, exchange != nil else { readTimer?.cancel(); return }
        // Unowned (no side table, see ClientSession's head timer): the stream's own timer.
        let timer = readTimer ?? LoopTimer(loop: loop) { [unowned self] in
            guard let ex = self.exchange else { return }
            ex.clientFailed(TransportError(.clientTimeout, "client sent nothing for \(self.config.clientIdleTimeout) s"))
        }
        timer.schedule(after: seconds)
        readTimer = timer
    }

    static func responseHasBody(status: Int, requestMethod: String?) -> Bool {
        !(requestMethod == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status))
    }
}
