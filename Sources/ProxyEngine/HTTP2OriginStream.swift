import CLibevent
import CNghttp2
import Foundation
import HTTP1

/// One exchange's stream on an `HTTP2OriginConnection`, and the translation between the
/// exchange's HTTP/1.1 and HTTP/2 frames.
///
/// The exchange sees an ordinary `UpstreamConnection` whose bufferevent is one end of a
/// libevent pair; this object holds the other end. The request arrives there in the
/// HTTP/1.1 wire form the exchange writes for any origin (head, then the body in its
/// framing) and becomes HEADERS and DATA frames; the response's frames come back as an
/// HTTP/1.1 response: chunked when the origin gave no Content-Length or announced trailers
/// (trailers as chunked trailers), `content-length: 0` for an answer that is its head alone
/// (a gRPC trailers-only error, so an HTTP/2 client gets it as one HEADERS frame too).
///
/// A stream that ends before its response is whole (reset, GOAWAY, the connection lost)
/// ends the pair with EOF, which the exchange judges as it would a closed HTTP/1.1
/// connection (cut body, or 502 before the head).
///
/// Ownership: the pair end is this object's, freed in `close()`; its callbacks hold this
/// object unretained and are gone with it. The connection holds its open streams.
final class HTTP2OriginStream {
    let connection: HTTP2OriginConnection
    private var pairEnd: OpaquePointer?
    private(set) var id: Int32 = -1

    private var headParser = HTTPHeadParser()
    private var requestMethod = ""
    private var requestFramer: BodyFramer?
    private var requestTrailers = CapturedBody()
    /// Request payload waiting for nghttp2 to ask for DATA.
    private let requestBody: OpaquePointer
    private var requestEnded = false
    /// The pair end stopped reading: `requestBody` reached `limits.highWaterBytes` while the
    /// origin's window was closed. The exchange's output then backs up and it stops reading
    /// its client, as with an HTTP/1.1 origin that reads slowly; nothing holds a whole upload.
    private var requestPaused = false

    /// The fields of the header block being received (nghttp2 has checked that the names
    /// are lower case).
    private var responseFields = HTTPHeaders()
    /// The header block being received (a 1xx, the head, the trailers), counted as RFC 9113
    /// §6.5.2 does (name + value + 32 a field) against `limits.maxHeaderBytes`.
    private var headerBlockBytes = 0
    private var responseStatus = 0
    private var finalHeadSent = false
    /// The response body goes in chunked framing.
    private var chunked = false
    private var bodyless = false
    private(set) var responseEnded = false
    /// Response payload received and not yet returned to the windows.
    private var unconsumed = 0

    /// nil when libevent cannot allocate.
    init?(connection: HTTP2OriginConnection) {
        guard let body = evbuffer_new() else { return nil }
        self.connection = connection
        requestBody = body
    }

    deinit {
        if let pairEnd { bufferevent_free(pairEnd) }
        evbuffer_free(requestBody)
    }

    /// Makes the pair; returns the exchange's end (the caller owns and frees it).
    func open(base: OpaquePointer) -> OpaquePointer? {
        var pair: [OpaquePointer?] = [nil, nil]
        // Deferred callbacks: a write into one end must not run the other side's code
        // inside the writer's (the exchange frees its end from its own callbacks).
        let options = Int32(BEV_OPT_CLOSE_ON_FREE.rawValue | BEV_OPT_DEFER_CALLBACKS.rawValue)
        guard bufferevent_pair_new(base, options, &pair) == 0, let exchangeEnd = pair[0], let ours = pair[1] else {
            return nil
        }
        pairEnd = ours
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(ours, { _, ctx in
            guard let ctx else { return }
            Unmanaged<HTTP2OriginStream>.fromOpaque(ctx).takeUnretainedValue().requestBytes()
        }, { _, ctx in
            // The exchange read what waited on this end (it had paused: backpressure).
            guard let ctx else { return }
            let stream = Unmanaged<HTTP2OriginStream>.fromOpaque(ctx).takeUnretainedValue()
            stream.consumeForwarded()
            stream.connection.send()
        }, nil, ctx)
        bufferevent_enable(ours, Int16(EV_READ | EV_WRITE))
        return exchangeEnd
    }

