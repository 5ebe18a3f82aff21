import CLibevent
import CNghttp2
import Foundation
import HTTP1

/// HTTP/2 with one client, intercepted (ALPN `h2`) or on a reverse listener with `h2c`
/// (`HTTP2PriorKnowledge`), driven by nghttp2 from the loop:
/// received bytes go in through `nghttp2_session_mem_recv`, what it has to send comes out
/// of `nghttp2_session_mem_send` into the TLS filter's output. Server push is never sent
/// (nothing calls `nghttp2_submit_push_promise`). Each request stream is an
/// `HTTP2Stream`, which is the client side of an ordinary `Exchange` to the origin.
///
/// nghttp2's callbacks only note what happened (a stream's head is whole, its data came,
/// it closed); the events are handled after `mem_recv` returns (`handleEvents`), because
/// nghttp2 must not be re-entered from its callbacks and an exchange may call back at once.
///
/// Ownership: the `nghttp2_session` is this object's (created in `init`, deleted in
/// `abandon` or `deinit`); its user data is this object, unretained, which is safe because
/// the session never outlives it. The bufferevent is the `ClientSession`'s, and the session
/// holds this object strongly until it closes (and this object it, see `session`).
final class HTTP2Connection {
    /// Strong, not `unowned` (an unowned load takes the refcount's slow path each time):
    /// the session drops `http2` when it closes, which breaks the cycle.
    let session: ClientSession
    let authority: HTTPAuthority
    /// A reverse listener's `keepHost`: each stream's `:authority` goes to the origin as Host.
    let keepHost: Bool
    private let bev: OpaquePointer
    private var nghttp2: OpaquePointer?
    private(set) var streams: [Int32: HTTP2Stream] = [:]
    private var events: [Event] = []
    /// Streams whose queued response dropped to the exchange's drain mark while nghttp2 took it.
    private var drained: [HTTP2Stream] = []
    private var sending = false
    private var sendAgain = false
    /// The read callback came while sending; `send` reads once its loop is done.
    private var readDeferred = false
    private var resets: FrameRateLimit
    private var settings: FrameRateLimit
    /// Why the connection is being closed by Tapwire, once it is.
    private(set) var failure: TransportError?
    private var failureRecorded = false
    private let startedAt = Date().timeIntervalSince1970
    /// `limits.clientIdleTimeout` while no stream is busy (`HTTP2Stream.keepsConnectionBusy`):
    /// then GOAWAY (NO_ERROR) and close. Counted from when the connection last became quiet.
    private var idleTimer: LoopTimer?
    private var bytesIn: UInt64 = 0
    private var bytesOut: UInt64 = 0

    var config: EngineConfiguration { _read { yield session.engine.configuration } }
    var isIdle: Bool { streams.isEmpty }

    enum Event {
        case headersComplete(Int32)
        case data(Int32)
        case requestEnded(Int32)
        case closed(Int32, errorCode: UInt32)
    }

    init(session: ClientSession, bev: OpaquePointer, authority: HTTPAuthority, keepHost: Bool = false) throws {
        self.session = session
        self.bev = bev
        self.authority = authority
        self.keepHost = keepHost
        let config = session.config
        resets = FrameRateLimit(burst: config.http2ResetBurst, perSecond: config.http2ResetsPerSecond)
        settings = FrameRateLimit(burst: config.http2SettingsPerSecond, perSecond: config.http2SettingsPerSecond)
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { throw EngineError.eventBase }
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(callbacks)
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { throw EngineError.eventBase }
        defer { nghttp2_option_del(option) }
        // Windows are reopened as the exchanges take the bytes (`HTTP2Stream.consumeTaken`),
        // so a slow origin holds back its own client stream, not the whole connection.
        nghttp2_option_set_no_auto_window_update(option, 1)
        nghttp2_option_set_max_continuations(option, config.http2MaxContinuations)
        // nghttp2's own rapid-reset limit stays as a backstop above Tapwire's, which names the cause.
        nghttp2_option_set_stream_reset_rate_limit(option, UInt64(config.http2ResetBurst) * 2,
                                                   UInt64(max(1, config.http2ResetsPerSecond)) * 2)
        var created: OpaquePointer?
        let user = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_server_new2(&created, callbacks, user, option) == 0, let created else {
            throw EngineError.eventBase
        }
        nghttp2 = created
    }

    deinit { if let nghttp2 { nghttp2_session_del(nghttp2) } }

    /// Per-stream window: a stream buffers at most `limits.highWaterBytes` of request body
    /// the exchange has not taken, like an HTTP/1.1 connection's paused input.
    private var streamWindow: Int32 { Int32(min(config.highWaterBytes, Int(Int32.max))) }

