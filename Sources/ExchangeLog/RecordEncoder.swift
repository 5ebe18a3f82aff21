import HTTP1
import ResponseSerialization

/// Writes log records as compact JSON straight into bytes: one record per line,
/// keys always in the order below, no trailing newline (the writer adds it).
/// No Codable or JSONSerialization: this runs for every exchange.
///
/// Conventions: absolute times are RFC 3339 UTC with microseconds; durations are
/// seconds as plain decimals with at most 6 fraction digits (never negative, never
/// in exponent form); a missing value is `null`. Header values named in
/// `redact.headers` are written as `"[redacted]"`. JSON values keep the upstream's
/// key order and number text.
///
/// `kind: "http"`:
/// ```
/// {"id":"0000018c2b1f4a1e-000001","kind":"http","client":"127.0.0.1:53422",
///  "request":{"method":"POST","url":"http://h/p?q","httpVersion":"HTTP/1.1",
///             "headers":[["Host","h"],["Authorization","[redacted]"]],"bodySize":17,
///             "body":{"user":"x","password":"[redacted]"}},
///  "response":{"status":200,"reason":"OK","httpVersion":"HTTP/1.1","headers":[[…]],
///              "bodySize":312,"mimeType":"application/json","charset":null} | null,
///  "data":{"size":1024,"captured":312,"truncated":false,"contentEncoding":"gzip"},
///  "rule":"default","serializer":"json",
///  "result":{"success":VALUE} | {"failure":{"error":"…","reason":"…","message":"…"}},
///  "error":{"code":"upstreamReset","message":"…"} | null,
///  "timeline":{"requestStartTime":"…","initialResponseTime":"…","requestCompletedTime":"…",
///              "serializationCompletedTime":"…","latency":0.00121,"requestDuration":0.00205,
///              "serializationDuration":0.00003,"totalDuration":0.00208},
///  "metrics":{"dns":null,"connect":0.00011,"tls":null,"send":0.00001,"wait":0.0011,
///             "receive":0.00084,"connectionReused":false,"upstream":"127.0.0.1:8080","via":null},
///  "replayOf":"0000018c2b1f4a1e-000001"}
/// ```
/// - `replayOf` (present only for a request sent by `tapwire replay`): the id of the record
///   it re-sends, from the request's `X-Tapwire-Replay-Of` field, which is neither forwarded
///   nor logged among the headers (`ReplayOfField`).
/// - `replayedFrom` (present only for an answer served from recorded responses, `replay`):
///   the id of the record whose response it is; last, after `replayOf`.
/// - `request.bodySize` / `response.bodySize`: payload bytes seen on the wire (before decoding).
/// - `request.body` (present only when a request body was captured): the body through
///   the default serializer for the request's Content-Type, after undoing its
///   Content-Encoding, with `redact.jsonKeys` and the exchange's rule's `redact` pointers
///   applied (not its `select`); absent under a rule with serializer `none`, `{"size":N}`
///   under one with `data`. When that fails, `request.bodyError` =
///   `{"error","reason","message"}` instead.
/// - `data.size`: decoded bytes given to the serializer (null when the
///   Content-Encoding could not be undone); `data.captured`: bytes kept from the wire;
///   `data.truncated`: the serializer saw only a prefix (capture or decode limit).
/// - `serializer`: `data`, `string`, `json`, `propertyList`, `jsonLines`, `form`,
///   `eventStream`, `msgpack`, `protobuf`, `grpc` or `none`. VALUE for `data` is `{"base64":"…","size":N}` (base64 of
///   the first `base64Bytes` bytes) or `{"size":N}`; for `string` a JSON string; for
///   `none` `null` (no serializer runs, but a transport, decoding or validation failure
///   still shows as `failure`); for the others the JSON value: for `eventStream` the array
///   of events, or with a rule's `assemble` or `maxEvents` `{"assembled"?,"eventCount","events"}`
///   (`EventStreamAssembly`); for `msgpack` the mapping `MsgPackDecoder` documents. A rule's `select` and
///   `redact` pointers apply to the values of `json`, `propertyList`, `jsonLines`, `form`,
///   `eventStream` and `msgpack`; `redact.jsonKeys` to every JSON value.
/// - `response.charset`: for the string serializer the charset it decoded with
///   (canonical IANA name), otherwise the Content-Type `charset` parameter, else null.
/// - `result.failure.error`: `responseSerializationFailed`, `responseValidationFailed`
///   or `transportFailed` (then `reason` is the transport error's code).
///
/// `kind: "tunnel"` (CONNECT passed through without interception):
/// ```
/// {"id":"…","kind":"tunnel","client":"127.0.0.1:53422","target":"example.com:443","via":null,
///  "status":200,"bytesFromClient":517,"bytesFromUpstream":4711,
///  "startTime":"…","endTime":"…","duration":1.5,"closedBy":"client",
///  "error":null | {"code":"…","message":"…"}}
/// ```
/// `kind: "websocket"` (an upgraded exchange): the same fields, with the upgrade
/// exchange's `request` and `response` (encoded as in `http` records, null when
/// not recorded) after `status`:
/// ```
/// {"id":"…","kind":"websocket","client":"…","target":"echo.local:80","via":null,"status":101,
///  "request":{…},"response":{…},"bytesFromClient":120,"bytesFromUpstream":96,
///  "startTime":"…","endTime":"…","duration":12.25,"closedBy":"upstream","error":null}
/// ```
/// `closedBy`: `client`, `upstream`, `timeout`, `shutdown` or `error`.
public struct RecordEncoder: Sendable {
    public let headerRedaction: HeaderRedaction

