import Foundation
import HTTP1
import ResponseSerialization

/// Turns a captured exchange into one log record (see `RecordEncoder` for the
/// shape). Pure: no I/O, safe to call from any thread.
///
/// For an exchange: the first matching rule (or the default by Content-Type) →
/// the response body's Content-Encoding undone (bounded by `decodeLimit`) → a
/// `CompletedExchange` with the transport failure as its error → the rule's
/// validators → the serializer, Alamofire-style (an error passed in becomes the
/// result) → the value's `select`, then `redact` pointers, then `redact.jsonKeys`
/// at any depth → encoded.
///
/// A captured request body goes through the same decoding and the default
/// serializer for the request's Content-Type into `request.body` (only
/// `redact.jsonKeys` applies), or `request.bodyError` when that fails.
public struct ExchangeProcessor: Sendable {
    public let settings: ProcessorSettings
    public let ruleSet: RuleSet
    let encoder: RecordEncoder
    private let decoder: ContentDecoder
    let keyRedactor: JSONKeySet
    private let clock: @Sendable () -> Double
    /// Whether compact-JSON records skip the exchange objects (see `outcome`); tests turn it
    /// off to hold the two paths to the same bytes.
    var compactFastPath = true

    /// - Parameter clock: stamps serializationCompletedTime (seconds since 1970).
    public init(settings: ProcessorSettings,
                clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.settings = settings
        self.ruleSet = RuleSet(rules: settings.rules)
        self.encoder = RecordEncoder(headerRedaction: HeaderRedaction(settings.redactHeaders))
        self.decoder = ContentDecoder(maxOutputBytes: settings.decodeLimit)
        self.keyRedactor = JSONKeySet(settings.redactJSONKeys)
        self.clock = clock
    }

    /// One `http` record: a JSON object on one line, without the newline.
    public func record(for exchange: CapturedExchange, id: String) -> [UInt8] { record(for: exchange, key: .text(id)) }

    /// The same with a generated id, as the pipeline's workers write it.
    public func record(for exchange: CapturedExchange, id: RecordID) -> [UInt8] { record(for: exchange, key: .generated(id)) }

    private func record(for exchange: CapturedExchange, key: RecordKey) -> [UInt8] {
        // A small exchange's record is ~1.4 KB; a body is logged at most about its own size.
        var buffer = RecordBuffer(capacity: 2048 + exchange.responseBody.bytes.count + exchange.requestBody.bytes.count)
        encodeRecord(for: exchange, id: key, into: &buffer)
        return Array(buffer.bytes)
    }

    /// Appends the `http` record to `buffer` (a worker encodes its whole batch into one).
    func encodeRecord(for exchange: CapturedExchange, id: RecordKey, into buffer: inout RecordBuffer) {
        var scratch: [UInt8] = []
        encodeRecord(for: exchange, id: id, into: &buffer, scratch: &scratch)
    }

    /// The same, compacting a JSON body in `scratch`'s memory, which a worker keeps from
    /// record to record: see `outcome(for:reusing:)`.
    func encodeRecord(for exchange: CapturedExchange, id: RecordKey, into buffer: inout RecordBuffer,
                      scratch: inout [UInt8]) {
        let start = buffer.count
        // A `let`: as a `var` (for the rare cut below) it was copied for every record.
        let outcome = self.outcome(for: exchange, reusing: &scratch)
        let url = redactingQuery(exchange.url)
        encodeHTTPRecord(exchange, url: url, id: id, outcome: outcome, into: &buffer)
        // Escaping can make a value six times its decoded size (`\u0001` per control byte, in
        // event-stream data, form values, plist strings): past the bound the values go and
        // the record says why, so one response cannot fill the writer's queue.
        let size = buffer.count - start
        guard size > maxRecordBytes else { return }
        buffer.truncate(to: start)
        let tooLarge = ErrorLogFields(
            error: "responseSerializationFailed", reason: "recordTooLarge",
            message: "the logged values would take \(size) bytes, past \(maxRecordBytes) (twice capture.maxDecodedBytes and 1 MiB)")
        var cut = outcome
        cut.result = .failure(tooLarge)
        if cut.requestBody != nil { cut.requestBody = .failure(tooLarge) }
        cut.body.truncated = true
        encodeHTTPRecord(exchange, url: url, id: id, outcome: cut, into: &buffer)
    }