    /// Sends the server preface (SETTINGS) and reads what the client already sent.
    func start() {
        guard let nghttp2 else { return }
        var entries = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(config.http2MaxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: UInt32(streamWindow)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(min(config.maxHeaderBytes, Int(UInt32.max)))),
        ]
        _ = nghttp2_submit_settings(nghttp2, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        // The connection window: room for several streams' windows at once.
        let connectionWindow = Int64(streamWindow) * Int64(min(16, config.http2MaxConcurrentStreams))
        _ = nghttp2_session_set_local_window_size(nghttp2, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                                                  Int32(min(connectionWindow, Int64(Int32.max))))
        // Output drained to half the high-water mark calls `writable`, which sends more.
        bufferevent_setwatermark(bev, Int16(EV_WRITE), config.highWaterBytes / 2, 0)
        readable()
        send()
        armIdleTimerIfIdle()
    }

    private var isQuiet: Bool { !streams.values.contains { $0.keepsConnectionBusy } }

    private func armIdleTimerIfIdle() {
        guard isQuiet, nghttp2 != nil else { idleTimer?.cancel(); return }
        // Unowned (no side table, see ClientSession's head timer): the connection's own timer.
        let timer = idleTimer ?? LoopTimer(loop: session.loop) { [unowned self] in self.idleTimedOut() }
        if !timer.isScheduled { timer.schedule(after: config.clientIdleTimeout) }
        idleTimer = timer
    }

    private func idleTimedOut() {
        guard isQuiet, let nghttp2 else { return }
        _ = nghttp2_session_terminate_session(nghttp2, UInt32(NGHTTP2_NO_ERROR.rawValue))
        send()
        if self.nghttp2 != nil { finishConnection() }
    }

    // MARK: reading

    /// Also reached from inside `sendFrames`: adding to the TLS filter's output can make it
    /// read, and its read callback runs at once (no deferred callbacks). The bytes are then
    /// left for `send` to read once its loop is done, so the session is never freed under it.
    func readable() {
        if sending { readDeferred = true; return }
        let input = bufferevent_get_input(bev)
        // `self.nghttp2` is read again on each pass: a callback reached from a drain may
        // have ended the session.
        while let nghttp2, let input, evbuffer_get_length(input) > 0 {
            var vec = iovec()
            guard evbuffer_peek(input, -1, nil, &vec, 1) > 0, let base = vec.iov_base, vec.iov_len > 0 else { break }
            let n = nghttp2_session_mem_recv(nghttp2, base.assumingMemoryBound(to: UInt8.self), vec.iov_len)
            if n < 0 {
                fail(Self.failure(forLibraryError: Int32(n)), goAway: Self.goAwayCode(forLibraryError: Int32(n)))
                return
            }
            bytesIn += UInt64(n)
            session.engine.metrics.bytesFromClients.add(n)
            evbuffer_drain(input, n)
            if self.nghttp2 == nil { return }
            if let failure, !failureRecorded {
                // Abuse noted in a callback: nothing more of this client is acted on.
                fail(failure, goAway: nil)
                return
            }
        }
        guard nghttp2 != nil else { return }
        handleEvents()
        send()
    }

    /// Acts on what the callbacks noted, in order.
    private func handleEvents() {
        while !events.isEmpty {
            let batch = events
            events.removeAll(keepingCapacity: true)
            for event in batch {
                switch event {
                case .headersComplete(let id):
                    streams[id]?.headersComplete()
                case .data(let id):
                    streams[id]?.deliver()
                case .requestEnded(let id):
                    streams[id]?.requestEnded()
                case .closed(let id, let errorCode):
                    if let stream = streams.removeValue(forKey: id) { stream.closed(errorCode: errorCode) }
                }
            }
        }
        armIdleTimerIfIdle()
    }

    // MARK: writing

    /// Moves what nghttp2 has to send into the client's output, while that output is below
    /// `limits.highWaterBytes` (past it, `writable` resumes): a client that does not read
    /// stops being written, and nghttp2 then refuses to queue its unanswered pings and
    /// SETTINGS beyond its own bound (a flood, `http2Flood`).
    func send() {
        if sending { sendAgain = true; return }
        sendFrames()
        // Abuse noted while sending (a reset the library sent, "MadeYouReset") ends the
        // connection here, once no `mem_send` loop holds the session.
        if let failure, !failureRecorded, nghttp2 != nil { fail(failure, goAway: nil); return }
        if readDeferred, nghttp2 != nil {
            readDeferred = false
            readable()
        }
    }