    /// The exchange is done with the stream: an unfinished one is cancelled.
    func close() {
        if let pairEnd { bufferevent_free(pairEnd); self.pairEnd = nil }
        // The connection's window still counts what this stream was given and never took.
        if unconsumed > 0, let session = connection.session {
            _ = nghttp2_session_consume_connection(session, unconsumed)
            unconsumed = 0
        }
        connection.streamClosed(self, cancel: !responseEnded)
        responseEnded = true
    }

    // MARK: the request, from the exchange

    private func requestBytes() {
        guard let pairEnd, let nghttp2 = connection.session, let input = bufferevent_get_input(pairEnd) else { return }
        if id < 0 {
            let available = evbuffer_get_length(input)
            guard available > 0 else { return }
            let n = min(available, connection.maxHeadBytes + 4)
            guard let p = evbuffer_pullup(input, n) else { return }
            let parsed: HeadParseResult<HTTPRequestHead>
            do {
                parsed = try headParser.parseRequestHead(UnsafeRawBufferPointer(start: p, count: n),
                                                         maxHeadBytes: connection.maxHeadBytes)
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
            if id < 0 { endResponse(); return }
        }
        if !requestEnded, var framer = requestFramer {
            if evbuffer_get_length(requestBody) >= connection.highWaterBytes {
                if !requestPaused {
                    requestPaused = true
                    bufferevent_disable(pairEnd, Int16(EV_READ))
                }
                connection.send()
                return
            }
            do {
                requestEnded = try BodyPump.pump(from: input, to: requestBody, framer: &framer, capture: &requestTrailers,
                                                 captureLimit: 0, payloadOnly: true)
            } catch {
                _ = nghttp2_submit_rst_stream(nghttp2, UInt8(NGHTTP2_FLAG_NONE.rawValue), id,
                                              UInt32(NGHTTP2_CANCEL.rawValue))
            }
            requestFramer = framer
            _ = nghttp2_session_resume_data(nghttp2, id)
        }
        connection.send()
    }

    /// The exchange's HTTP/1.1 head as HTTP/2 fields: the pseudo-headers from the request
    /// line and Host, the connection-specific fields dropped (RFC 9113 §8.2.2), names in lower case.
    private func submit(_ head: HTTPRequestHead, hasBody: Bool, _ nghttp2: OpaquePointer) {
        requestMethod = head.method
        var fields = HTTP2FieldList(capacity: head.headers.count + 5)
        fields.append(name: ":method", value: head.method)
        fields.append(name: ":scheme", value: "https")
        fields.append(name: ":authority", value: head.headers.first(name: "Host") ?? connection.authority.hostFieldValue)
        fields.append(name: ":path", value: head.target)
        fields.append(head.headers, dropping: "host")
        // The one TE HTTP/2 allows, and always true here: trailers become chunked trailers
        // for the exchange. The HTTP/1.1 form dropped the client's TE as hop-by-hop, and gRPC
        // servers refuse a request without it.
        fields.append(name: "te", value: "trailers")
        var provider = nghttp2_data_provider()
        provider.read_callback = { _, streamID, buffer, length, flags, _, user in
            guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
            let c = Unmanaged<HTTP2OriginConnection>.fromOpaque(user).takeUnretainedValue()
            guard let stream = c.stream(streamID) else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
            return stream.readRequest(into: buffer, length: length, flags: flags)
        }
        let submitted = fields.withList { list, count in
            hasBody ? nghttp2_submit_request(nghttp2, nil, list, count, &provider, nil)
                    : nghttp2_submit_request(nghttp2, nil, list, count, nil, nil)
        } ?? -1
        if submitted > 0 {
            id = submitted
            connection.streamStarted(self)
        }
    }

    private func readRequest(into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        let n = Int(evbuffer_remove(requestBody, buffer, length))
        if requestPaused, evbuffer_get_length(requestBody) < connection.highWaterBytes / 2, let pairEnd {
            // Room again: read on, from a deferred callback (this runs inside nghttp2's send),
            // also for bytes already waiting on this end, which no new transfer would announce.
            requestPaused = false
            bufferevent_enable(pairEnd, Int16(EV_READ))
            bufferevent_trigger(pairEnd, Int16(EV_READ), Int32(BEV_TRIG_IGNORE_WATERMARKS.rawValue | BEV_TRIG_DEFER_CALLBACKS.rawValue))
        }
        if evbuffer_get_length(requestBody) == 0 && requestEnded {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            if let trailers = requestTrailers.trailers, !trailers.isEmpty, let nghttp2 = connection.session {
                requestTrailers.trailers = nil
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

    // MARK: the response, from the origin (called by the connection's nghttp2 callbacks)

    /// False once the block passed `limits.maxHeaderBytes`: the stream is to be reset. An
    /// HPACK bomb (one large field in the table, referred to a hundred thousand times) fails
    /// on its first excess field, before any of it is kept.
    func header(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Bool {
        headerBlockBytes += name.count + value.count + 32
        guard headerBlockBytes <= connection.maxHeadBytes else {
            if resetCause == nil {
                resetCause = "the origin's header list passed limits.maxHeaderBytes (\(connection.maxHeadBytes))"
            }
            return false
        }
        if HTTPHeaders.name(name, is: ":status") {
            responseStatus = Int(String(decoding: value, as: UTF8.self)) ?? 0
        } else if name.first != UInt8(ascii: ":") {
            responseFields.add(name: name, value: value)
        }
        return true
    }

    func frameReceived(_ frame: nghttp2_frame) {
        if frame.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) { headerBlockBytes = 0 }
        guard !responseEnded else { return }
        let endStream = frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        if frame.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) {
            if finalHeadSent { writeTrailers() } else { writeHead(endsStream: endStream) }
        } else if frame.hd.type == UInt8(NGHTTP2_DATA.rawValue), endStream, chunked {
            write("0\r\n\r\n")
        }
    }

    /// - Parameter endsStream: the answer is its head alone (a gRPC trailers-only answer).
    private func writeHead(endsStream: Bool) {
        let status = responseStatus
        let fields = responseFields
        responseFields = HTTPHeaders()
        responseStatus = 0
        // Bytes, not a string built by interpolation: this runs for every stream.
        var text: [UInt8] = []
        text.reserveCapacity(256)
        text.append(contentsOf: "HTTP/1.1 ".utf8)
        text.append(contentsOf: String(status).utf8)
        text.append(contentsOf: " \r\n".utf8)
        if status >= 100 && status < 200 {
            HTTP2OriginStream.append(fields, to: &text)
            text.append(contentsOf: "\r\n".utf8)
            write(text)
            return
        }
        finalHeadSent = true
        originHead = fields
        bodyless = requestMethod == "HEAD" || status == 204 || status == 304
        // HTTP/1.1 carries trailers only after a chunked body: an answer that announces
        // trailers goes chunked even with a Content-Length (dropped, as chunked framing
        // replaces it).
        let announcesTrailers = fields.contains(name: "trailer")
        let hasLength = fields.contains(name: "content-length")
        chunked = !bodyless && !endsStream && (!hasLength || announcesTrailers)
        let emptyBody = endsStream && !bodyless
        HTTP2OriginStream.append(fields, droppingContentLength: chunked || emptyBody, to: &text)
        if emptyBody { text.append(contentsOf: "content-length: 0\r\n".utf8) }
        if chunked { text.append(contentsOf: "transfer-encoding: chunked\r\n".utf8) }
        text.append(contentsOf: "\r\n".utf8)
        write(text)
    }

    /// Trailers: the chunked body's last chunk.
    private func writeTrailers() {
        let fields = responseFields
        responseFields = HTTPHeaders()
        guard chunked else { return }
        var text = Array("0\r\n".utf8)
        HTTP2OriginStream.append(fields, to: &text)
        text.append(contentsOf: "\r\n".utf8)
        write(text)
    }

    /// The fields as HTTP/1.1 field lines.
    private static func append(_ fields: HTTPHeaders, droppingContentLength: Bool = false, to text: inout [UInt8]) {
        fields.forEachField { name, value in
            if droppingContentLength && HTTPHeaders.name(name, is: "content-length") { return }
            text.append(contentsOf: name)
            text.append(contentsOf: ": ".utf8)
            text.append(contentsOf: value)
            text.append(contentsOf: "\r\n".utf8)
        }
    }

    func responseData(_ data: UnsafeBufferPointer<UInt8>) {
        guard let pairEnd, let output = bufferevent_get_output(pairEnd), !data.isEmpty, !bodyless, !responseEnded else {
            // Bytes no one will read go straight back to the windows.
            if let session = connection.session, !data.isEmpty, nghttp2_session_consume(session, id, data.count) != 0 {
                _ = nghttp2_session_consume_connection(session, data.count)
            }
            return
        }
        if chunked { write(String(data.count, radix: 16) + "\r\n") }
        evbuffer_add(output, data.baseAddress, data.count)
        if chunked { write("\r\n") }
        unconsumed += data.count
        consumeForwarded()
    }

    /// Returns to the windows what left this end for the exchange. While the exchange has
    /// paused reading, the bytes wait here and the stream's window stays closed, so a
    /// stream never buffers much more than its window. (What waits includes chunk framing,
    /// so slightly less is returned until this end empties.)
    func consumeForwarded() {
        guard unconsumed > 0, let pairEnd, let output = bufferevent_get_output(pairEnd),
              let session = connection.session, id > 0 else { return }
        let taken = unconsumed - min(unconsumed, evbuffer_get_length(output))
        guard taken > 0 else { return }
        _ = nghttp2_session_consume(session, id, taken)
        unconsumed -= taken
    }

    /// The final response's header fields as the origin sent them, before the HTTP/1.1
    /// framing the exchange reads was added (`content-length: 0`, `transfer-encoding`) or a
    /// Content-Length dropped for trailers: what the record shows.
    private(set) var originHead: HTTPHeaders?

    /// Why the stream ended early, when the origin (or a GOAWAY) reset it: the exchange's
    /// error names it instead of a closed connection.
    private(set) var resetCause: String?

    /// Ends the exchange's side: EOF on its end once what was written is read. A response
    /// not yet whole is then cut, as an HTTP/1.1 origin closing would cut it. `errorCode`:
    /// the stream's RST_STREAM (or GOAWAY) code, 0 when it ended normally; `cause`: why the
    /// connection under it ended, when Tapwire knows.
    func endResponse(errorCode: UInt32 = 0, cause: String? = nil) {
        if !responseEnded, resetCause == nil {
            if let cause {
                resetCause = cause
            } else if errorCode != 0 {
                resetCause = "the origin reset the stream (\(String(cString: nghttp2_http2_strerror(errorCode)))) before the response was complete"
            }
        }
        responseEnded = true
        if let pairEnd { _ = bufferevent_flush(pairEnd, Int16(EV_WRITE), BEV_FINISHED) }
    }

    private func write(_ text: String) {
        guard let pairEnd, let output = bufferevent_get_output(pairEnd) else { return }
        var text = text
        text.withUTF8 { _ = evbuffer_add(output, $0.baseAddress, $0.count) }
    }

    private func write(_ bytes: [UInt8]) {
        guard let pairEnd, let output = bufferevent_get_output(pairEnd) else { return }
        bytes.withUnsafeBufferPointer { _ = evbuffer_add(output, $0.baseAddress, $0.count) }
    }
}
