import ExchangeLog
import Foundation
import ResponseSerialization

/// Writes records as one HAR 1.2 document, entry by entry: each record becomes its entry's bytes
/// and goes to `output` once 64 KiB are pending, so memory does not grow with the number of
/// records. Entries keep the log's order (the order exchanges finished), not `startedDateTime` order,
/// since sorting would mean holding them all.
///
/// Mapping (record → HAR):
/// - `startedDateTime` = `timeline.requestStartTime`; `time` = sum of the non-negative timings
///   (`ssl` excluded: it is part of `connect`).
/// - `timings` in milliseconds from `metrics` seconds: `blocked` -1; `dns` / `ssl` -1 when null;
///   `connect` = connect + tls (HAR counts TLS inside connect), -1 when both are null;
///   `send` / `wait` / `receive` 0 when null.
/// - `response.content.text` is the logged value: compact JSON for JSON-like serializers, the
///   string for `string`, base64 (`encoding: "base64"`) for `data`; absent for `none` and failures.
///   `content.size` is the decoded size (`data.size`), `response.bodySize` the size on the wire.
/// - No response (transport failure): `status` 0, `statusText` "", `httpVersion` "".
/// - Custom fields: `_id`, `_rule`, `_serializer`, `_error` (transport failure message),
///   `_failure` (serialization/validation failure), `content._truncated`.
/// - Redacted header values stay `[redacted]`; redacted cookie headers give no cookies.
/// - Tunnel, loss and other non-exchange records are skipped.
public final class HARWriter {
    public static let defaultCreatorVersion = "0.1.0"

    private let output: ([UInt8]) throws -> Void
    private let creatorVersion: String
    private let flushThreshold: Int
    private var pending: [UInt8] = []
    private var started = false
    private var finished = false
    public private(set) var entryCount = 0
    /// The most bytes ever waiting for `output`: what "streams" means, measured.
    public private(set) var largestPendingByteCount = 0

    /// - Parameter output: receives the document in pieces, in order; errors end the export.
    public init(output: @escaping ([UInt8]) throws -> Void, creatorVersion: String = HARWriter.defaultCreatorVersion,
                flushThreshold: Int = 64 * 1024) {
        self.output = output
        self.creatorVersion = creatorVersion
        self.flushThreshold = flushThreshold
    }

    public convenience init(output: FileHandle, creatorVersion: String = HARWriter.defaultCreatorVersion) {
        self.init(output: { bytes in try output.write(contentsOf: bytes) }, creatorVersion: creatorVersion)
    }

    /// Adds one raw log line; returns false when it was skipped (not an exchange, or not JSON).
    @discardableResult
    public func write(line: [UInt8]) throws -> Bool {
        guard let record = try? JSONParser.parse(line, allowFragments: false) else { return false }
        return try write(record)
    }

    /// Adds one parsed record; returns false when it was skipped (not an exchange).
    @discardableResult
    public func write(_ record: JSON) throws -> Bool {
        guard case .object = record, let entry = HARWriter.entry(for: record) else { return false }
        beginIfNeeded()
        pending.append(contentsOf: entryCount == 0 ? [10] : [UInt8(ascii: ","), 10])
        JSONWriter.write(entry, into: &pending)
        entryCount += 1
        largestPendingByteCount = max(largestPendingByteCount, pending.count)
        if pending.count >= flushThreshold { try flush() }
        return true
    }

    /// Closes the document (an empty `entries` array when nothing was written) and hands over the rest.
    public func finish() throws {
        guard !finished else { return }
        finished = true
        beginIfNeeded()
        pending.append(contentsOf: Array((entryCount == 0 ? "]}}\n" : "\n]}}\n").utf8))
        try flush()
    }