    /// Invariant: `self.nghttp2` is read again after anything that can run libevent's
    /// callbacks (`evbuffer_add` to the TLS filter, the streams' handlers), which may end
    /// the session (the client's socket failing closes it at once).
    private func sendFrames() {
        guard nghttp2 != nil else { return }
        sending = true
        defer { sending = false }
        let output = bufferevent_get_output(bev)
        repeat {
            sendAgain = false
            while let nghttp2, session.outputLength < config.highWaterBytes {
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(nghttp2, &data)
                if n < 0 {
                    fail(TransportError(.http2ProtocolError, "HTTP/2 send failed: \(Self.text(Int32(n)))"), goAway: nil)
                    return
                }
                guard n > 0, let data else { break }
                evbuffer_add(output, data, n)
                bytesOut += UInt64(n)
            }
            handleEvents()
            let ready = drained
            drained.removeAll()
            for stream in ready { stream.outputDrained() }
        } while sendAgain && nghttp2 != nil
        guard let nghttp2 else { return }
        if nghttp2_session_want_read(nghttp2) == 0 && nghttp2_session_want_write(nghttp2) == 0 {
            finishConnection()
        }
    }

    func writable() { send() }

    // MARK: ending

    func socketEvent(eof: Bool, error: Bool) {
        if eof || error { session.close() }
    }

    /// Tapwire closes the connection at once: GOAWAY with `goAway` (or the one already
    /// submitted: nghttp2's own after a protocol error it detected, `abuse`'s), a record
    /// naming `error`, the streams abandoned, then the close once the output is sent or the
    /// client has taken none of it for `limits.clientIdleTimeout`. The GOAWAY goes into the
    /// output past `limits.highWaterBytes`: an abuser that does not read must not keep its
    /// streams running behind a GOAWAY waiting for room.
    func fail(_ error: TransportError, goAway: UInt32?) {
        if failure == nil { failure = error }
        if let goAway, let nghttp2 { _ = nghttp2_session_terminate_session(nghttp2, goAway) }
        if nghttp2 != nil, !sending { flushGoAway() }
        recordFailure()
        finishConnection()
    }

    /// Once the session is terminating, nghttp2 sends no more DATA or HEADERS: what comes
    /// out is a frame in progress, the queued control frames (bounded by the library's
    /// flood limit) and the GOAWAY, after which it sends nothing. `mem_send` may also refuse
    /// at once after a fatal receive error. The cap only guards against a library change.
    /// Runs as a send (`sending`), so that a read callback reached from `evbuffer_add` waits.
    private func flushGoAway() {
        sending = true
        defer { sending = false }
        let output = bufferevent_get_output(bev)
        for _ in 0..<Self.maxFramesFlushedAtClose {
            guard let nghttp2, nghttp2_session_want_write(nghttp2) != 0 else { return }
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(nghttp2, &data)
            guard n > 0, let data else { return }
            evbuffer_add(output, data, n)
            bytesOut += UInt64(n)
        }
    }

    private static let maxFramesFlushedAtClose = 4096

    private func finishConnection() {
        idleTimer?.cancel()
        events.removeAll()
        abandonStreams(TransportError(failure?.code ?? .clientAborted,
                                      failure?.message ?? "the HTTP/2 connection closed mid-exchange"))
        if let nghttp2 { nghttp2_session_del(nghttp2) }
        nghttp2 = nil
        session.closeAfterFlush()
    }

    /// The connection is going away under the streams (client closed, Tapwire failed it).
    func abandon() {
        idleTimer?.cancel()
        abandonStreams(TransportError(.clientAborted, "the client closed the HTTP/2 connection mid-exchange"))
        if let nghttp2 { nghttp2_session_del(nghttp2) }
        nghttp2 = nil
    }

    private func abandonStreams(_ error: TransportError) {
        let all = streams.values
        streams.removeAll()
        for stream in all { stream.connectionEnded(error) }
    }

    /// Shutdown: GOAWAY stops new streams; the connection closes once those open are done.
    func drain() {
        guard let nghttp2 else { return }
        if hasHeldStreams { session.releaseHTTP2Hold() }
        refuseHeld()
        _ = nghttp2_submit_shutdown_notice(nghttp2)
        _ = nghttp2_submit_goaway(nghttp2, UInt8(NGHTTP2_FLAG_NONE.rawValue),
                                  nghttp2_session_get_last_proc_stream_id(nghttp2), UInt32(NGHTTP2_NO_ERROR.rawValue), nil, 0)
        send()
        if streams.isEmpty { finishConnection() }
    }

