import ExchangeLog
import Foundation
import ResponseSerialization

/// The request of an `http` record, rebuilt for sending again (`tapwire curl`, `tapwire replay`):
/// its method, absolute URL, the header fields worth sending, and the body bytes when the
/// record holds them whole.
///
/// Only what the record says is used; nothing is guessed. A redacted value stays
/// `[redacted]` and is listed in `redactions`; a body the record does not hold whole (not
/// captured, cut by the capture limit, logged by size only, or by a serializer whose value
/// cannot give the bytes back) leaves `body` nil and says why in `bodyMissing`.
public struct RecordedRequest: Equatable {
    public var id: String
    public var method: String
    public var url: String
    /// Fields to send, in the record's order: without hop-by-hop and framing fields (the
    /// sender frames the body itself), Host (the URL carries it) and, when the body was logged
    /// decoded, Content-Encoding.
    public var headers: [(name: String, value: String)]
    /// The body to send; empty when the request had none.
    public var body: [UInt8]?
    /// Why the body cannot be sent as it was (nil when it can).
    public var bodyMissing: String?
    /// Where the record holds `[redacted]` instead of a value: `header Authorization`,
    /// `body /password`, `url query`.
    public var redactions: [String]
    /// Notes on what differs from the original request (a Content-Encoding undone).
    public var notes: [String]
    /// Fields that were not UTF-8 on the wire: the record holds U+FFFD in place of their
    /// bytes, so they are left out of `headers` rather than sent as EF BF BD.
    public var unsendableHeaders: [String] = []
    /// The record holds only the start of the body: capture stopped before its end.
    public var bodyTruncated = false

    public static func == (a: RecordedRequest, b: RecordedRequest) -> Bool {
        a.id == b.id && a.method == b.method && a.url == b.url && a.body == b.body && a.bodyMissing == b.bodyMissing
            && a.redactions == b.redactions && a.notes == b.notes && a.unsendableHeaders == b.unsendableHeaders
            && a.headers.map { [$0.name, $0.value] } == b.headers.map { [$0.name, $0.value] }
    }

    /// Why this request cannot be re-sent as it was; nil when it can.
    public var replayRefusal: String? {
        if let bodyMissing { return "its body was not captured whole: \(bodyMissing)" }
        if !unsendableHeaders.isEmpty {
            return "header fields that were not UTF-8 were logged with U+FFFD in place of their bytes (\(unsendableHeaders.joined(separator: ", ")))"
        }
        if !redactions.isEmpty { return "it holds redacted values (\(redactions.joined(separator: ", ")))" }
        return nil
    }

    public enum RecordError: Error, Equatable, CustomStringConvertible {
        case notHTTP(id: String, kind: String)
        case noRequest(id: String)
        public var description: String {
            switch self {
            case .notHTTP(let id, let kind): return "\(id) is a \(kind) record, not an http exchange"
            case .noRequest(let id): return "\(id) has no request"
            }
        }
    }

    static let redacted = "[redacted]"

    /// Fields a sender sets itself or that belong to one connection.
    static let droppedFields: Set<String> = [
        "host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
        "te", "trailer", "upgrade", "proxy-authorization", "expect",
    ]

