import ExchangeLog
import Foundation
import HTTP1
import ResponseSerialization

/// The response of an `http` record, rebuilt for serving again (offline replay): its status,
/// the header fields worth sending and the body, when the record holds it whole.
///
/// The body is the logged value written back: a JSON value compact (its members in the
/// origin's order and numbers as sent, so it reads back as the same document), a text in its
/// charset, a `data` body from its base64. It is whole only when the record says so: not
/// truncated, a `string` or `data` body of the decoded size, a serializer whose value gives
/// the bytes back. A body logged decoded goes without its Content-Encoding.
public enum RecordedResponse {
    public enum Refusal: Error, Equatable, CustomStringConvertible {
        case noResponse
        case bodyNotWhole(String)
        public var description: String {
            switch self {
            case .noResponse: return "the record has no response"
            case .bodyNotWhole(let why): return "its body was not captured whole: \(why)"
            }
        }
    }

    /// Fields a server sets for each connection or that the replay sets itself (it frames the
    /// body and sends it decoded).
    static let droppedFields: Set<String> = ["content-length", "transfer-encoding", "content-encoding"]

    public static func answer(record: JSON, id: String) throws(Refusal) -> ReplayedResponse {
        let view = RecordView(json: record)
        guard let response = view.response, let status = response[member: "status"]?.intValue else { throw .noResponse }
        let reason = response[member: "reason"]?.stringValue ?? ""
        var pairs: [(String, String)] = []
        if case .array(let items)? = response[member: "headers"] {
            for item in items {
                guard case .array(let parts) = item, parts.count >= 2,
                      let name = parts[0].stringValue, let value = parts[1].stringValue else { continue }
                pairs.append((name, value))
            }
        }
        let body = try self.body(record: record, response: response)
        // A status a final answer cannot have would leave the client waiting, or break it.
        guard (200...599).contains(status) else { throw .bodyNotWhole("its status \(status) is not a final answer's") }
        let kept = HTTPHeaders(pairs).removingHopByHop(keepUpgrade: false)
        // A HEAD answer's Content-Length is the size of the body it describes, not sent: kept
        // apart, for answering a HEAD only, and only if it counted the bytes the replay sends.
        let isHead = view.method == "HEAD"
        var headLength: String?
        if isHead, kept.first(name: "content-encoding") == nil, let length = kept.first(name: "content-length"),
           !length.isEmpty, length.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            headLength = length
        }
        var headers: [(name: String, value: String)] = []
        for field in kept {
            if droppedFields.contains(field.name.lowercased()) { continue }
            // A redacted value is not the origin's; a field logged with U+FFFD lost its bytes;
            // and nothing read from a file may break the head it is written into: names are
            // tokens (RFC 9110 §5.1), so "Content-Length " or "Transfer-Encoding: x" cannot
            // slip past the framing fields dropped above.
            if field.value == RecordedRequest.redacted { continue }
            guard HTTPHeaders.isFieldName(field.name) else { continue }
            if field.value.contains("\u{FFFD}") || field.value.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
                continue
            }
            headers.append((field.name, field.value))
        }
        let safeReason = reason.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) ? "" : reason
        return ReplayedResponse(recordID: id, status: status, reason: safeReason, headers: headers, body: body,
                                fromHEAD: isHead, headLength: headLength)
    }

    private static func body(record: JSON, response: JSON) throws(Refusal) -> [UInt8] {
        let bodySize = response[member: "bodySize"]?.intValue ?? 0
        if bodySize == 0 { return [] }
        let data = record[member: "data"]
        if case .bool(true)? = data?[member: "truncated"] { throw .bodyNotWhole("the record says truncated") }
        let decodedSize = data?[member: "size"]?.intValue
        guard let value = record[path: "result", "success"] else {
            throw .bodyNotWhole("the record has no value (\(RecordView(json: record).resultFailure?.reason ?? "a failure"))")
        }
        switch record[member: "serializer"]?.stringValue {
        case "json":
            var bytes: [UInt8] = []
            JSONWriter.write(value, into: &bytes)
            return bytes
        case "string":
            guard let text = value.stringValue else { throw .bodyNotWhole("its value is not a string") }
            let contentType = headerValue(response, "content-type")
            let charset = ContentTypeFields(contentType).knownCharset
                ?? response[member: "charset"]?.stringValue.flatMap(Charset.init(ianaName:)) ?? .isoLatin1
            guard let bytes = RecordedRequest.encode(text, charset) else {
                throw .bodyNotWhole("its text cannot be encoded back to \(charset.name)")
            }
            if let decodedSize, bytes.count != decodedSize {
                throw .bodyNotWhole("the record holds \(bytes.count) of its \(decodedSize) bytes")
            }
            return bytes
        case "data":
            guard let text = value[member: "base64"]?.stringValue, let size = value[member: "size"]?.intValue,
                  let bytes = Data(base64Encoded: text), bytes.count == size else {
                throw .bodyNotWhole("logged by size only, or only its first bytes (serializer data)")
            }
            return Array(bytes)
        case let other:
            throw .bodyNotWhole("logged through the \(other ?? "unknown") serializer, whose value does not give the bytes back")
        }
    }

    private static func headerValue(_ response: JSON, _ lower: String) -> String? {
        guard case .array(let items)? = response[member: "headers"] else { return nil }
        for item in items {
            if case .array(let parts) = item, parts.count >= 2, parts[0].stringValue?.lowercased() == lower { return parts[1].stringValue }
        }
        return nil
    }
}