    /// The largest `http` record written with its values: room for a body and a request body
    /// at the decode limit, and for both heads.
    var maxRecordBytes: Int { 2 * settings.decodeLimit + 1 << 20 }

    private func encodeHTTPRecord(_ exchange: CapturedExchange, url: String?, id: RecordKey, outcome: HTTPRecordOutcome,
                                  into buffer: inout RecordBuffer) {
        if let url {
            // Copied only when a query parameter is redacted (rare): a copy retains every field.
            var redacted = exchange
            redacted.url = url
            encoder.encodeHTTPRecord(id: id, exchange: redacted, outcome: outcome, into: &buffer)
            return
        }
        encoder.encodeHTTPRecord(id: id, exchange: exchange, outcome: outcome, into: &buffer)
    }

    /// `url` with the value of each query parameter named in `redact.jsonKeys` replaced by
    /// `[redacted]` (`?access_token=…`, common for OAuth and WebSocket auth); nil when none is.
    func redactingQuery(_ url: String) -> String? {
        // Searched as UTF-8: `String.firstIndex(of:)` walks Characters (grapheme breaking),
        // far slower for every record's URL. An ASCII byte's index is a valid String index.
        guard !settings.redactJSONKeys.isEmpty else { return nil }
        // Most URLs have no query: memchr says so in a few instructions.
        let hasQuestion = url.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.baseAddress.map { memchr($0, Int32(UInt8(ascii: "?")), bytes.count) != nil } ?? false
        } ?? true
        guard hasQuestion, let question = url.utf8.firstIndex(of: UInt8(ascii: "?")) else { return nil }
        let end = url.utf8[question...].firstIndex(of: UInt8(ascii: "#")) ?? url.endIndex
        let query = String(url[url.index(after: question)..<end])
        guard let redacted = redactingFormFields(query) else { return nil }
        return String(url[...question]) + redacted + String(url[end...])
    }

    /// One `tunnel` or `websocket` record, without the newline.
    public func record(for tunnel: CapturedTunnel, id: String) -> [UInt8] {
        var buffer = RecordBuffer(capacity: tunnel.upgrade == nil ? 512 : 2048)
        encodeRecord(for: tunnel, id: .text(id), into: &buffer)
        return Array(buffer.bytes)
    }

    /// - Parameter webSocket: the messages' summary, for a websocket whose messages were parsed.
    func encodeRecord(for tunnel: CapturedTunnel, id: RecordKey, webSocket: WebSocketSummary? = nil,
                      into buffer: inout RecordBuffer) {
        // A websocket's target is its URL (with the upgrade request's query).
        if tunnel.upgrade != nil, let target = redactingQuery(tunnel.target) {
            var redacted = tunnel
            redacted.target = target
            if let url = redacted.upgrade.flatMap({ redactingQuery($0.url) }) { redacted.upgrade?.url = url }
            encoder.encodeTunnelRecord(id: id, tunnel: redacted, webSocket: webSocket, into: &buffer)
            return
        }
        encoder.encodeTunnelRecord(id: id, tunnel: tunnel, webSocket: webSocket, into: &buffer)
    }

    // MARK: Pipeline

    /// Everything the record says beyond the captured exchange.
    public func outcome(for exchange: CapturedExchange) -> HTTPRecordOutcome {
        var scratch: [UInt8] = []
        return outcome(for: exchange, reusing: &scratch)
    }

    /// The same; the compact fast path writes the body's JSON text into `scratch`'s memory and
    /// the outcome shares it. Once the outcome is gone the next record reuses that memory,
    /// rather than allocating and freeing a text array per record.
    func outcome(for exchange: CapturedExchange, reusing scratch: inout [UInt8]) -> HTTPRecordOutcome {
        outcome(for: exchange, rule: ruleSet.match(exchange), reusing: &scratch)
    }

    /// The same with the rule already chosen (a WebSocket message's, see `messageResult`).
    func outcome(for exchange: CapturedExchange, rule: Rule?, reusing scratch: inout [UInt8]) -> HTTPRecordOutcome {
        // The head is read in place (a borrowed parameter), never copied: a copy retains and
        // releases its arrays, atomics on memory the event loop wrote (cache lines fetched
        // from the other core).
        let (hasResponse, status, contentEncoding, contentType) = ExchangeProcessor.responseFields(of: exchange)
        let body = exchange.responseBody
        let transportError: Error? = exchange.error.map {
            TapwireError.transportFailed($0)
        }

        // Undo the Content-Encoding. A body cut by a transport failure (`cutShort`) is as incomplete as one
        // cut by the capture limit, so neither is decoded as if whole.
        var decodedBytes: [UInt8] = []
        var summary = ResponseBodySummary(size: 0, captured: body.bytes.count, truncated: body.truncated,
                                          contentEncoding: contentEncoding)
        var decodingError: Error?
        if hasResponse {
            do throws(ContentDecodingError) {
                let decoded = try decoder.decode(body.bytes, contentEncoding: contentEncoding,
                                                 inputTruncated: body.truncated)
                decodedBytes = decoded.bytes
                summary.size = decoded.bytes.count
                // Cut input (the capture limit, a cut transfer) or the decode limit in any layer;
                // an inner layer's cut can leave the final output short of the limit.
                summary.truncated = body.truncated || decoded.truncated
            } catch {
                decodingError = TapwireError.responseSerializationFailed(
                    reason: .contentDecodingFailed(encoding: error.coding, message: error.message))
                summary.size = nil
            }
        }

        let clock = exchange.clock
        let completedTime = clock.lastResponseByte ?? ExchangeProcessor.latestPoint(clock)
        let metrics = ExchangeProcessor.metrics(exchange)
        // What the exchange hands its serializer before any validator runs.
        let exchangeError = transportError ?? decodingError
        let capture = BodyCapture(captured: body.bytes.count, total: Int(clamping: body.totalBytes),
                                  truncated: summary.truncated)
        let spec = rule?.serializer ?? SerializerSpec(kind: RuleSet.defaultSerializer(contentType, body: decodedBytes))
        // Without select or redact pointers the value is only ever written out: the one-pass
        // compactor gives the same text without building a tree, which costs far more.
        let needsTree = rule.map { !$0.select.isEmpty || !$0.redact.isEmpty } ?? false
        if compactFastPath && spec.kind == .json && !needsTree && rule?.validate == nil {
            // What `CompletedExchange.serializeCompactJSON` returns, without building the exchange,
            // its `Data` and the `DataResponse` (copies of both heads): the same error first
            // (`serializerError`), then the same serializer steps on the same bytes, the same timeline.
            // `CompactFastPathTests` holds the two to the same records.
            let error = CompletedExchange.serializerError(exchangeError, capture: capture, acceptsTruncatedInput: false)
            let bytes = decodingError == nil ? decodedBytes : body.bytes
            let result = bytes.withUnsafeBytes { raw in
                CompactJSON.serialize(method: exchange.request.method, status: status,
                                      body: hasResponse ? raw : nil, error: error, allowFragments: spec.allowFragments,
                                      redactingKeys: keyRedactor, policy: spec.emptyResponsePolicy, reusing: &scratch)
            }
            let timeline = Timeline(requestStartTime: clock.requestStart, initialResponseTime: clock.firstResponseByte ?? 0,
                                    requestCompletedTime: completedTime,
                                    serializationCompletedTime: max(self.clock(), completedTime))
            return recordOutcome(exchange, rule: rule, spec: spec, result: RecordResult(compact: result), timeline: timeline,
                                 metrics: metrics, body: summary, contentType: contentType, hasResponse: hasResponse)
        }

        let data: Data? = hasResponse ? Data(decodingError == nil ? decodedBytes : body.bytes) : nil
        let completed = CompletedExchange(
            request: exchange.request, response: exchange.response, data: data,
            error: exchangeError, capture: capture,
            requestStartTime: clock.requestStart, initialResponseTime: clock.firstResponseByte ?? 0,
            requestCompletedTime: completedTime, metrics: metrics, clock: self.clock)

        if let validation = rule?.validate {
            if let patterns = validation.statusCodes {
                completed.validate { _, response, _ in
                    if patterns.contains(where: { $0.matches(response.status) }) { return .success }
                    return .failure(TapwireError.responseValidationFailed(reason: .unacceptableStatusCode(code: response.status)))
                }
            }
            if let types = validation.contentTypes { completed.validate(contentType: types) }
        }

        // What Charset.forResponse would choose, without its Foundation string work.
        let stringCharset = spec.encoding.flatMap { Charset(ianaName: $0) } ?? contentType.knownCharset ?? .isoLatin1
        if spec.kind == .json && !needsTree {
            let policy = spec.emptyResponsePolicy
            let response = completed.serializeCompactJSON(
                allowFragments: spec.allowFragments, redactingKeys: keyRedactor,
                emptyResponseCodes: policy.codes, emptyRequestMethods: policy.methods)
            return recordOutcome(exchange, rule: rule, spec: spec, result: RecordResult(compact: response.result),
                                 timeline: response.timeline, metrics: metrics, body: summary, contentType: contentType,
                                 hasResponse: hasResponse)
        }
        let (result, timeline) = serialize(completed, spec, charset: stringCharset)

        var recordResult: RecordResult
        switch result {
        case .success(let value):
            var value = value
            if case .string(let text) = value, let cut = ExchangeProcessor.prefix(of: text, escapedWithin: settings.decodeLimit) {
                value = .string(cut)
                summary.truncated = true
            }
            if ExchangeProcessor.producesJSON(spec.kind), let rule {
                // Redact first: both lists point into the document as received, and select
                // closes up arrays (`/items/2` kept alone becomes `/items/0`), so a redact
                // pointer applied afterwards could miss the value it names.
                if !rule.redact.isEmpty { value = value.redacting(rule.redact) }
                if !rule.select.isEmpty { value = value.selecting(rule.select) }
            }
            value = redactingKeys(value, form: spec.kind == .form || contentType.mediaType == ExchangeProcessor.formType,
                                  eventStream: spec.kind == .eventStream)
            recordResult = .success(value)
        case .failure(let error):
            recordResult = .failure(ErrorLogFields(error))
        }

        return recordOutcome(exchange, rule: rule, spec: spec, result: recordResult, timeline: timeline,
                             metrics: metrics, body: summary, contentType: contentType, hasResponse: hasResponse,
                             stringCharset: stringCharset)
    }

    /// The one place a record outcome is put together: the three ways to a result (the compact
    /// fast path, the compact serializer, every other serializer) differ only in the result,
    /// the timeline and the body summary.
    /// - Parameter stringCharset: what the string serializer decoded with, when it ran; the
    ///   record's `response.charset` names it rather than the Content-Type's.
    private func recordOutcome(_ exchange: CapturedExchange, rule: Rule?, spec: SerializerSpec, result: RecordResult,
                               timeline: Timeline, metrics: ExchangeMetrics, body: ResponseBodySummary,
                               contentType: ContentTypeFields, hasResponse: Bool,
                               stringCharset: Charset? = nil) -> HTTPRecordOutcome {
        var charset: String?
        if hasResponse {
            charset = spec.kind == .string ? stringCharset?.name : contentType.charsetName
        }
        return HTTPRecordOutcome(ruleName: rule?.name ?? RuleSet.defaultRuleName, serializer: spec.kind,
                                 result: result, timeline: timeline, metrics: metrics, body: body,
                                 mimeType: contentType.mediaType, charset: charset,
                                 requestBody: requestBodyOutcome(exchange, rule: rule))
    }

    /// `text` cut so that its JSON string form stays within `maxBytes`, or nil when it fits.
    /// Escaping can make text six times longer (`\u0001`): 8 KB of gzip that decodes to 8 MiB
    /// of control bytes would otherwise make a 50 MB record, and more memory on the worker.
    static func prefix(of text: String, escapedWithin maxBytes: Int) -> String? {
        let utf8 = text.utf8
        if utf8.count * 6 <= maxBytes { return nil }  // fits whatever it holds
        var cost = 0
        var end = utf8.startIndex
        for index in utf8.indices {
            cost += JSONWriter.escapedLength(utf8[index])
            if cost > maxBytes { break }
            // A cut only between characters: before a lead byte or an ASCII one.
            end = utf8.index(after: index)
        }
        if end == utf8.endIndex { return nil }
        while end > utf8.startIndex && utf8[end] & 0xC0 == 0x80 { end = utf8.index(before: end) }
        return String(text[..<end])
    }

    /// Runs the serializer `spec` names; `none` runs none (its value is null, or the
    /// exchange's error when there is one).
    /// - Parameter charset: what the string serializer decodes with.
    private func serialize(_ completed: CompletedExchange, _ spec: SerializerSpec,
                           charset: Charset) -> (Result<JSON, Error>, Timeline) {
        guard let serializer = spec.serializer(charset: charset) else {
            let response = completed.defaultResponse()
            return (response.error.map { .failure($0) } ?? .success(.null), response.timeline)
        }
        let response = completed.serialize(with: serializer)
        return (response.result, response.timeline)
    }

    /// The request body through the default serializer for its Content-Type; nil when none was captured.
    /// The exchange's rule keeps its secrets too: with serializer `none` the body is not
    /// logged, with `data` only its size, and its `redact` pointers apply to a JSON body
    /// (docs/records.md, "Redaction": a rule whose serializer is none or data keeps a body out
    /// of the log; a login's request is where the secret is). `select` and `validate`
    /// describe the response and stay with it.
    private func requestBodyOutcome(_ exchange: CapturedExchange, rule: Rule?) -> RequestBodyOutcome? {
        let body = exchange.requestBody
        guard !body.bytes.isEmpty else { return nil }
        switch rule?.serializer.kind {
        case .none?: return nil
        case .data?: return .value(.object([JSON.Member("size", .number(String(body.totalBytes)))]))
        default: break
        }
        let redactPointers = rule?.redact ?? []
        let headers = exchange.request.headers
        let decodedBytes: [UInt8]
        let truncated: Bool
        do throws(ContentDecodingError) {
            let decoded = try decoder.decode(body.bytes, contentEncoding: ExchangeProcessor.contentEncoding(headers),
                                             inputTruncated: body.truncated)
            decodedBytes = decoded.bytes
            truncated = body.truncated || decoded.truncated
        } catch {
            return .failure(ErrorLogFields(TapwireError.responseSerializationFailed(
                reason: .contentDecodingFailed(encoding: error.coding, message: error.message))))
        }
        let contentType = headers.first(name: "Content-Type")
        let fields = ContentTypeFields(contentType)
        // Validators and serializers read a response head: lend them the request's Content-Type.
        var carrier = HTTPResponseHead(status: 200)
        if let contentType { carrier.headers.add(name: "Content-Type", value: contentType) }
        // …and the request's gRPC message compression, which its messages are in.
        if let grpcEncoding = headers.first(name: "grpc-encoding") { carrier.headers.add(name: "grpc-encoding", value: grpcEncoding) }
        let completed = CompletedExchange(
            request: exchange.request, response: carrier, data: Data(decodedBytes),
            capture: BodyCapture(captured: body.bytes.count, total: Int(clamping: body.totalBytes), truncated: truncated),
            requestStartTime: exchange.clock.requestStart, requestCompletedTime: exchange.clock.requestStart,
            clock: { 0 })
        var spec = SerializerSpec(kind: RuleSet.defaultSerializer(fields, body: decodedBytes))
        // A gRPC rule's schema names the request's messages too (the method's input type).
        if spec.kind == .grpc, let ruleSpec = rule?.serializer, ruleSpec.kind == .grpc {
            spec = ruleSpec
            spec.decodesRequest = true
        }
        if spec.kind == .json && redactPointers.isEmpty {
            // Only key redaction applies here, so the one-pass compactor gives the same text
            // as parse, redact, write, without building a tree.
            let policy = spec.emptyResponsePolicy
            let response = completed.serializeCompactJSON(
                allowFragments: spec.allowFragments, redactingKeys: keyRedactor,
                emptyResponseCodes: policy.codes, emptyRequestMethods: policy.methods)
            switch response.result {
            case .success(let compact): return .valueText(compact.text)
            case .failure(let error): return .failure(ErrorLogFields(error))
            }
        }
        switch serialize(completed, spec, charset: fields.knownCharset ?? .isoLatin1).0 {
        case .success(var value):
            if !redactPointers.isEmpty && ExchangeProcessor.producesJSON(spec.kind) { value = value.redacting(redactPointers) }
            return .value(redactingKeys(value, form: fields.mediaType == ExchangeProcessor.formType))
        case .failure(let error):
            return .failure(ErrorLogFields(error))
        }
    }

    // MARK: Pieces

    static let formType = "application/x-www-form-urlencoded"

    /// `a=1&password=x` with the value of each field named in `redact.jsonKeys` (its name
    /// percent-decoded, any case) replaced by `[redacted]`; nil when none is.
    func redactingFormFields(_ text: String) -> String? {
        var changed = false
        let fields = text.split(separator: "&", omittingEmptySubsequences: false).map { field -> String in
            guard let equals = field.firstIndex(of: "=") else { return String(field) }
            let rawName = String(field[..<equals])
            let name = rawName.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? rawName
            guard redactsFormField(named: name) else { return String(field) }
            changed = true
            return rawName + "=[redacted]"
        }
        return changed ? fields.joined(separator: "&") : nil
    }

    /// Whether a form field's (decoded) name is one `redact.jsonKeys` names: as a whole, or
    /// as a part of the bracket notation Rails, PHP and qs use for nested fields
    /// (`user[password]`, `items[0][token]`).
    func redactsFormField(named name: String) -> Bool {
        let lower = name.lowercased()
        if settings.redactJSONKeys.contains(lower) { return true }
        guard lower.contains("[") else { return false }
        return lower.split(whereSeparator: { $0 == "[" || $0 == "]" }).contains { settings.redactJSONKeys.contains(String($0)) }
    }

    /// `redact.jsonKeys` applied to a serializer's value. A string value that is itself a JSON
    /// document gets them too: JSON posted as text/plain (fetch's default) or as a form
    /// (`curl -d`) is logged by the string serializer, and its secrets were written as sent.
    /// Such a string is replaced by the compact, redacted document only when a key matched,
    /// so other text keeps its exact form.
    ///
    /// With `form` (an urlencoded body), fields named in `redact.jsonKeys` are redacted too:
    /// in the `form` serializer's `[name, value]` pairs, and in the body logged as a string.
    ///
    /// With `eventStream`, each event's `data` text gets the same treatment as a string value
    /// (`data: {"access_token": …}` is JSON more often than not), in the array of events or
    /// in the `events` of the object `assemble` and `maxEvents` make.
    func redactingKeys(_ value: JSON, form: Bool = false, eventStream: Bool = false) -> JSON {
        if eventStream, !keyRedactor.isEmpty {
            let redactingEvents = { (events: [JSON]) -> JSON in
                .array(events.map { event in
                    guard case .object(var members) = self.keyRedactor.redacting(event) else { return event }
                    for i in members.indices where members[i].key == "data" {
                        members[i].value = self.redactingKeys(members[i].value)
                    }
                    return .object(members)
                })
            }
            if case .array(let events) = value { return redactingEvents(events) }
            // With `assemble` or `maxEvents`: {"assembled"?, "eventCount", "events"}. The
            // assembled text is prose put together from pieces, not a document with keys.
            if case .object(var members) = value {
                for i in members.indices {
                    if case .array(let events) = members[i].value, members[i].key == "events" {
                        members[i].value = redactingEvents(events)
                    }
                }
                return .object(members)
            }
        }
        if form && !settings.redactJSONKeys.isEmpty {
            if case .string(let text) = value, let redacted = redactingFormFields(text) { return .string(redacted) }
            if case .array(let pairs) = value {
                // Then the usual key redaction as well: a rule may have parsed a form-typed
                // body as JSON, whose objects the pairs pass leaves alone.
                return keyRedactor.redacting(.array(pairs.map { pair in
                    guard case .array(let items) = pair, items.count == 2, case .string(let name) = items[0],
                          redactsFormField(named: name) else { return pair }
                    return .array([items[0], .string("[redacted]")])
                }))
            }
        }
        guard case .string(let text) = value else { return keyRedactor.redacting(value) }
        guard !keyRedactor.isEmpty,
              let first = text.utf8.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }),
              first == UInt8(ascii: "{") || first == UInt8(ascii: "[") else { return value }
        let bytes = Array(text.utf8)
        var plain: [UInt8] = [], redacted: [UInt8] = []
        let parsed = bytes.withUnsafeBytes { raw in
            JSONCompactor.append(raw, into: &plain) && JSONCompactor.append(raw, redacting: keyRedactor, into: &redacted)
        }
        guard parsed, plain != redacted else { return value }
        return .string(String(decoding: redacted, as: UTF8.self))
    }

    public static func producesJSON(_ kind: SerializerSpec.Kind) -> Bool {
        switch kind {
        case .json, .propertyList, .jsonLines, .form, .eventStream, .msgpack, .protobuf, .grpc: return true
        case .data, .string, .none: return false
        }
    }

    /// `{"base64":"…","size":N}` with the first `base64Bytes` bytes, or `{"size":N}`.
    static func dataValue(_ data: Data, base64Bytes: Int) -> JSON {
        let size = JSON.Member("size", .number(String(data.count)))
        guard base64Bytes > 0 else { return .object([size]) }
        let prefix = data.prefix(base64Bytes)
        return .object([JSON.Member("base64", .string(prefix.base64EncodedString())), size])
    }

    /// What the outcome reads of the response head, from the head in place. The exchange is
    /// passed, not its `response`: passing the optional head copied it (a retain and a release
    /// of both its arrays, on cache lines the event loop wrote).
    @inline(never)
    private static func responseFields(of exchange: CapturedExchange)
        -> (hasResponse: Bool, status: Int?, contentEncoding: String?, contentType: ContentTypeFields) {
        switch exchange.response {
        case .none: return (false, nil, nil, ContentTypeFields(headers: nil))
        case .some(let head):
            return (true, head.status, contentEncoding(head.headers), ContentTypeFields(headers: head.headers))
        }
    }

    /// The Content-Encoding fields' values as one, nil without any. Most heads have none:
    /// `contains(name:)` says so taking the name's bytes once, where collecting the values
    /// would take them again for every field, through a closure each.
    static func contentEncoding(_ headers: borrowing HTTPHeaders) -> String? {
        headers.contains(name: "Content-Encoding") ? joinedValues(headers["Content-Encoding"]) : nil
    }

    /// Several fields of one list header read as one value (RFC 9110 §5.3).
    static func joinedValues(_ values: [String]) -> String? {
        switch values.count {
        case 0: return nil
        case 1: return values[0]
        default: return values.joined(separator: ", ")
        }
    }

    /// The last clock point reached: when the exchange failed before the response ended.
    static func latestPoint(_ clock: ExchangeClock) -> Double {
        var latest = clock.requestStart
        for point in [clock.connectStart, clock.dnsDone, clock.connected, clock.tlsDone, clock.requestSent, clock.firstResponseByte] {
            if let point { latest = max(latest, point) }
        }
        return latest
    }

    /// The phases of the upstream exchange; a phase whose end points were not both reached is nil.
    static func metrics(_ exchange: CapturedExchange) -> ExchangeMetrics {
        let c = exchange.clock
        func span(_ from: Double?, _ to: Double?) -> Double? {
            guard let from, let to else { return nil }
            return max(0, to - from)
        }
        return ExchangeMetrics(
            dns: span(c.connectStart, c.dnsDone),
            connect: span(c.dnsDone ?? c.connectStart, c.connected),
            tls: span(c.connected, c.tlsDone),
            send: span(c.tlsDone ?? c.connected ?? c.requestStart, c.requestSent),
            wait: span(c.requestSent, c.firstResponseByte),
            receive: span(c.firstResponseByte, c.lastResponseByte),
            connectionReused: exchange.connectionReused,
            upstream: exchange.upstreamAddress, upstreamHTTPVersion: exchange.upstreamHTTPVersion, via: exchange.via)
    }
}

extension RecordResult {
    /// A compact-JSON serializer's result as the record writes it.
    init(compact result: Result<CompactJSON, Error>) {
        switch result {
        case .success(let compact): self = .successText(compact.text)
        case .failure(let error): self = .failure(ErrorLogFields(error))
        }
    }
}
