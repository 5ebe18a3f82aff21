import CLibevent
import CNghttp2
import Foundation
import HTTP1

/// An HTTPS origin that chose `h2` in ALPN, spoken to for one exchange: one HTTP/2
/// connection carrying one stream (no multiplexing, never pooled).
///
/// The seam: the exchange sees an ordinary `UpstreamConnection` whose bufferevent is one end
/// of a libevent pair; this object holds the other end and translates. The request arrives
/// there in the HTTP/1.1 wire form the exchange writes for any origin (head, then the body in
/// its framing) and becomes HEADERS and DATA frames; the response's frames come back as an
/// HTTP/1.1 response (chunked unless the origin gave a Content-Length, trailers as chunked
/// trailers). So the exchange, its state machine and the HTTP/1.1 upstream path are
/// unchanged, and only a connection that negotiated h2 pays for the translation.
///
/// The origin's stream ending before the response is whole, a reset, GOAWAY or a closed
/// socket end the pair with EOF, which the exchange judges as it would a closed HTTP/1.1
/// connection (cut body, or 502 before the head).
///
/// Ownership: the TLS bufferevent, the pair end and the `nghttp2_session` are this object's,
/// freed in `close()` (called by the owning `UpstreamConnection` when it closes); their
/// callbacks hold this object unretained and are gone with them.
final class HTTP2OriginConnection {
    private let loop: EventLoop
    private let authority: HTTPAuthority
    private var tls: OpaquePointer?
    private var pairEnd: OpaquePointer?
    private var nghttp2: OpaquePointer?
    private let maxHeadBytes: Int

    private var headParser = HTTPHeadParser()
    private var requestMethod = ""
    private var requestFramer: BodyFramer?
    private var requestTrailers = CapturedBody()
    /// Request payload waiting for nghttp2 to ask for DATA.
    private let requestBody: OpaquePointer
    private var requestEnded = false
    private var streamID: Int32 = -1

    private var responseFields: [(String, String)] = []
    private var responseStatus = 0
    private var finalHeadSent = false
    /// The response body goes in chunked framing (no Content-Length from the origin).
    private var chunked = false
    private var bodyless = false
    private var responseEnded = false
    private var sending = false