    private func beginIfNeeded() {
        guard !started else { return }
        started = true
        var head = Array(#"{"log":{"version":"1.2","creator":{"name":"tapwire","version":"#.utf8)
        JSONWriter.appendQuoted(creatorVersion, into: &head)
        head.append(contentsOf: Array(#"},"entries":["#.utf8))
        pending.append(contentsOf: head)
    }

    private func flush() throws {
        guard !pending.isEmpty else { return }
        let chunk = pending
        pending.removeAll(keepingCapacity: true)
        try output(chunk)
    }

    // MARK: One entry

    static func entry(for record: JSON) -> JSON? {
        let view = RecordView(json: record)
        guard view.kind == "http" || (view.kind == "websocket" && view.request != nil) else { return nil }
        guard let request = view.request else { return nil }

        let timings = Timings(metrics: record[member: "metrics"])
        var members: [JSON.Member] = [
            .init("startedDateTime", .string(startedDateTime(view))),
            .init("time", .number(milliseconds(micros: timings.totalMicros))),
            .init("request", requestObject(request, view: view)),
            .init("response", responseObject(view)),
            .init("cache", .object([])),
            .init("timings", timings.json),
        ]
        // Through a parent proxy the origin's address is the parent's to know: none is given.
        if let upstream = record[path: "metrics", "upstream"]?.stringValue, !upstream.isEmpty,
           record[path: "metrics", "via"]?.stringValue == nil {
            members.append(.init("serverIPAddress", .string(URLParts.hostOfAuthority(upstream))))
        }
        if let id = record[member: "id"]?.stringValue { members.append(.init("_id", .string(id))) }
        if let rule = record[member: "rule"]?.stringValue { members.append(.init("_rule", .string(rule))) }
        if let serializer = view.serializer { members.append(.init("_serializer", .string(serializer))) }
        if let error = view.transportError {
            members.append(.init("_error", .string(error.code == error.message ? error.code
                                                   : error.code + ": " + error.message)))
        } else if let failure = view.resultFailure {
            var text = failure.error
            if let reason = failure.reason { text += "(" + reason + ")" }
            if let message = failure.message { text += ": " + message }
            members.append(.init("_failure", .string(text)))
        }
        if view.kind == "websocket" {
            if let up = record[member: "bytesFromClient"], case .number = up { members.append(.init("_bytesFromClient", up)) }
            if let down = record[member: "bytesFromUpstream"], case .number = down {
                members.append(.init("_bytesFromUpstream", down))
            }
        }
        return .object(members)
    }

    private static func startedDateTime(_ view: RecordView) -> String {
        if let stamp = view.json[path: "timeline", "requestStartTime"]?.stringValue, !stamp.isEmpty { return stamp }
        if let stamp = view.json[member: "startTime"]?.stringValue, !stamp.isEmpty { return stamp }
        // HAR requires a date; the epoch marks "unknown" without inventing a plausible time.
        return RFC3339.format(secondsSince1970: 0)
    }

    private static func requestObject(_ request: JSON, view: RecordView) -> JSON {
        let url = request[member: "url"]?.stringValue ?? ""
        let headers = headerPairs(request)
        var members: [JSON.Member] = [
            .init("method", .string(request[member: "method"]?.stringValue ?? "")),
            .init("url", .string(url)),
            .init("httpVersion", .string(request[member: "httpVersion"]?.stringValue ?? "")),
            .init("cookies", .array(requestCookies(headers))),
            .init("headers", .array(headers.map(nameValue))),
            .init("queryString", .array(queryPairs(URLParts(url).query).map(nameValue))),
        ]
        let bodySize = request[member: "bodySize"]?.intValue
        if let postData = postData(request, headers: headers, bodySize: bodySize) {
            members.append(.init("postData", postData))
        }
        members.append(.init("headersSize", .number("-1")))
        members.append(.init("bodySize", .number(String(bodySize ?? -1))))
        return .object(members)
    }

    /// The captured request body, if the record has one (`request.body` as text, or
    /// `request.bodyBase64`); a body that was sent but not captured gets empty text and a comment.
    private static func postData(_ request: JSON, headers: [(String, String)], bodySize: Int?) -> JSON? {
        let mimeType = headerValue("content-type", headers) ?? ""
        var members: [JSON.Member] = [.init("mimeType", .string(mimeType))]
        // The data serializer's shape, {"size":N} or {"base64":…,"size":N}; only for a body
        // that is not JSON, whose own members could look the same (a JSON body with a "text"
        // or "base64" member was once taken for its text).
        let dataShape: [JSON.Member]? = {
            guard !mimeType.lowercased().contains("json"), case .object(let m)? = request[member: "body"],
                  m.contains(where: { $0.key == "size" }), m.allSatisfy({ $0.key == "size" || $0.key == "base64" }) else { return nil }
            return m
        }()
        if let text = request[member: "body"]?.stringValue {
            members.append(.init("text", .string(text)))
        } else if let shape = dataShape {
            if case .string(let base64)? = shape.first(where: { $0.key == "base64" })?.value {
                members.append(.init("text", .string(base64)))
                members.append(.init("_encoding", .string("base64")))
                members.append(.init("comment", .string("the first bytes only (serializer base64Bytes)")))
            } else {
                members.append(.init("text", .string("")))
                members.append(.init("comment", .string("request body not captured (binary; logged by size)")))
            }
        } else if let base64 = request[member: "bodyBase64"]?.stringValue {
            members.append(.init("text", .string(base64)))
            members.append(.init("_encoding", .string("base64")))
        } else if let value = request[member: "body"], value != .null {
            // A decoded JSON (or form, NDJSON…) body: HAR wants text, so the compact JSON.
            var bytes: [UInt8] = []
            JSONWriter.write(value, into: &bytes)
            members.append(.init("text", .string(String(decoding: bytes, as: UTF8.self))))
        } else if let bodySize, bodySize > 0 {
            members.append(.init("text", .string("")))
            members.append(.init("comment", .string("request body not captured")))
        } else {
            return nil
        }
        return .object(members)
    }

    private static func responseObject(_ view: RecordView) -> JSON {
        guard let response = view.response else {
            return .object([
                .init("status", .number("0")),
                .init("statusText", .string("")),
                .init("httpVersion", .string("")),
                .init("cookies", .array([])),
                .init("headers", .array([])),
                .init("content", .object([.init("size", .number("0")), .init("mimeType", .string("x-unknown"))])),
                .init("redirectURL", .string("")),
                .init("headersSize", .number("-1")),
                .init("bodySize", .number("-1")),
            ])
        }
        let headers = headerPairs(response)
        let bodySize = response[member: "bodySize"]?.intValue
        return .object([
            .init("status", .number(String(response[member: "status"]?.intValue ?? 0))),
            .init("statusText", .string(response[member: "reason"]?.stringValue ?? "")),
            .init("httpVersion", .string(response[member: "httpVersion"]?.stringValue ?? "")),
            .init("cookies", .array(responseCookies(headers))),
            .init("headers", .array(headers.map(nameValue))),
            .init("content", content(view, response: response, headers: headers, bodySize: bodySize)),
            .init("redirectURL", .string(headerValue("location", headers) ?? "")),
            .init("headersSize", .number("-1")),
            .init("bodySize", .number(String(bodySize ?? -1))),
        ])
    }

    private static func content(_ view: RecordView, response: JSON, headers: [(String, String)], bodySize: Int?) -> JSON {
        let size = view.json[path: "data", "size"]?.intValue ?? bodySize ?? 0
        var mimeType = headerValue("content-type", headers) ?? ""
        if mimeType.isEmpty, let logged = response[member: "mimeType"]?.stringValue {
            mimeType = logged
            if let charset = response[member: "charset"]?.stringValue { mimeType += "; charset=" + charset }
        }
        var members: [JSON.Member] = [.init("size", .number(String(max(0, size))))]
        if let bodySize, bodySize >= 0, size > bodySize {
            members.append(.init("compression", .number(String(size - bodySize))))
        }
        members.append(.init("mimeType", .string(mimeType)))
        if view.transportError == nil, view.resultFailure == nil, let value = view.successValue {
            switch (view.serializer ?? "", value) {
            case ("none", _):
                break
            case ("data", .string(let base64)):
                members.append(.init("text", .string(base64)))
                members.append(.init("encoding", .string("base64")))
            case ("data", .object):
                if let base64 = value[member: "base64"]?.stringValue {
                    members.append(.init("text", .string(base64)))
                    members.append(.init("encoding", .string("base64")))
                }
            case ("string", .string(let text)):
                members.append(.init("text", .string(text)))
            case (_, .null) where size == 0:
                break   // the empty value of an empty body
            default:
                members.append(.init("text", .string(value.compactText)))
            }
        }
        if view.json[path: "data", "truncated"] == .bool(true) {
            members.append(.init("_truncated", .bool(true)))
        }
        return .object(members)
    }

    // MARK: Pieces

    private static func headerPairs(_ message: JSON) -> [(String, String)] {
        guard case .array(let pairs)? = message[member: "headers"] else { return [] }
        return pairs.compactMap { pair in
            guard case .array(let parts) = pair, parts.count >= 2,
                  let name = parts[0].stringValue, let value = parts[1].stringValue else { return nil }
            return (name, value)
        }
    }

    private static func headerValue(_ lowercasedName: String, _ headers: [(String, String)]) -> String? {
        headers.first { $0.0.lowercased() == lowercasedName }?.1
    }

    private static func nameValue(_ pair: (String, String)) -> JSON {
        .object([.init("name", .string(pair.0)), .init("value", .string(pair.1))])
    }

    static let redacted = "[redacted]"

    /// `Cookie: a=1; b=2` → two cookies.
    private static func requestCookies(_ headers: [(String, String)]) -> [JSON] {
        headers.filter { $0.0.lowercased() == "cookie" && $0.1 != redacted }.flatMap { header in
            header.1.split(separator: ";").compactMap { part -> JSON? in
                let pair = part.trimmingCharacters(in: .whitespaces)
                guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else { return nil }
                return nameValue((String(pair[..<equals]), String(pair[pair.index(after: equals)...])))
            }
        }
    }

    /// Each `Set-Cookie` gives one cookie: its name=value and the attributes HAR names.
    private static func responseCookies(_ headers: [(String, String)]) -> [JSON] {
        headers.filter { $0.0.lowercased() == "set-cookie" && $0.1 != redacted }.compactMap { header in
            let parts = header.1.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = parts.first, let equals = first.firstIndex(of: "="), equals != first.startIndex else {
                return nil
            }
            var members: [JSON.Member] = [
                .init("name", .string(String(first[..<equals]))),
                .init("value", .string(String(first[first.index(after: equals)...]))),
            ]
            for attribute in parts.dropFirst() {
                // `a=b; Path=/; ` leaves an empty attribute, which split() turns into no parts.
                let split = attribute.split(separator: "=", maxSplits: 1).map(String.init)
                guard let name = split.first else { continue }
                let key = name.lowercased()
                let value = split.count > 1 ? split[1] : ""
                switch key {
                case "path": members.append(.init("path", .string(value)))
                case "domain": members.append(.init("domain", .string(value)))
                case "httponly": members.append(.init("httpOnly", .bool(true)))
                case "secure": members.append(.init("secure", .bool(true)))
                default: break
                }
            }
            return .object(members)
        }
    }

    /// `a=1&b=x%20y&c` → (a, 1), (b, x y), (c, ""); `+` reads as a space, as in forms.
    static func queryPairs(_ query: String?) -> [(String, String)] {
        guard let query, !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { part in
            let split = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decodeQueryComponent(split[0])
            let value = split.count > 1 ? decodeQueryComponent(split[1]) : ""
            return (name, value)
        }
    }

    private static func decodeQueryComponent(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    /// Milliseconds with at most three decimals (microsecond precision, as in the record).
    static func milliseconds(micros: Int64) -> String {
        if micros < 0 { return "-1" }
        let whole = micros / 1000
        let fraction = micros % 1000
        if fraction == 0 { return String(whole) }
        var digits = String(fraction)
        while digits.count < 3 { digits = "0" + digits }
        while digits.hasSuffix("0") { digits.removeLast() }
        return String(whole) + "." + digits
    }

    /// HAR timings in whole microseconds (-1: not applicable), so `time` is their exact sum.
    struct Timings {
        var blocked: Int64 = -1
        var dns: Int64 = -1
        var connect: Int64 = -1
        var ssl: Int64 = -1
        var send: Int64 = 0
        var wait: Int64 = 0
        var receive: Int64 = 0

        init(metrics: JSON?) {
            func micros(_ key: String) -> Int64? {
                guard let seconds = metrics?[member: key]?.doubleValue, seconds.isFinite, seconds >= 0,
                      seconds < 1e9 else { return nil }
                return Int64((seconds * 1_000_000).rounded())
            }
            dns = micros("dns") ?? -1
            let tls = micros("tls")
            ssl = tls ?? -1
            if let tcp = micros("connect") {
                connect = tcp + (tls ?? 0)
            } else if let tls {
                connect = tls
            }
            send = micros("send") ?? 0
            wait = micros("wait") ?? 0
            receive = micros("receive") ?? 0
        }

        var totalMicros: Int64 {
            [blocked, dns, connect, send, wait, receive].filter { $0 >= 0 }.reduce(0, +)
        }

        var json: JSON {
            .object([
                .init("blocked", .number(HARWriter.milliseconds(micros: blocked))),
                .init("dns", .number(HARWriter.milliseconds(micros: dns))),
                .init("connect", .number(HARWriter.milliseconds(micros: connect))),
                .init("ssl", .number(HARWriter.milliseconds(micros: ssl))),
                .init("send", .number(HARWriter.milliseconds(micros: send))),
                .init("wait", .number(HARWriter.milliseconds(micros: wait))),
                .init("receive", .number(HARWriter.milliseconds(micros: receive))),
            ])
        }
    }
}