    public init(headerRedaction: HeaderRedaction = HeaderRedaction([])) {
        self.headerRedaction = headerRedaction
    }

    // MARK: Records

    func encodeHTTPRecord(id: RecordKey, exchange: CapturedExchange, outcome: HTTPRecordOutcome,
                          into out: inout RecordBuffer) {
        RecordEncoder.ascii("{\"id\":", &out)
        out.appendID(id)
        RecordEncoder.ascii(",\"kind\":\"http\",\"client\":", &out)
        out.appendQuoted(exchange.client)
        RecordEncoder.ascii(",\"request\":", &out)
        let replayOf = appendRequest(exchange, body: outcome.requestBody, into: &out)
        RecordEncoder.ascii(",\"response\":", &out)
        if let response = exchange.response {
            appendResponse(response, bodySize: exchange.responseBody.totalBytes, mimeType: outcome.mimeType,
                           charset: outcome.charset, trailers: exchange.responseBody.trailers, into: &out)
        } else {
            RecordEncoder.ascii("null", &out)
        }

        let body = outcome.body
        RecordEncoder.ascii(",\"data\":{\"size\":", &out)
        if let size = body.size { RecordEncoder.appendInteger(UInt64(max(0, size)), into: &out) } else { RecordEncoder.ascii("null", &out) }
        RecordEncoder.ascii(",\"captured\":", &out)
        RecordEncoder.appendInteger(UInt64(max(0, body.captured)), into: &out)
        RecordEncoder.ascii(",\"truncated\":", &out)
        RecordEncoder.appendBool(body.truncated, into: &out)
        RecordEncoder.ascii(",\"contentEncoding\":", &out)
        RecordEncoder.appendOptionalString(body.contentEncoding, into: &out)

        RecordEncoder.ascii("},\"rule\":", &out)
        out.appendQuoted(outcome.ruleName)
        RecordEncoder.ascii(",\"serializer\":", &out)
        out.appendQuoted(outcome.serializer.rawValue)

        RecordEncoder.ascii(",\"result\":", &out)
        appendResult(outcome.result, into: &out)

        RecordEncoder.ascii(",\"error\":", &out)
        RecordEncoder.appendTransportError(exchange.error, into: &out)

        let t = outcome.timeline
        RecordEncoder.ascii(",\"timeline\":{\"requestStartTime\":", &out)
        out.appendTime(t.requestStartTime)
        RecordEncoder.ascii(",\"initialResponseTime\":", &out)
        out.appendTime(t.initialResponseTime)
        RecordEncoder.ascii(",\"requestCompletedTime\":", &out)
        out.appendTime(t.requestCompletedTime)
        RecordEncoder.ascii(",\"serializationCompletedTime\":", &out)
        out.appendTime(t.serializationCompletedTime)
        if exchange.clock.eventStream {
            RecordEncoder.ascii(",\"firstEventTime\":", &out)
            if let first = exchange.clock.firstEvent { out.appendTime(first) } else { RecordEncoder.ascii("null", &out) }
        }
        RecordEncoder.ascii(",\"latency\":", &out)
        RecordEncoder.appendSeconds(t.latency, into: &out)
        RecordEncoder.ascii(",\"requestDuration\":", &out)
        RecordEncoder.appendSeconds(t.requestDuration, into: &out)
        RecordEncoder.ascii(",\"serializationDuration\":", &out)
        RecordEncoder.appendSeconds(t.serializationDuration, into: &out)
        RecordEncoder.ascii(",\"totalDuration\":", &out)
        RecordEncoder.appendSeconds(t.totalDuration, into: &out)

        let m = outcome.metrics
        RecordEncoder.ascii("},\"metrics\":{\"dns\":", &out)
        RecordEncoder.appendOptionalSeconds(m.dns, into: &out)
        RecordEncoder.ascii(",\"connect\":", &out)
        RecordEncoder.appendOptionalSeconds(m.connect, into: &out)
        RecordEncoder.ascii(",\"tls\":", &out)
        RecordEncoder.appendOptionalSeconds(m.tls, into: &out)
        RecordEncoder.ascii(",\"send\":", &out)
        RecordEncoder.appendOptionalSeconds(m.send, into: &out)
        RecordEncoder.ascii(",\"wait\":", &out)
        RecordEncoder.appendOptionalSeconds(m.wait, into: &out)
        RecordEncoder.ascii(",\"receive\":", &out)
        RecordEncoder.appendOptionalSeconds(m.receive, into: &out)
        RecordEncoder.ascii(",\"connectionReused\":", &out)
        RecordEncoder.appendBool(m.connectionReused, into: &out)
        RecordEncoder.ascii(",\"upstream\":", &out)
        RecordEncoder.appendOptionalString(m.upstream, into: &out)
        RecordEncoder.ascii(",\"upstreamHTTPVersion\":", &out)
        RecordEncoder.appendOptionalString(m.upstreamHTTPVersion, into: &out)
        RecordEncoder.ascii(",\"via\":", &out)
        RecordEncoder.appendOptionalString(m.via, into: &out)
        out.append(UInt8(ascii: "}"))
        if let replayOf {
            RecordEncoder.ascii(",\"replayOf\":", &out)
            out.appendQuoted(replayOf)
        }
        if let replayedFrom = exchange.replayedFrom {
            RecordEncoder.ascii(",\"replayedFrom\":", &out)
            out.appendQuoted(replayedFrom)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// A `tunnel` or `websocket` record (by `tunnel.kind`).
    func encodeTunnelRecord(id: RecordKey, tunnel: CapturedTunnel, webSocket: WebSocketSummary? = nil,
                            into out: inout RecordBuffer) {
        RecordEncoder.ascii("{\"id\":", &out)
        out.appendID(id)
        RecordEncoder.ascii(",\"kind\":", &out)
        out.appendQuoted(tunnel.kind.rawValue)
        RecordEncoder.ascii(",\"client\":", &out)
        out.appendQuoted(tunnel.client)
        RecordEncoder.ascii(",\"target\":", &out)
        out.appendQuoted(tunnel.target)
        RecordEncoder.ascii(",\"via\":", &out)
        RecordEncoder.appendOptionalString(tunnel.via, into: &out)
        RecordEncoder.ascii(",\"status\":", &out)
        RecordEncoder.appendSignedInteger(tunnel.status, into: &out)
        if tunnel.kind == .websocket {
            RecordEncoder.ascii(",\"request\":", &out)
            if let upgrade = tunnel.upgrade {
                appendRequest(upgrade, body: nil, into: &out)
            } else {
                RecordEncoder.ascii("null", &out)
            }
            RecordEncoder.ascii(",\"response\":", &out)
            if let upgrade = tunnel.upgrade, let response = upgrade.response {
                let contentType = ContentTypeFields(headers: response.headers)
                appendResponse(response, bodySize: upgrade.responseBody.totalBytes, mimeType: contentType.mediaType,
                               charset: contentType.charsetName, into: &out)
            } else {
                RecordEncoder.ascii("null", &out)
            }
        }
        RecordEncoder.ascii(",\"bytesFromClient\":", &out)
        RecordEncoder.appendInteger(tunnel.bytesFromClient, into: &out)
        RecordEncoder.ascii(",\"bytesFromUpstream\":", &out)
        RecordEncoder.appendInteger(tunnel.bytesFromUpstream, into: &out)
        RecordEncoder.ascii(",\"startTime\":", &out)
        out.appendTime(tunnel.start)
        RecordEncoder.ascii(",\"endTime\":", &out)
        out.appendTime(max(tunnel.end, tunnel.start))
        RecordEncoder.ascii(",\"duration\":", &out)
        RecordEncoder.appendSeconds(tunnel.end - tunnel.start, into: &out)
        RecordEncoder.ascii(",\"closedBy\":", &out)
        out.appendQuoted(tunnel.closedBy.rawValue)
        if tunnel.kind == .websocket { appendWebSocketSummary(webSocket, into: &out) }
        RecordEncoder.ascii(",\"error\":", &out)
        RecordEncoder.appendTransportError(tunnel.error, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// The message counts, the close and the parsing error of a `websocket` record; all
    /// null when its messages were not parsed (`capture.websocketMessages: false`, or an
    /// upgrade to another protocol).
    private func appendWebSocketSummary(_ summary: WebSocketSummary?, into out: inout RecordBuffer) {
        func count(_ name: StaticString, _ value: UInt64?) {
            RecordEncoder.ascii(name, &out)
            if let value { RecordEncoder.appendInteger(value, into: &out) } else { RecordEncoder.ascii("null", &out) }
        }
        count(",\"messagesFromClient\":", summary?.messagesFromClient)
        count(",\"messagesFromUpstream\":", summary?.messagesFromUpstream)
        count(",\"pingsFromClient\":", summary?.pingsFromClient)
        count(",\"pingsFromUpstream\":", summary?.pingsFromUpstream)
        count(",\"pongsFromClient\":", summary?.pongsFromClient)
        count(",\"pongsFromUpstream\":", summary?.pongsFromUpstream)
        count(",\"closeCode\":", summary?.close?.code.map(UInt64.init))
        RecordEncoder.ascii(",\"closeReason\":", &out)
        RecordEncoder.appendOptionalString(summary?.close?.reason, into: &out)
        RecordEncoder.ascii(",\"closeFrom\":", &out)
        RecordEncoder.appendOptionalString(summary?.closeFrom?.rawValue, into: &out)
        RecordEncoder.ascii(",\"frameError\":", &out)
        RecordEncoder.appendOptionalString(summary?.frameError, into: &out)
    }

    /// A `wsMessage` record: one message of a WebSocket connection (`connection` is the
    /// connection's `websocket` record id).
    func encodeWebSocketMessageRecord(id: RecordKey, connection: RecordID, direction: WebSocketDirection, opcode: StaticString,
                                      size: UInt64, time: Double, result: RecordResult, into out: inout RecordBuffer) {
        RecordEncoder.ascii("{\"id\":", &out)
        out.appendID(id)
        RecordEncoder.ascii(",\"kind\":\"wsMessage\",\"connection\":", &out)
        out.appendID(.generated(connection))
        RecordEncoder.ascii(direction == .client ? ",\"direction\":\"client\",\"opcode\":\"" : ",\"direction\":\"server\",\"opcode\":\"", &out)
        RecordEncoder.ascii(opcode, &out)
        RecordEncoder.ascii("\",\"size\":", &out)
        RecordEncoder.appendInteger(size, into: &out)
        RecordEncoder.ascii(",\"time\":", &out)
        out.appendTime(time)
        RecordEncoder.ascii(",\"result\":", &out)
        appendResult(result, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// `{"success": VALUE}` or `{"failure": {...}}`.
    func appendResult(_ result: RecordResult, into out: inout RecordBuffer) {
        switch result {
        case .success(let value):
            RecordEncoder.ascii("{\"success\":", &out)
            out.appendJSON(value)
            out.append(UInt8(ascii: "}"))
        case .successText(let text):
            RecordEncoder.ascii("{\"success\":", &out)
            out.append(contentsOf: text)
            out.append(UInt8(ascii: "}"))
        case .failure(let fields):
            RecordEncoder.ascii("{\"failure\":", &out)
            RecordEncoder.appendErrorFields(fields, into: &out)
            out.append(UInt8(ascii: "}"))
        }
    }

    // MARK: Parts

    /// Returns the value of the request's `ReplayOfField`, which is not written with the
    /// headers (it is the record's `replayOf`).
    @discardableResult
    func appendRequest(_ exchange: CapturedExchange, body: RequestBodyOutcome?, into out: inout RecordBuffer) -> String? {
        let request = exchange.request
        RecordEncoder.ascii("{\"method\":", &out)
        out.appendQuoted(request.method)
        RecordEncoder.ascii(",\"url\":", &out)
        out.appendQuoted(exchange.url)
        RecordEncoder.ascii(",\"httpVersion\":", &out)
        RecordEncoder.appendVersion(request.version, into: &out)
        RecordEncoder.ascii(",\"headers\":", &out)
        let replayOf = appendHeaders(request.headers, takingReplayOf: true, into: &out)
        RecordEncoder.ascii(",\"bodySize\":", &out)
        RecordEncoder.appendInteger(exchange.requestBody.totalBytes, into: &out)
        if let trailers = exchange.requestBody.trailers {
            RecordEncoder.ascii(",\"trailers\":", &out)
            appendHeaders(trailers, into: &out)
        }
        switch body {
        case .value(let value)?:
            RecordEncoder.ascii(",\"body\":", &out)
            out.appendJSON(value)
        case .valueText(let text)?:
            RecordEncoder.ascii(",\"body\":", &out)
            out.append(contentsOf: text)
        case .failure(let fields)?:
            RecordEncoder.ascii(",\"bodyError\":", &out)
            RecordEncoder.appendErrorFields(fields, into: &out)
        case nil:
            break
        }
        out.append(UInt8(ascii: "}"))
        return replayOf
    }

    func appendResponse(_ response: HTTPResponseHead, bodySize: UInt64, mimeType: String?, charset: String?,
                        trailers: HTTPHeaders? = nil, into out: inout RecordBuffer) {
        RecordEncoder.ascii("{\"status\":", &out)
        RecordEncoder.appendSignedInteger(response.status, into: &out)
        RecordEncoder.ascii(",\"reason\":", &out)
        out.appendQuoted(response.reason)
        RecordEncoder.ascii(",\"httpVersion\":", &out)
        RecordEncoder.appendVersion(response.version, into: &out)
        RecordEncoder.ascii(",\"headers\":", &out)
        appendHeaders(response.headers, into: &out)
        RecordEncoder.ascii(",\"bodySize\":", &out)
        RecordEncoder.appendInteger(bodySize, into: &out)
        RecordEncoder.ascii(",\"mimeType\":", &out)
        RecordEncoder.appendOptionalString(mimeType, into: &out)
        RecordEncoder.ascii(",\"charset\":", &out)
        RecordEncoder.appendOptionalString(charset, into: &out)
        if let trailers {
            RecordEncoder.ascii(",\"trailers\":", &out)
            appendHeaders(trailers, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// With `takingReplayOf` (a request's fields), a `ReplayOfField` is left out and its
    /// value returned.
    @discardableResult
    func appendHeaders(_ headers: HTTPHeaders, takingReplayOf: Bool = false, into out: inout RecordBuffer) -> String? {
        out.append(UInt8(ascii: "["))
        var first = true
        var replayOf: String?
        // Straight from the head's bytes: no string per name and value.
        headers.forEachField { name, value in
            if takingReplayOf && ReplayOfField.matches(name) {
                if replayOf == nil && !value.isEmpty { replayOf = String(decoding: value, as: UTF8.self) }
                return
            }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            let redacted = headerRedaction.redacts(name)
            if out.appendPlainField(name: name, value: value, redacted: redacted) { return }
            out.append(UInt8(ascii: "["))
            out.appendQuotedText(name)
            out.append(UInt8(ascii: ","))
            if redacted {
                RecordEncoder.ascii("\"[redacted]\"", &out)
            } else {
                out.appendQuotedText(value)
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(UInt8(ascii: "]"))
        return replayOf
    }

    // MARK: Scalars

    static func appendErrorFields(_ fields: ErrorLogFields, into out: inout RecordBuffer) {
        ascii("{\"error\":", &out)
        out.appendQuoted(fields.error)
        ascii(",\"reason\":", &out)
        appendOptionalString(fields.reason, into: &out)
        ascii(",\"message\":", &out)
        out.appendQuoted(fields.message)
        out.append(UInt8(ascii: "}"))
    }

    static func appendTransportError(_ error: TransportError?, into out: inout RecordBuffer) {
        guard let error else { ascii("null", &out); return }
        ascii("{\"code\":", &out)
        out.appendQuoted(error.code.rawValue)
        ascii(",\"message\":", &out)
        out.appendQuoted(error.message)
        out.append(UInt8(ascii: "}"))
    }

    static func appendVersion(_ version: HTTPVersion, into out: inout RecordBuffer) {
        ascii("\"HTTP/", &out)
        appendSignedInteger(version.major, into: &out)
        // HTTP/2 has no minor version (`HTTPVersion.description`).
        if !(version.minor == 0 && version.major >= 2) {
            out.append(UInt8(ascii: "."))
            appendSignedInteger(version.minor, into: &out)
        }
        out.append(UInt8(ascii: "\""))
    }

    static func appendOptionalSeconds(_ seconds: Double?, into out: inout RecordBuffer) {
        if let seconds { appendSeconds(seconds, into: &out) } else { ascii("null", &out) }
    }

    /// Seconds rounded to the microsecond, as `0`, `2`, `0.00121`, `1.5`: trailing
    /// zeros dropped, never negative (clock steps), never in exponent form.
    public static func appendSeconds(_ seconds: Double, into out: inout [UInt8]) {
        var buffer = RecordBuffer(capacity: 32)
        appendSeconds(seconds, into: &buffer)
        out.append(contentsOf: buffer.bytes)
    }

    static func appendSeconds(_ seconds: Double, into out: inout RecordBuffer) {
        guard seconds.isFinite, seconds > 0 else { out.append(UInt8(ascii: "0")); return }
        // 9e15 µs is 285 years: far beyond any duration, well inside UInt64.
        // + 0.5 and truncation: rounds half away from zero like .rounded() for the positive
        // values here, without a libm call per duration.
        let micros = UInt64(min(seconds * 1_000_000 + 0.5, 9e15))
        // Digits written in place, the fraction two at a time from a table: through a stack
        // tuple, a digit per division and a memcpy call, a record's seven durations cost
        // more than the rest of its timeline.
        out.write(maxCount: 24) { p in
            var n = DecimalText.write(micros / 1_000_000, to: p)
            let fraction = Int(micros % 1_000_000)
            guard fraction != 0 else { return n }
            p[n] = UInt8(ascii: ".")
            writeSixDigits(fraction, to: UnsafeMutableRawPointer(p + n + 1))
            n += 7
            while p[n - 1] == UInt8(ascii: "0") { n -= 1 }  // the fraction is not 0: a digit stays
            return n
        }
    }

    /// `value` (0 ..< 1,000,000) as six digits at `p`, two per table lookup.
    @inline(__always)
    static func writeSixDigits(_ value: Int, to p: UnsafeMutableRawPointer) {
        // A pair index past 99 would read beyond the table.
        precondition(value >= 0 && value < 1_000_000, "writeSixDigits: \(value)")
        let pairs = digitPairs.utf8Start
        let high = value / 10_000, middle = value / 100 % 100, low = value % 100
        p.storeBytes(of: pairs[2 * high], toByteOffset: 0, as: UInt8.self)
        p.storeBytes(of: pairs[2 * high + 1], toByteOffset: 1, as: UInt8.self)
        p.storeBytes(of: pairs[2 * middle], toByteOffset: 2, as: UInt8.self)
        p.storeBytes(of: pairs[2 * middle + 1], toByteOffset: 3, as: UInt8.self)
        p.storeBytes(of: pairs[2 * low], toByteOffset: 4, as: UInt8.self)
        p.storeBytes(of: pairs[2 * low + 1], toByteOffset: 5, as: UInt8.self)
    }

    /// "00", "01", … "99": two decimal digits per lookup.
    static let digitPairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    public static func appendInteger(_ value: UInt64, into out: inout [UInt8]) {
        var buffer = RecordBuffer(capacity: 32)
        appendInteger(value, into: &buffer)
        out.append(contentsOf: buffer.bytes)
    }

    static func appendInteger(_ value: UInt64, into out: inout RecordBuffer) {
        if value < 10 { out.append(UInt8(ascii: "0") + UInt8(value)); return }
        out.write(maxCount: 20) { DecimalText.write(value, to: $0) }
    }

    static func appendSignedInteger(_ value: Int, into out: inout RecordBuffer) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        appendInteger(value.magnitude.asUInt64, into: &out)
    }

    static func appendBool(_ value: Bool, into out: inout RecordBuffer) {
        if value { ascii("true", &out) } else { ascii("false", &out) }
    }

    static func appendOptionalString(_ value: String?, into out: inout RecordBuffer) {
        if let value { out.appendQuoted(value) } else { ascii("null", &out) }
    }

    @inline(__always)
    static func ascii(_ text: StaticString, _ out: inout RecordBuffer) {
        out.append(text)
    }
}

private extension UInt {
    var asUInt64: UInt64 { UInt64(self) }
}
