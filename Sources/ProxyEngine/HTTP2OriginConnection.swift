import CLibevent
import CNghttp2
import Foundation
import HTTP1

/// An HTTPS origin that chose `h2` in ALPN: one TLS connection driven by an nghttp2 client
/// session (bytes in through `nghttp2_session_mem_recv`, out through `mem_send`, on the
/// loop), carrying exchanges as streams (`HTTP2OriginStream`, one per exchange). Kept in the
/// loop's `UpstreamPool` while usable, so later exchanges to the same origin open streams on
/// it, up to `upstream.maxConcurrentStreams` and the origin's own
/// SETTINGS_MAX_CONCURRENT_STREAMS; closed after `upstream.idleTimeout` without streams.
///
/// Ownership: the TLS bufferevent and the `nghttp2_session` are this object's, freed in
/// `close()`; their callbacks hold this object unretained and are gone with them. The pool
/// holds a usable connection, each open stream its connection.
final class HTTP2OriginConnection {
    private let loop: EventLoop
    let authority: HTTPAuthority
    let maxHeadBytes: Int
    /// `limits.highWaterBytes`: request payload a stream holds for the origin's window.
    let highWaterBytes: Int
    /// The address connected, as records name it.
    let addressText: String?
    private let maxStreams: Int
    private let idleTimeout: Double
    /// The pool's routing generation this connection was made under (`UpstreamPool.apply`):
    /// after a reload changed how origins are reached, it finishes its streams and takes no
    /// new ones.
    let routingGeneration: Int
    private var tls: OpaquePointer?
    private(set) var session: OpaquePointer?
    /// Streams whose exchange still holds them, the ones without an id yet included.
    private var open: [HTTP2OriginStream] = []
    private var byID: [Int32: HTTP2OriginStream] = [:]
    private var sending = false
    private var idleTimer: LoopTimer?
    /// Set while the session is gone and the TLS connection only sends what is left (a
    /// GOAWAY): its closure holds this connection until `close()` drops it.
    private var lingerTimer: LoopTimer?
    /// nghttp2's account of the last protocol error it found in the origin's frames.
    private var libraryErrorText: String?
    /// Why Tapwire ended the connection, for the records of the streams it cut.
    private var failureCause: String?