    func closeAtShutdown() {
        abandonStreams(TransportError(.shuttingDown,
            "Tapwire shut down before the exchange finished (limits.drainTimeout \(config.drainTimeout) s)"))
    }

    /// One record per abused connection, like a refused interception's.
    private func recordFailure() {
        guard let failure, !failureRecorded else { return }
        failureRecorded = true
        let engine = session.engine
        engine.metrics.recordTransportError(failure.code)
        engine.sink?.accept(.tunnel(CapturedTunnel(kind: .connect, client: session.peerText, target: authority.description,
                                                   status: 200, bytesFromClient: bytesIn, bytesFromUpstream: bytesOut,
                                                   start: startedAt, end: max(startedAt, Date().timeIntervalSince1970),
                                                   closedBy: .client, error: failure)))
    }

    // MARK: holding streams while the log is behind

    /// Streams whose exchange waits for the log (`log.whenBehind: wait`).
    private var held: [HTTP2Stream] = []
    var hasHeldStreams: Bool { !held.isEmpty }

    func hold(_ stream: HTTP2Stream) {
        session.engine.metrics.holds.add()
        held.append(stream)
        if held.count == 1 { session.holdForHTTP2() }
    }

    /// Called through the session once the log caught up.
    func releaseHeld() {
        let waiting = held
        held.removeAll()
        for stream in waiting where streams[stream.id] === stream { stream.startHeld() }
        send()
    }

    private func refuseHeld() {
        let waiting = held
        held.removeAll()
        for stream in waiting where streams[stream.id] === stream { stream.refuseHeld() }
    }

    // MARK: for streams

    var nghttp2Session: OpaquePointer? { nghttp2 }

    func streamDrained(_ stream: HTTP2Stream) { drained.append(stream) }

    // MARK: nghttp2 callbacks (they note events; `handleEvents` acts)

    fileprivate static func connection(_ user: UnsafeMutableRawPointer?) -> HTTP2Connection? {
        user.map { Unmanaged<HTTP2Connection>.fromOpaque($0).takeUnretainedValue() }
    }

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame, let c = HTTP2Connection.connection(user) else { return 0 }
            return c.beginHeaders(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let c = HTTP2Connection.connection(user) else { return 0 }
            return c.header(streamID: frame.pointee.hd.stream_id,
                            name: UnsafeBufferPointer(start: name, count: nameLength),
                            value: UnsafeBufferPointer(start: value, count: valueLength))
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let c = HTTP2Connection.connection(user) else { return 0 }
            return c.frameReceived(frame.pointee)
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
            guard let data, let c = HTTP2Connection.connection(user) else { return 0 }
            c.dataReceived(streamID: streamID, UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, user in
            HTTP2Connection.connection(user)?.events.append(.closed(streamID, errorCode: errorCode))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, user in
            guard let frame, let c = HTTP2Connection.connection(user) else { return 0 }
            c.frameSent(frame.pointee)
            return 0
        }
    }

    private func beginHeaders(_ frame: nghttp2_frame) -> Int32 {
        guard frame.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
              frame.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
        guard let stream = HTTP2Stream(connection: self, id: frame.hd.stream_id) else {
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue   // refused with RST_STREAM
        }
        streams[frame.hd.stream_id] = stream
        return 0
    }