    public init(id: String, method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]?,
                bodyMissing: String? = nil, redactions: [String] = [], notes: [String] = []) {
        self.id = id; self.method = method; self.url = url; self.headers = headers; self.body = body
        self.bodyMissing = bodyMissing; self.redactions = redactions; self.notes = notes
    }

    /// Whether the body is whole is read from the record: its bytes against `bodySize`, or a
    /// JSON value (a cut one fails to parse and is logged as `bodyError`). Only a text or
    /// base64 body logged decoded from a Content-Encoding cannot show it, since `bodySize`
    /// counts the encoded bytes; for those alone the configured limit is the evidence left.
    /// - Parameter captureMaxBodyBytes: the configured `capture.maxBodyBytes`, when known.
    public init(record: JSON, captureMaxBodyBytes: Int? = nil) throws(RecordError) {
        let view = RecordView(json: record)
        id = record[member: "id"]?.stringValue ?? ""
        guard view.kind == "http" else { throw .notHTTP(id: id, kind: view.kind) }
        guard let request = view.request else { throw .noRequest(id: id) }
        method = request[member: "method"]?.stringValue ?? "GET"
        url = request[member: "url"]?.stringValue ?? ""
        redactions = []
        notes = []
        if let query = URLParts(url).query, query.contains(RecordedRequest.redacted) {
            redactions.append("url query")
        }

        var all: [(name: String, value: String)] = []
        if case .array(let pairs)? = request[member: "headers"] {
            for pair in pairs {
                guard case .array(let parts) = pair, parts.count >= 2,
                      let name = parts[0].stringValue, let value = parts[1].stringValue else { continue }
                all.append((name, value))
            }
        }
        func field(_ lower: String) -> String? { all.first { $0.name.lowercased() == lower }?.value }
        let contentEncoding = field("content-encoding").flatMap { $0.lowercased() == "identity" ? nil : $0 }
        let contentType = field("content-type")

        let bodySize = request[member: "bodySize"]?.intValue ?? 0
        var decoded = false
        (body, bodyMissing) = RecordedRequest.body(
            request, record: record, bodySize: bodySize, contentType: contentType,
            encoded: contentEncoding != nil, captureMaxBodyBytes: captureMaxBodyBytes, redactions: &redactions,
            notes: &notes, truncated: &bodyTruncated)
        if let body, !body.isEmpty, let contentEncoding {
            decoded = true
            notes.append("the body was logged decoded: it is sent without its Content-Encoding (\(contentEncoding))")
        } else if let body, body.count != bodySize {
            // Only a JSON body gets here (a string body of another size was refused above).
            notes.append("the body is the logged JSON, compact: \(body.count) bytes where the original had \(bodySize)")
        }

        headers = all.filter { header in
            let lower = header.name.lowercased()
            if RecordedRequest.droppedFields.contains(lower) { return false }
            if decoded && lower == "content-encoding" { return false }
            return true
        }
        let lossy = headers.filter { $0.name.contains("\u{FFFD}") || $0.value.contains("\u{FFFD}") }
        unsendableHeaders = lossy.map { "header \($0.name)" }
        if !lossy.isEmpty { headers = headers.filter { !$0.name.contains("\u{FFFD}") && !$0.value.contains("\u{FFFD}") } }
        for header in headers where header.value == RecordedRequest.redacted {
            redactions.append("header \(header.name)")
        }
    }

    /// The body bytes, or nil and why not.
    private static func body(_ request: JSON, record: JSON, bodySize: Int, contentType: String?, encoded: Bool,
                             captureMaxBodyBytes: Int?, redactions: inout [String],
                             notes: inout [String], truncated: inout Bool) -> ([UInt8]?, String?) {
        guard let value = request[member: "body"] else {
            if bodySize == 0 { return ([], nil) }
            if let error = request[member: "bodyError"] {
                truncated = error[member: "reason"]?.stringValue == "inputDataTruncated"
                let message = error[member: "message"]?.stringValue ?? error[member: "error"]?.stringValue ?? "unreadable"
                return (nil, "the record has no body value (\(message))")
            }
            return (nil, "the record holds none of its \(bodySize) bytes (capture.requestBodies off, or a rule with serializer none)")
        }
        let fields = ContentTypeFields(contentType)
        let kind = RuleSet.defaultSerializer(contentType: contentType, body: [])
        // The record's `serializer` is the response's: under the default rule it follows the
        // response's Content-Type, and the request body went through the default serializer
        // for its own. Only a named rule's serializer applies to the request too: `none`
        // leaves no body (above), `data` logs `{"size":N}`.
        let rule = record[member: "rule"]?.stringValue
        if record[member: "serializer"]?.stringValue == "data" && rule != RuleSet.defaultRuleName {
            return (nil, "logged by size only (rule \(rule ?? "?") has serializer data)")
        }
        if kind == .data {
            // The data serializer's shape: `{"size":N}`, or `{"base64":"…","size":N}` with the
            // first `base64Bytes` bytes; whole only when those are all N.
            if let text = value[member: "base64"]?.stringValue, let size = value[member: "size"]?.intValue,
               let data = Data(base64Encoded: text) {
                guard data.count == size else {
                    return (nil, "the record holds the first \(data.count) of its \(size) bytes (serializer data, base64Bytes)")
                }
                if !encoded && size != bodySize { truncated = size < bodySize; return (nil, "the record holds \(size) of its \(bodySize) bytes") }
                if encoded, let doubt = decodedDoubt(bodySize, captureMaxBodyBytes, notes: &notes) { return (nil, doubt) }
                return (Array(data), nil)
            }
            return (nil, "logged by size only (serializer data)")
        }
        switch kind {
        case .json:
            redactions += redactedPointers(in: value, at: JSONPointer(tokens: [])).map { "body \($0)" }
            var bytes: [UInt8] = []
            JSONWriter.write(value, into: &bytes)
            return (bytes, nil)
        case .string:
            guard let text = value.stringValue else { return (nil, "its logged value is not a string") }
            let charset = fields.knownCharset ?? .isoLatin1
            guard let bytes = encode(text, charset) else {
                return (nil, "its text cannot be encoded back to \(charset.name)")
            }
            if text.contains(redacted) { redactions.append("body (text)") }
            // Without a Content-Encoding the wire size is the text's size: a shorter text was cut.
            if !encoded && bytes.count != bodySize && !text.contains(redacted) {
                truncated = bytes.count < bodySize
                return (nil, "the record holds \(bytes.count) of its \(bodySize) bytes")
            }
            if encoded, let doubt = decodedDoubt(bodySize, captureMaxBodyBytes, notes: &notes) { return (nil, doubt) }
            return (bytes, nil)
        default:
            return (nil, "logged through the \(kind.rawValue) serializer, whose value does not give the bytes back")
        }
    }

    /// For a body logged decoded, whose size the record cannot check: a reason to refuse when
    /// the configured capture limit says it was cut, else a note that the record cannot tell.
    private static func decodedDoubt(_ bodySize: Int, _ limit: Int?, notes: inout [String]) -> String? {
        if let limit {
            if bodySize > limit { return "\(bodySize) encoded bytes on the wire, past capture.maxBodyBytes (\(limit))" }
            return nil
        }
        notes.append("the body was logged decoded: the record cannot show it whole if its \(bodySize) encoded bytes were past capture.maxBodyBytes")
        return nil
    }

    static func encode(_ text: String, _ charset: Charset) -> [UInt8]? {
        switch charset.name {
        case Charset.utf8.name:
            return Array(text.utf8)
        case Charset.isoLatin1.name, Charset.usASCII.name:
            var bytes: [UInt8] = []
            for scalar in text.unicodeScalars {
                guard scalar.value <= (charset.name == Charset.usASCII.name ? 0x7F : 0xFF) else { return nil }
                bytes.append(UInt8(scalar.value))
            }
            return bytes
        default:
            return text.data(using: charset.encoding).map { Array($0) }
        }
    }

    /// Pointers to every `"[redacted]"` string in `value`.
    static func redactedPointers(in value: JSON, at pointer: JSONPointer) -> [String] {
        switch value {
        case .string(let text):
            return text == redacted ? [pointer.tokens.isEmpty ? "(root)" : pointer.description] : []
        case .array(let items):
            return items.enumerated().flatMap { redactedPointers(in: $1, at: JSONPointer(tokens: pointer.tokens + [String($0)])) }
        case .object(let members):
            return members.flatMap { redactedPointers(in: $0.value, at: JSONPointer(tokens: pointer.tokens + [$0.key])) }
        default:
            return []
        }
    }
}
