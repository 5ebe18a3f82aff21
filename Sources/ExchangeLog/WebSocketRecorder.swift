import HTTP1
import ResponseSerialization
import WebSocket

/// The log's side of one upgraded connection: parses the copies of both directions' bytes
/// the engine hands over (`CapturedWebSocketPiece`) into `wsMessage` records, one per
/// message as it completes, and writes the connection's `websocket` record at its end.
/// Kept in the capture's `state`, so whichever worker takes a piece finds it; used only
/// under that lock.
///
/// Rules:
/// - Pieces are handled in `sequence` order, whichever worker takes them: one that arrives
///   early waits here until those before it came. A piece the pipeline could not queue
///   (`WebSocketCapture.noteRefused`, taken over at the next `take`) stops the parsing
///   (`frameError` says so) but not the end's record.
/// - A malformed frame or a deflate error stops the parsing of the whole connection, never
///   the relaying; the engine stops copying (`WebSocketCapture.stopParsing`).
/// - The connection's record id is drawn when the recorder starts, so each message names it
///   (`connection`) before the record itself is written.
final class WebSocketRecorder {
    let connectionID: RecordID
    private let rule: Rule?
    private var next: UInt64 = 0
    private var early: [UInt64: CapturedWebSocketPiece.Content] = [:]
    private var lost: Set<UInt64> = []
    private var client: WebSocketMessageParser
    private var server: WebSocketMessageParser
    private var frameError: String?
    private var closeFrom: WebSocketDirection?
    private var completed: [WebSocketMessage] = []

    init(capture: WebSocketCapture, processor: ExchangeProcessor, ids: RecordIDGenerator) {
        let upgrade = capture.upgrade
        connectionID = ids.nextID(startTime: upgrade.clock.requestStart)
        rule = processor.ruleSet.matchWebSocket(upgrade)
        let keep = processor.settings.messageKeepBytes
        let maxDecoded = processor.settings.decodeLimit
        var deflate: PerMessageDeflate?
        do {
            deflate = try PerMessageDeflate.negotiated(upgrade.response?.headers["Sec-WebSocket-Extensions"] ?? [])
        } catch {
            frameError = "\(error)"
            capture.stopParsing()
        }
        client = WebSocketMessageParser(fromClient: true, deflate: deflate, keepBytes: keep, maxDecodedBytes: maxDecoded)
        server = WebSocketMessageParser(fromClient: false, deflate: deflate, keepBytes: keep, maxDecodedBytes: maxDecoded)
    }

    /// The recorder of `capture`, made on first use; call with `capture.state` locked.
    static func of(_ capture: WebSocketCapture, in state: inout AnyObject?, processor: ExchangeProcessor,
                   ids: RecordIDGenerator) -> WebSocketRecorder {
        if let recorder = state as? WebSocketRecorder { return recorder }
        let recorder = WebSocketRecorder(capture: capture, processor: processor, ids: ids)
        state = recorder
        return recorder
    }

    /// Handles `piece` (and any early pieces it unblocks), appending each record and its end
    /// offset to `buffer` and `ends`.
    func take(_ piece: CapturedWebSocketPiece, processor: ExchangeProcessor, ids: RecordIDGenerator,
              into buffer: inout RecordBuffer, ends: inout [Int], scratch: inout [UInt8]) {
        // Pieces refused before this one was queued are noted by now (one loop hands over a
        // connection's pieces in order).
        for sequence in piece.capture.takeRefused() where sequence >= next { lost.insert(sequence) }
        while lost.contains(next) { loseNext(piece.capture) }
        guard piece.sequence >= next else { return }
        if piece.sequence > next {
            early[piece.sequence] = piece.content
            return
        }
        handle(piece.content, piece.capture, processor, ids, &buffer, &ends, &scratch)
        next += 1
        drain(piece.capture, processor, ids, &buffer, &ends, &scratch)
    }

    private func loseNext(_ capture: WebSocketCapture) {
        lost.remove(next)
        if frameError == nil {
            frameError = "bytes were not parsed: the decode queue was full (log.decodeQueueCapacity, log.decodeQueueBytes)"
        }
        capture.stopParsing()
        next += 1
    }

    private func drain(_ capture: WebSocketCapture, _ processor: ExchangeProcessor, _ ids: RecordIDGenerator,
                       _ buffer: inout RecordBuffer, _ ends: inout [Int], _ scratch: inout [UInt8]) {
        while true {
            if lost.contains(next) { loseNext(capture); continue }
            guard let content = early.removeValue(forKey: next) else { return }
            handle(content, capture, processor, ids, &buffer, &ends, &scratch)
            next += 1
        }
    }