    /// A request's fields, or its trailers (ignored: HTTP/1.1 upstream requests are sent
    /// with their framing as given, and a trailer section there would need chunking).
    /// The whole list is bounded by `limits.maxHeaderBytes`, counted as RFC 9113 §6.5.2 does
    /// (name + value + 32 per field), so an HPACK bomb fails on its first excess field.
    private func header(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        guard let stream = streams[streamID] else { return 0 }
        if !stream.addHeader(name: name, value: value, limit: config.maxHeaderBytes) {
            failure = failure ?? TransportError(.http2HeaderListTooLarge,
                "the client's header list on stream \(streamID) passed limits.maxHeaderBytes (\(config.maxHeaderBytes))")
            if let nghttp2 { _ = nghttp2_session_terminate_session(nghttp2, UInt32(NGHTTP2_ENHANCE_YOUR_CALM.rawValue)) }
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        return 0
    }

    private func frameReceived(_ frame: nghttp2_frame) -> Int32 {
        let id = frame.hd.stream_id
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        switch UInt32(frame.hd.type) {
        case NGHTTP2_HEADERS.rawValue:
            if frame.headers.cat == NGHTTP2_HCAT_REQUEST {
                // Settled now, not when the event is handled: DATA and trailers that follow
                // in the same read must already see the head as whole and its framing.
                if let stream = streams[id], stream.headBlockEnded(endStream: endStream) {
                    events.append(.headersComplete(id))
                }
            } else if endStream {
                events.append(.requestEnded(id))
            }
        case NGHTTP2_DATA.rawValue:
            if endStream { events.append(.requestEnded(id)) }
        case NGHTTP2_RST_STREAM.rawValue:
            if !resets.admit(now: EventLoop.monotonicNow()) {
                abuse(TransportError(.http2RapidReset,
                    "the client reset streams faster than limits.http2ResetBurst (\(config.http2ResetBurst)) and limits.http2ResetsPerSecond (\(config.http2ResetsPerSecond)) allow"))
            }
        case NGHTTP2_SETTINGS.rawValue:
            if frame.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0, !settings.admit(now: EventLoop.monotonicNow()) {
                abuse(TransportError(.http2Flood,
                    "the client sent SETTINGS faster than limits.http2SettingsPerSecond (\(config.http2SettingsPerSecond)) allows"))
            }
        default:
            break
        }
        return 0
    }

    /// GOAWAY ENHANCE_YOUR_CALM from inside a callback, where nghttp2 must not be re-entered:
    /// `readable` or `send` fails the connection as soon as the library returns.
    private func abuse(_ error: TransportError) {
        guard failure == nil, let nghttp2 else { return }
        failure = error
        _ = nghttp2_session_terminate_session(nghttp2, UInt32(NGHTTP2_ENHANCE_YOUR_CALM.rawValue))
    }

    private func dataReceived(streamID: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard let stream = streams[streamID] else {
            // A stream already answered or reset: its bytes still count against the
            // connection's window, which must reopen or the other streams stall.
            if let nghttp2 { _ = nghttp2_session_consume_connection(nghttp2, data.count) }
            return
        }
        stream.received(data)
        events.append(.data(streamID))
    }

    /// A GOAWAY of ours with an error: nghttp2 found a protocol error, or Tapwire asked for
    /// one (`abuse`, the header bound); either way the record names the cause.
    private func frameSent(_ frame: nghttp2_frame) {
        let type = UInt32(frame.hd.type)
        if type == NGHTTP2_DATA.rawValue || type == NGHTTP2_HEADERS.rawValue,
           frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
            streams[frame.hd.stream_id]?.lastResponseFrameSent()
            return
        }
        if type == NGHTTP2_RST_STREAM.rawValue {
            // A stream the library reset for the client's error (DATA past its content-length,
            // a window overflow) frees its slot as the client's own reset does, after its exchange
            // started: counted in the same budget ("MadeYouReset"). Resets Tapwire sends for
            // its own reasons (INTERNAL_ERROR, CANCEL) are not the client's doing.
            let code = frame.rst_stream.error_code
            if code != NGHTTP2_NO_ERROR.rawValue, code != NGHTTP2_INTERNAL_ERROR.rawValue, code != NGHTTP2_CANCEL.rawValue,
               !resets.admit(now: EventLoop.monotonicNow()) {
                abuse(TransportError(.http2RapidReset,
                    "the client made its streams be reset (\(Self.errorCodeName(code))) faster than limits.http2ResetBurst (\(config.http2ResetBurst)) and limits.http2ResetsPerSecond (\(config.http2ResetsPerSecond)) allow"))
            }
            return
        }
        guard type == NGHTTP2_GOAWAY.rawValue, frame.goaway.error_code != NGHTTP2_NO_ERROR.rawValue else { return }
        if failure == nil {
            failure = TransportError(.http2ProtocolError,
                "the client broke the HTTP/2 protocol; closed with GOAWAY \(Self.errorCodeName(frame.goaway.error_code))")
        }
        recordFailure()
    }

    // MARK: error texts

    static func text(_ libraryError: Int32) -> String { String(cString: nghttp2_strerror(libraryError)) }

    static func errorCodeName(_ code: UInt32) -> String { String(cString: nghttp2_http2_strerror(code)) }

    static func failure(forLibraryError error: Int32) -> TransportError {
        switch error {
        case NGHTTP2_ERR_FLOODED.rawValue, NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue:
            return TransportError(.http2Flood, "the client flooded the HTTP/2 connection: \(text(error))")
        default:
            return TransportError(.http2ProtocolError, "the client broke the HTTP/2 protocol: \(text(error))")
        }
    }

    static func goAwayCode(forLibraryError error: Int32) -> UInt32 {
        switch error {
        case NGHTTP2_ERR_FLOODED.rawValue, NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue:
            return UInt32(NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        default:
            return UInt32(NGHTTP2_PROTOCOL_ERROR.rawValue)
        }
    }
}