    /// - Parameter tls: the handshaken TLS bufferevent; owned from here on.
    /// - Returns: nil when libevent or nghttp2 cannot allocate (the caller closes `tls`).
    init?(loop: EventLoop, authority: HTTPAuthority, tls: OpaquePointer, maxHeadBytes: Int) {
        self.loop = loop
        self.authority = authority
        self.maxHeadBytes = maxHeadBytes
        guard let body = evbuffer_new() else { return nil }
        requestBody = body
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { evbuffer_free(body); return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(callbacks)
        var created: OpaquePointer?
        let user = Unmanaged.passUnretained(self).toOpaque()
        guard nghttp2_session_client_new(&created, callbacks, user) == 0, let created else { evbuffer_free(body); return nil }
        nghttp2 = created
        self.tls = tls
        var entries = [nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0)]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count)
    }

    deinit {
        close()
        evbuffer_free(requestBody)
    }

    /// Makes the pair and starts driving the TLS connection. Returns the end the exchange
    /// uses (owned by the caller, who frees it), nil if the pair cannot be made.
    func start() -> OpaquePointer? {
        guard let tls else { return nil }
        var pair: [OpaquePointer?] = [nil, nil]
        // Deferred callbacks: a write into one end must not run the other side's code
        // inside the writer's (the exchange frees its end from its own callbacks).
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        guard bufferevent_pair_new(loop.base, options, &pair) == 0, let exchangeEnd = pair[0], let ours = pair[1] else {
            return nil
        }
        pairEnd = ours
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(ours, { _, ctx in
            guard let ctx else { return }
            Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().requestBytes()
        }, nil, { _, events, ctx in
            guard let ctx else { return }
            // The exchange's end is gone or finished: nothing more will come.
            if Int32(events) & (BEV_EVENT_EOF | BEV_EVENT_ERROR) != 0 {
                Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().close()
            }
        }, ctx)
        bufferevent_enable(ours, Int16(EV_READ | EV_WRITE))
        bufferevent_setcb(tls, { _, ctx in
            guard let ctx else { return }
            Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().readable()
        }, { _, ctx in
            guard let ctx else { return }
            Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().send()
        }, { _, events, ctx in
            guard let ctx else { return }
            if Int32(events) & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT) != 0 {
                Unmanaged<HTTP2OriginConnection>.fromOpaque(ctx).takeUnretainedValue().endResponse()
            }
        }, ctx)
        bufferevent_enable(tls, Int16(EV_READ | EV_WRITE))
        send()
        // Bytes that came with the end of the handshake.
        if let input = bufferevent_get_input(tls), evbuffer_get_length(input) > 0 { readable() }
        return exchangeEnd
    }

    func close() {
        if let nghttp2 { nghttp2_session_del(nghttp2); self.nghttp2 = nil }
        if let pairEnd { bufferevent_free(pairEnd); self.pairEnd = nil }
        if let tls { bufferevent_free(tls); self.tls = nil }
    }

    // MARK: the request, from the exchange

    private func requestBytes() {
        guard let pairEnd, let nghttp2, let input = bufferevent_get_input(pairEnd) else { return }
        if streamID < 0 {
            let available = evbuffer_get_length(input)
            guard available > 0 else { return }
            let n = min(available, maxHeadBytes + 4)
            guard let p = evbuffer_pullup(input, n) else { return }
            let parsed: HeadParseResult<HTTPRequestHead>
            do {
                parsed = try headParser.parseRequestHead(UnsafeRawBufferPointer(start: p, count: n), maxHeadBytes: maxHeadBytes)
            } catch {
                endResponse()
                return
            }
            guard case .complete(let head, let length) = parsed else { return }
            evbuffer_drain(input, length)
            let framing: BodyFraming
            do { framing = try head.bodyFraming() } catch { endResponse(); return }
            submit(head, hasBody: framing != .none, nghttp2)
            requestFramer = BodyFramer(framing)
            requestEnded = framing == .none
            if streamID < 0 { endResponse(); return }
        }
        if !requestEnded, var framer = requestFramer {
            do {
                requestEnded = try BodyPump.pump(from: input, to: requestBody, framer: &framer, capture: &requestTrailers,
                                                 captureLimit: 0, payloadOnly: true)
            } catch {
                _ = nghttp2_submit_rst_stream(nghttp2, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID,
                                              UInt32(NGHTTP2_CANCEL.rawValue))
            }
            requestFramer = framer
            _ = nghttp2_session_resume_data(nghttp2, streamID)
        }
        send()
    }

    /// The exchange's HTTP/1.1 head as HTTP/2 fields: the pseudo-headers from the request
    /// line and Host, the connection-specific fields dropped (RFC 9113 §8.2.2), names in lower case.
    private func submit(_ head: HTTPRequestHead, hasBody: Bool, _ nghttp2: OpaquePointer) {
        requestMethod = head.method
        var names: [[UInt8]] = [Array(":method".utf8), Array(":scheme".utf8), Array(":authority".utf8), Array(":path".utf8)]
        var values: [[UInt8]] = [Array(head.method.utf8), Array("https".utf8),
                                 Array((head.headers.first(name: "Host") ?? authority.hostFieldValue).utf8),
                                 Array(head.target.utf8)]
        for field in head.headers {
            let name = field.name.lowercased()
            if name == "host" || name == "te" || HTTP2Stream.isConnectionSpecific(name) { continue }
            names.append(Array(name.utf8))
            values.append(Array(field.value.utf8))
        }
        // The one TE HTTP/2 allows, and always true here: trailers become chunked trailers
        // for the exchange. The HTTP/1.1 form dropped the client's TE as hop-by-hop, and gRPC
        // servers refuse a request without it.
        names.append(Array("te".utf8))
        values.append(Array("trailers".utf8))
        var provider = nghttp2_data_provider()
        provider.read_callback = { session, streamID, buffer, length, flags, _, user in
            guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            return Unmanaged<HTTP2OriginConnection>.fromOpaque(user).takeUnretainedValue()
                .readRequest(into: buffer, length: length, flags: flags)
        }
        let id = HTTP2Stream.withFieldList(names, values) { list, count in
            hasBody ? nghttp2_submit_request(nghttp2, nil, list, count, &provider, nil)
                    : nghttp2_submit_request(nghttp2, nil, list, count, nil, nil)
        } ?? -1
        streamID = id > 0 ? id : -1
    }

    private func readRequest(into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        let n = Int(evbuffer_remove(requestBody, buffer, length))
        if evbuffer_get_length(requestBody) == 0 && requestEnded {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            if let trailers = requestTrailers.trailers, !trailers.isEmpty, let nghttp2 {
                requestTrailers.trailers = nil
                let kept = trailers.fields.filter { !HTTP2Stream.isConnectionSpecific($0.name) }
                let rc = HTTP2Stream.withFieldList(kept.map { Array($0.name.lowercased().utf8) }, kept.map { Array($0.value.utf8) }) {
                    nghttp2_submit_trailer(nghttp2, streamID, $0, $1)
                } ?? -1
                if rc == 0 { flags.pointee |= NGHTTP2_DATA_FLAG_NO_END_STREAM.rawValue }
            }
            return max(0, n)
        }
        if n <= 0 { return Int(NGHTTP2_ERR_DEFERRED.rawValue) }
        return n
    }

    // MARK: the origin's bytes

    private func readable() {
        guard let tls, let input = bufferevent_get_input(tls) else { return }
        while let nghttp2, evbuffer_get_length(input) > 0 {
            var vec = iovec()
            guard evbuffer_peek(input, -1, nil, &vec, 1) > 0, let base = vec.iov_base, vec.iov_len > 0 else { break }
            let n = nghttp2_session_mem_recv(nghttp2, base.assumingMemoryBound(to: UInt8.self), vec.iov_len)
            if n < 0 { endResponse(); return }
            evbuffer_drain(input, n)
        }
        send()
    }

    private func send() {
        guard !sending, let tls, let output = bufferevent_get_output(tls) else { return }
        sending = true
        defer { sending = false }
        while let nghttp2 {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(nghttp2, &data)
            if n < 0 { endResponse(); return }
            guard n > 0, let data else { break }
            evbuffer_add(output, data, n)
        }
    }

    /// Ends the exchange's side: EOF on its end once what was written is read. A response
    /// not yet whole is then cut, as an HTTP/1.1 origin closing would cut it.
    private func endResponse() {
        responseEnded = true
        if let pairEnd { _ = bufferevent_flush(pairEnd, Int16(EV_WRITE), BEV_FINISHED) }
    }

    // MARK: nghttp2 callbacks

    private static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let user else { return 0 }
            let c = Unmanaged<HTTP2OriginConnection>.fromOpaque(user).takeUnretainedValue()
            guard frame.pointee.hd.stream_id == c.streamID else { return 0 }
            let n = String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self)
            let v = String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)
            if n == ":status" { c.responseStatus = Int(v) ?? 0 } else if !n.hasPrefix(":") { c.responseFields.append((n, v)) }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            Unmanaged<HTTP2OriginConnection>.fromOpaque(user).takeUnretainedValue().frameReceived(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
            guard let data, let user else { return 0 }
            let c = Unmanaged<HTTP2OriginConnection>.fromOpaque(user).takeUnretainedValue()
            if streamID == c.streamID { c.responseData(UnsafeBufferPointer(start: data, count: length)) }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, user in
            guard let user else { return 0 }
            let c = Unmanaged<HTTP2OriginConnection>.fromOpaque(user).takeUnretainedValue()
            // After END_STREAM the response is already whole; otherwise it is cut here.
            if streamID == c.streamID { c.endResponse() }
            return 0
        }
    }

    private func frameReceived(_ frame: nghttp2_frame) {
        guard frame.hd.stream_id == streamID, !responseEnded else {
            if frame.hd.type == UInt8(NGHTTP2_GOAWAY.rawValue), Int32(frame.goaway.last_stream_id) < streamID { endResponse() }
            return
        }
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        if frame.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) {
            if finalHeadSent {
                writeTrailers()
            } else {
                writeHead(endsStream: endStream)
            }
        } else if frame.hd.type == UInt8(NGHTTP2_DATA.rawValue), endStream, chunked {
            write("0\r\n\r\n")
        }
    }

    /// - Parameter endsStream: the answer is its head alone (a gRPC trailers-only answer):
    ///   it goes with `content-length: 0`, so an HTTP/2 client gets it as one HEADERS frame too.
    private func writeHead(endsStream: Bool) {
        let status = responseStatus
        var text = "HTTP/1.1 \(status) \r\n"
        let fields = responseFields
        responseFields.removeAll()
        responseStatus = 0
        if status >= 100 && status < 200 {
            for (n, v) in fields { text += "\(n): \(v)\r\n" }
            write(text + "\r\n")
            return
        }
        finalHeadSent = true
        bodyless = requestMethod == "HEAD" || status == 204 || status == 304
        // HTTP/1.1 carries trailers only after a chunked body: an answer that announces
        // trailers goes chunked even with a Content-Length (dropped, as chunked framing
        // replaces it).
        let announcesTrailers = fields.contains { $0.0 == "trailer" }
        let hasLength = fields.contains { $0.0 == "content-length" }
        chunked = !bodyless && !endsStream && (!hasLength || announcesTrailers)
        let emptyBody = endsStream && !bodyless
        for (n, v) in fields where !((chunked || emptyBody) && n == "content-length") { text += "\(n): \(v)\r\n" }
        if emptyBody { text += "content-length: 0\r\n" }
        if chunked { text += "transfer-encoding: chunked\r\n" }
        write(text + "\r\n")
    }

    /// Trailers (also a trailers-only answer's end): the chunked body's last chunk.
    private func writeTrailers() {
        let fields = responseFields
        responseFields.removeAll()
        guard chunked else { return }
        var text = "0\r\n"
        for (n, v) in fields { text += "\(n): \(v)\r\n" }
        write(text + "\r\n")
    }

    private func responseData(_ data: UnsafeBufferPointer<UInt8>) {
        guard let pairEnd, let output = bufferevent_get_output(pairEnd), !data.isEmpty, !bodyless else { return }
        if chunked { write(String(data.count, radix: 16) + "\r\n") }
        evbuffer_add(output, data.baseAddress, data.count)
        if chunked { write("\r\n") }
    }

    private func write(_ text: String) {
        guard let pairEnd, let output = bufferevent_get_output(pairEnd) else { return }
        var text = text
        text.withUTF8 { _ = evbuffer_add(output, $0.baseAddress, $0.count) }
    }
}