    /// - Parameter tls: the handshaken TLS bufferevent; owned from here on (freed by
    ///   `close()`, also when this returns nil).
    init?(loop: EventLoop, authority: HTTPAuthority, tls: OpaquePointer, config: EngineConfiguration, addressText: String?,
          routingGeneration: Int) {
        self.loop = loop
        self.routingGeneration = routingGeneration
        self.addressText = addressText
        self.authority = authority
        self.tls = tls
        maxHeadBytes = config.maxHeaderBytes
        highWaterBytes = config.highWaterBytes
        maxStreams = config.upstreamMaxConcurrentStreams
        idleTimeout = config.upstreamIdleTimeout
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { close(); return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(callbacks)
        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { close(); return nil }
        defer { nghttp2_option_del(option) }
        // Windows reopen as the exchanges take the bytes (`HTTP2OriginStream.consumeForwarded`):
        // a client that stops reading holds back its own stream, as on the client side.
        nghttp2_option_set_no_auto_window_update(option, 1)
        // An origin's header blocks are bounded as a client's are (CONTINUATION flood).
        nghttp2_option_set_max_continuations(option, config.http2MaxContinuations)
        var created: OpaquePointer?
        let user = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_client_new2(&created, callbacks, user, option) == 0, let created else { close(); return nil }
        session = created
        let streamWindow = min(config.highWaterBytes, Int(Int32.max))
        var entries = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
                       nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                              value: UInt32(streamWindow)),
                       // Advisory (RFC 9113 §6.5.2); `HTTP2OriginStream.header` enforces it.
                       nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                              value: UInt32(min(maxHeadBytes, Int(UInt32.max))))]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
        // The connection window lets min(16, maxStreams) streams fill theirs at once.
        _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0,
                                                  Int32(min(Int(Int32.max), streamWindow * min(16, maxStreams))))
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(tls, { _, ctx in
            guard let ctx else { return }
            Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().readable()
        }, { _, ctx in
            guard let ctx else { return }
            Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().send()
        }, { _, events, ctx in
            guard let ctx else { return }
            if Int32(events) & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT) != 0 {
                Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().lost()
            }
        }, ctx)
        bufferevent_enable(tls, Int16(EV_READ | EV_WRITE))
    }

    deinit { close() }

    /// Another stream may start here: the session takes requests (no GOAWAY) and the
    /// streams are below both bounds.
    var hasRoom: Bool {
        guard let session, nghttp2_session_check_request_allowed(session) != 0 else { return false }
        let remote = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return open.count < min(maxStreams, remote)
    }

    /// A new stream for one exchange; returns it and the exchange's end of its pair.
    func openStream() -> (HTTP2OriginStream, OpaquePointer)? {
        guard session != nil, let stream = HTTP2OriginStream(connection: self), let end = stream.open(base: loop.base) else {
            return nil
        }
        idleTimer?.cancel()
        open.append(stream)
        if !hasRoom { loop.pool.removeHTTP2(self) }
        // Bytes that came with the end of the handshake.
        if open.count == 1, let tls, let input = bufferevent_get_input(tls), evbuffer_get_length(input) > 0 { readable() }
        return (stream, end)
    }

    func stream(_ id: Int32) -> HTTP2OriginStream? { byID[id] }

    func streamStarted(_ stream: HTTP2OriginStream) { byID[stream.id] = stream }

    /// The stream's exchange let it go (`cancel`: before its answer was whole).
    func streamClosed(_ stream: HTTP2OriginStream, cancel: Bool) {
        guard let i = open.firstIndex(where: { $0 === stream }) else { return }
        open.remove(at: i)
        if stream.id > 0 {
            byID[stream.id] = nil
            if cancel, let session {
                _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream.id, UInt32(NGHTTP2_CANCEL.rawValue))
                send()
            }
        }
        guard session != nil else { return }
        if routingGeneration != loop.pool.routingGeneration {
            // Made under routing a reload replaced: the pool let it go, and it is not offered
            // again, or a later exchange would reach the origin the old way.
            if open.isEmpty { close() }
            return
        }
        if hasRoom { loop.pool.offerHTTP2(self) }
        if open.isEmpty {
            // Unowned, not weak: the connection owns the timer, whose deinit frees its event,
            // so the closure never runs after the connection is gone; and a weak reference
            // would give the connection a side table, putting every retain and release of it
            // (several per stream, from nghttp2's callbacks) on Swift's slow path.
            let timer = idleTimer ?? LoopTimer(loop: loop) { [unowned self] in
                // Strong from here: the pool may hold the last reference.
                let connection = self
                guard connection.open.isEmpty else { return }
                connection.loop.pool.removeHTTP2(connection)
                connection.close()
            }
            timer.schedule(after: idleTimeout)
            idleTimer = timer
        }
    }

    func close() {
        idleTimer?.cancel()
        if let session { nghttp2_session_del(session); self.session = nil }
        if let tls { bufferevent_free(tls); self.tls = nil }
        let linger = lingerTimer
        lingerTimer = nil
        linger?.cancel()
    }

    /// The TLS connection failed or ended: every stream's answer ends (cut if unfinished).
    private func lost() {
        loop.pool.removeHTTP2(self)
        let streams = open
        close()
        for s in streams { s.endResponse(cause: failureCause) }
    }

    /// The session is over while the connection is up: nghttp2 wants neither to read nor to
    /// write, after the GOAWAY it sent for a protocol error of the origin's (or after the
    /// origin's GOAWAY once the last stream closed). Streams still open are cut, naming the
    /// cause; the GOAWAY already in the output is sent before the connection closes.
    private func sessionEnded() {
        loop.pool.removeHTTP2(self)
        let streams = open
        closeWhenSent()
        for s in streams { s.endResponse(cause: failureCause) }
    }

    /// The origin broke the protocol in a way nghttp2 treats as fatal (`mem_recv` failed: a
    /// flood of PINGs or SETTINGS it left unanswered, a callback failure): GOAWAY with
    /// `code`, sent if the library still can, then as `sessionEnded`.
    private func failed(libraryError: Int32, code: nghttp2_error_code) {
        if failureCause == nil {
            failureCause = "the origin broke the HTTP/2 protocol (\(libraryErrorText ?? String(cString: nghttp2_strerror(libraryError)))); Tapwire closed the connection"
        }
        if let session, !sending {
            _ = nghttp2_session_terminate_session(session, code.rawValue)
            sending = true
            // Bounded as on the client side: once terminating, nghttp2 sends only control
            // frames already queued and the GOAWAY, then nothing. The session and the output
            // are read again each time: `evbuffer_add` may run this connection's callbacks.
            for _ in 0..<4096 {
                guard let session = self.session, let tls, let output = bufferevent_get_output(tls) else { break }
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &data)
                guard n > 0, let data else { break }
                evbuffer_add(output, data, n)
            }
            sending = false
        }
        guard session != nil else { return }
        sessionEnded()
    }

    /// Frees the session now and the TLS connection once its output is written, or after
    /// `upstream.idleTimeout` if the origin takes none of it. Polled every 10 ms: the TLS
    /// filter reports its own buffer drained while the socket below still holds the bytes.
    private func closeWhenSent() {
        idleTimer?.cancel()
        if let session { nghttp2_session_del(session); self.session = nil }
        guard unsentBytes > 0 else { close(); return }
        // Reading goes on (`readable` drops the bytes): a socket closed with unread input
        // sends RST, which can discard the GOAWAY still queued in the kernel.
        let deadline = EventLoop.monotonicNow() + idleTimeout
        let timer = LoopTimer(loop: loop, persistent: true) { [self] in
            if unsentBytes == 0 || EventLoop.monotonicNow() >= deadline { close() }
        }
        timer.schedule(after: 0.01)
        lingerTimer = timer
    }

    private var unsentBytes: Int {
        guard let tls else { return 0 }
        var n = bufferevent_get_output(tls).map { evbuffer_get_length($0) } ?? 0
        if let below = bufferevent_get_underlying(tls), let output = bufferevent_get_output(below) {
            n += evbuffer_get_length(output)
        }
        return n
    }

    // MARK: bytes

    private func readable() {
        guard let tls, let input = bufferevent_get_input(tls) else { return }
        if session == nil {
            // Lingering until the GOAWAY is out: what the origin still sends is dropped.
            evbuffer_drain(input, evbuffer_get_length(input))
            return
        }
        while let session, evbuffer_get_length(input) > 0 {
            var vec = iovec()
            guard evbuffer_peek(input, -1, nil, &vec, 1) > 0, let base = vec.iov_base, vec.iov_len > 0 else { break }
            // Only an error found in this call may name the cause of what follows.
            libraryErrorText = nil
            let n = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), vec.iov_len)
            if n < 0 {
                failed(libraryError: Int32(n), code: Int32(n) == NGHTTP2_ERR_FLOODED.rawValue ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR)
                return
            }
            evbuffer_drain(input, n)
        }
        send()
        guard let session else { return }
        if nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0 {
            sessionEnded()
            return
        }
        if !hasRoom, nghttp2_session_check_request_allowed(session) == 0 { loop.pool.removeHTTP2(self) }
    }

    func send() {
        guard !sending, let tls, let output = bufferevent_get_output(tls) else { return }
        sending = true
        defer { sending = false }
        while let session {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            if n < 0 {
                failureCause = failureCause ?? "HTTP/2 to the origin failed: \(String(cString: nghttp2_strerror(Int32(n))))"
                lost()
                return
            }
            guard n > 0, let data else { break }
            evbuffer_add(output, data, n)
        }
    }

    // MARK: nghttp2 callbacks

    private static func connection(_ user: UnsafeMutableRawPointer?) -> HTTP2OriginConnection? {
        user.map { Unmanaged<HTTP2OriginConnection>.fromOpaque($0).takeUnretainedValue() }
    }

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let s = HTTP2OriginConnection.connection(user)?.byID[frame.pointee.hd.stream_id] else { return 0 }
            // Past the bound nghttp2 resets the stream (RST_STREAM) and goes on decoding the
            // block's fields without handing them here: the HPACK state stays whole.
            guard s.header(name: UnsafeBufferPointer(start: name, count: nameLength),
                           value: UnsafeBufferPointer(start: value, count: valueLength)) else {
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let c = HTTP2OriginConnection.connection(user) else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
                // Streams past the last one the origin took will not be answered.
                c.loop.pool.removeHTTP2(c)
                let last = frame.pointee.goaway.last_stream_id
                for s in c.open where s.id > last { s.endResponse() }
            }
            c.byID[frame.pointee.hd.stream_id]?.frameReceived(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
            guard let data, let s = HTTP2OriginConnection.connection(user)?.byID[streamID] else { return 0 }
            s.responseData(UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_error_callback2(callbacks) { _, _, message, length, user in
            guard let message, let c = HTTP2OriginConnection.connection(user) else { return 0 }
            c.libraryErrorText = String(decoding: UnsafeRawBufferPointer(start: message, count: length), as: UTF8.self)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, user in
            guard let frame, let c = HTTP2OriginConnection.connection(user),
                  frame.pointee.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue),
                  frame.pointee.goaway.error_code != NGHTTP2_NO_ERROR.rawValue, c.failureCause == nil else { return 0 }
            // nghttp2 found a connection error in the origin's frames and ends the session.
            let code = String(cString: nghttp2_http2_strerror(frame.pointee.goaway.error_code))
            c.failureCause = "the origin broke the HTTP/2 protocol\(c.libraryErrorText.map { " (\($0))" } ?? ""); Tapwire closed the connection with GOAWAY \(code)"
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, user in
            // After END_STREAM the response is already whole; otherwise it is cut here.
            HTTP2OriginConnection.connection(user)?.byID[streamID]?.endResponse(errorCode: errorCode)
            return 0
        }
    }
}