    private func handle(_ content: CapturedWebSocketPiece.Content, _ capture: WebSocketCapture, _ processor: ExchangeProcessor,
                        _ ids: RecordIDGenerator, _ buffer: inout RecordBuffer, _ ends: inout [Int], _ scratch: inout [UInt8]) {
        switch content {
        case .bytes(let direction, let bytes, let time):
            guard frameError == nil else { return }
            do {
                // Read in place: the queued event still shares the bytes (see `ExchangePipeline.work`).
                try bytes.withUnsafeBytes { chunk in
                    if direction == .client {
                        try client.parse(chunk, into: &completed)
                    } else {
                        try server.parse(chunk, into: &completed)
                    }
                }
            } catch {
                frameError = "\(direction.rawValue): \(error)"
                capture.stopParsing()
            }
            if closeFrom == nil, (direction == .client ? client.close : server.close) != nil { closeFrom = direction }
            for message in completed {
                let result = processor.messageResult(message, upgrade: capture.upgrade, rule: rule, scratch: &scratch)
                processor.encoder.encodeWebSocketMessageRecord(
                    id: .generated(ids.nextID(startTime: time)), connection: connectionID, direction: direction,
                    opcode: message.opcode == .text ? "text" : "binary", size: message.size, time: time, result: result,
                    into: &buffer)
                buffer.append(UInt8(ascii: "\n"))
                ends.append(buffer.count)
            }
            completed.removeAll(keepingCapacity: true)
        case .end(let tunnel):
            let summary = WebSocketSummary(
                messagesFromClient: client.messages, messagesFromUpstream: server.messages,
                pingsFromClient: client.pings, pingsFromUpstream: server.pings,
                pongsFromClient: client.pongs, pongsFromUpstream: server.pongs,
                close: closeFrom.flatMap { $0 == .client ? client.close : server.close }, closeFrom: closeFrom,
                frameError: frameError)
            processor.encodeRecord(for: tunnel, id: .generated(connectionID), webSocket: summary, into: &buffer)
            buffer.append(UInt8(ascii: "\n"))
            ends.append(buffer.count)
        }
    }
}

/// What the `websocket` record says of the messages (null fields when they were not parsed).
struct WebSocketSummary {
    var messagesFromClient: UInt64
    var messagesFromUpstream: UInt64
    var pingsFromClient: UInt64
    var pingsFromUpstream: UInt64
    var pongsFromClient: UInt64
    var pongsFromUpstream: UInt64
    var close: WebSocketClose?
    var closeFrom: WebSocketDirection?
    var frameError: String?
}

extension ExchangeProcessor {
    /// A message's `result`, as a body's would be: the rule's serializer (a `websocket: true`
    /// rule matching the upgrade), else for text JSON when it parses and a string when not,
    /// for binary `data`; redaction as for bodies; a message cut at `capture.maxBodyBytes` is
    /// as truncated as a cut body.
    func messageResult(_ message: WebSocketMessage, upgrade: CapturedExchange, rule: Rule?,
                       scratch: inout [UInt8]) -> RecordResult {
        let text = message.opcode == .text
        var head = HTTPResponseHead(status: 200)
        let body = CapturedBody(bytes: message.payload, totalBytes: message.size,
                                cutShort: message.truncated && UInt64(message.payload.count) == message.size)
        func run(_ contentType: String, _ rule: Rule?, _ scratch: inout [UInt8]) -> RecordResult {
            head.headers = HTTPHeaders()
            head.headers.add(name: "Content-Type", value: contentType)
            let exchange = CapturedExchange(client: "", url: upgrade.url, request: upgrade.request, response: head,
                                            responseBody: body, clock: upgrade.clock)
            return outcome(for: exchange, rule: rule, reusing: &scratch).result
        }
        if let rule {
            return run(text ? "text/plain; charset=utf-8" : "application/octet-stream", rule, &scratch)
        }
        guard text else { return run("application/octet-stream", nil, &scratch) }
        let json = compactFastPath ? compactJSONResult(message, method: upgrade.request.method, scratch: &scratch)
                                   : run("application/json", nil, &scratch)
        if case .failure(let fields) = json, fields.reason == "jsonSerializationFailed" {
            return run("text/plain; charset=utf-8", nil, &scratch)
        }
        return json
    }

    /// What `outcome` gives a JSON text message without a rule, without what a response
    /// needs besides (decoding, the exchange value, timeline, metrics): the same error first,
    /// then the one-pass compactor with `redact.jsonKeys`. Most messages take this path;
    /// `WebSocketRecorderTests` holds it to the other.
    func compactJSONResult(_ message: WebSocketMessage, method: String, scratch: inout [UInt8]) -> RecordResult {
        let capture = BodyCapture(captured: message.payload.count, total: Int(clamping: message.size), truncated: message.truncated)
        let error = CompletedExchange.serializerError(nil, capture: capture, acceptsTruncatedInput: false)
        let spec = SerializerSpec(kind: .json)
        let result = message.payload.withUnsafeBytes { raw in
            CompactJSON.serialize(method: method, status: 200, body: raw, error: error, allowFragments: spec.allowFragments,
                                  redactingKeys: keyRedactor, policy: spec.emptyResponsePolicy, reusing: &scratch)
        }
        return RecordResult(compact: result)
    }
}
