import ResponseSerialization

/// `tapwire show ID`: one record laid out for a person. For an `http` exchange: a summary line,
/// the request head and its decoded body, the response head and the logged value (JSON indented,
/// member order and number text as recorded), any failure, and the timeline as a waterfall.
/// Control characters from the record are shown as `?` (outside JSON, which escapes them) so a
/// logged value cannot drive the terminal.
public enum ExchangeDetail {
    public static func render(_ record: JSON, waterfallWidth: Int = TimelineWaterfall.defaultWidth) -> String {
        let view = RecordView(json: record)
        let id = record[member: "id"]?.stringValue ?? "?"
        guard view.kind == "http" || (view.kind == "websocket" && view.request != nil) else {
            return "\(view.kind) \(id)\n\n" + JSONPrettyText.render(record) + "\n"
        }
        var out: [String] = []
        var summary = "\(view.kind) \(id)  \(view.method ?? "?") \(clean(view.url ?? "?"))"
        if let status = view.status {
            summary += "  → \(status) \(clean(view.response?[member: "reason"]?.stringValue ?? ""))"
        } else if let error = view.transportError {
            summary += "  → \(clean(error.code))"
        }
        out.append(summary)
        var facts: [String] = []
        if let client = record[member: "client"]?.stringValue { facts.append("client \(clean(client))") }
        if let upstream = record[path: "metrics", "upstream"]?.stringValue {
            let reused = record[path: "metrics", "connectionReused"] == .bool(true)
            facts.append("upstream \(clean(upstream)) (\(reused ? "reused connection" : "new connection"))")
        }
        if let via = record[path: "metrics", "via"]?.stringValue { facts.append("via \(clean(via))") }
        if let rule = record[member: "rule"]?.stringValue { facts.append("rule \(clean(rule))") }
        if let serializer = view.serializer { facts.append("serializer \(clean(serializer))") }
        if let replayOf = record[member: "replayOf"]?.stringValue { facts.append("replay of \(clean(replayOf))") }
        if !facts.isEmpty { out.append(facts.joined(separator: "  ")) }

        if let request = view.request {
            out.append("")
            out.append("── Request")
            out.append("\(clean(view.method ?? "?")) \(clean(view.url ?? "?")) \(clean(request[member: "httpVersion"]?.stringValue ?? ""))")
            out += headerLines(request)
            let size = request[member: "bodySize"]?.intValue ?? 0
            // Said as for the response body; the record has no flag for the request, so the
            // rule `replay` and `curl` use decides.
            let truncated = (try? RecordedRequest(record: record))?.bodyTruncated == true ? ", truncated" : ""
            if let body = request[member: "body"] {
                out.append("")
                out.append("body (\(size) bytes on the wire\(truncated), as logged):")
                out.append(valueText(body))
            } else if let error = request[member: "bodyError"] {
                out.append("")
                out.append("body (\(size) bytes\(truncated)): not readable: \(failureText(error))")
            } else if size > 0 {
                out.append("")
                out.append("body (\(size) bytes): not in the record")
            }
        }

        out.append("")
        out.append("── Response")
        if let response = view.response {
            out.append("\(clean(response[member: "httpVersion"]?.stringValue ?? "")) \(view.status.map(String.init) ?? "?") \(clean(response[member: "reason"]?.stringValue ?? ""))")
            out += headerLines(response)
            out.append("")
            out.append(bodyLine(record, response: response))
            if let failure = record[path: "result", "failure"], failure != .null {
                out.append("failure: \(failureText(failure))")
            } else if let value = view.successValue, view.serializer != "none" {
                out.append(valueText(value))
            }
        } else {
            out.append("(no response)")
        }
        if let error = view.transportError {
            out.append("")
            out.append("── Error")
            out.append("\(clean(error.code)): \(clean(error.message))")
        }
        if view.kind == "http" {
            out.append("")
            out.append("── Timeline")
            out += TimelineWaterfall(record: record).lines(width: waterfallWidth)
        }
        return out.joined(separator: "\n") + "\n"
    }

    static func headerLines(_ message: JSON) -> [String] {
        guard case .array(let pairs)? = message[member: "headers"] else { return [] }
        return pairs.compactMap { pair in
            guard case .array(let parts) = pair, parts.count >= 2,
                  let name = parts[0].stringValue, let value = parts[1].stringValue else { return nil }
            return "\(clean(name)): \(clean(value))"
        }
    }

    static func bodyLine(_ record: JSON, response: JSON) -> String {
        var parts: [String] = []
        if let wire = response[member: "bodySize"]?.intValue { parts.append("\(wire) bytes on the wire") }
        if let size = record[path: "data", "size"]?.intValue { parts.append("\(size) decoded") }
        if let encoding = record[path: "data", "contentEncoding"]?.stringValue { parts.append(clean(encoding)) }
        if record[path: "data", "truncated"] == .bool(true) { parts.append("truncated") }
        if let mime = response[member: "mimeType"]?.stringValue { parts.append(clean(mime)) }
        return "body (" + parts.joined(separator: ", ") + "):"
    }

    static func failureText(_ failure: JSON) -> String {
        if let text = failure.stringValue { return clean(text) }
        let error = failure[member: "error"]?.stringValue ?? "failure"
        var text = error
        if let reason = failure[member: "reason"]?.stringValue { text += " (\(reason))" }
        if let message = failure[member: "message"]?.stringValue { text += ": " + message }
        return clean(text)
    }

    /// A string value as its text (the string serializer's output reads better unquoted);
    /// anything else as indented JSON.
    static func valueText(_ value: JSON) -> String {
        if let text = value.stringValue { return clean(text, keepNewlines: true) }
        return JSONPrettyText.render(value)
    }

    /// Control characters as `?`; newlines and tabs kept when asked.
    static func clean(_ text: String, keepNewlines: Bool = false) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let v = scalar.value
            if keepNewlines && (v == 10 || v == 9) { scalars.append(scalar); continue }
            scalars.append(v < 0x20 || v == 0x7F || (v >= 0x80 && v < 0xA0) ? "?" : scalar)
        }
        return String(scalars)
    }
}

/// The phases of an exchange as bars on one time axis, each starting where the one before
/// ended, scaled so the whole exchange spans `width` columns:
///
///     dns             -
///     connect     0.110 ms  ██
///     send        0.012 ms    ▏
///     wait        1.100 ms    ████████████████████
///     receive     0.840 ms                        ███████████████
///     serialize   0.030 ms                                       ▏
///
/// A phase that did not happen (no DNS lookup for an IP, no TLS over plain HTTP, a reused
/// connection) shows `-`; a phase shorter than one column a thin mark.
public struct TimelineWaterfall {
    public static let defaultWidth = 50
    public static let phases = ["dns", "connect", "tls", "send", "wait", "receive", "serialization"]

    /// Seconds per phase, nil when the record says null (or lacks it).
    public var durations: [(name: String, seconds: Double?)]
    public var requestStart: String?
    public var total: Double?

    public init(record: JSON) {
        durations = TimelineWaterfall.phases.map { name in
            let value = name == "serialization" ? record[path: "timeline", "serializationDuration"]
                                                : record[path: "metrics", name]
            return (name, value?.doubleValue)
        }
        requestStart = record[path: "timeline", "requestStartTime"]?.stringValue
        total = record[path: "timeline", "totalDuration"]?.doubleValue
    }

    public func lines(width: Int) -> [String] {
        let sum = durations.reduce(0) { $0 + max(0, $1.seconds ?? 0) }
        let scale = sum > 0 ? Double(width) / sum : 0
        var out: [String] = []
        if let requestStart { out.append("started \(ExchangeDetail.clean(requestStart))") }
        var offset = 0.0
        for (name, seconds) in durations {
            let label = name.padding(toLength: 14)
            guard let seconds else { out.append(label + "-"); continue }
            let start = Int((offset * scale).rounded())
            let end = Int(((offset + max(0, seconds)) * scale).rounded())
            let bar = end > start ? String(repeating: "█", count: end - start) : "▏"
            out.append(label + TimelineWaterfall.milliseconds(seconds).leftPadding(toLength: 12) + "  "
                       + String(repeating: " ", count: start) + bar)
            offset += max(0, seconds)
        }
        if let total { out.append("total".padding(toLength: 14) + TimelineWaterfall.milliseconds(total).leftPadding(toLength: 12)) }
        return out
    }

    static func milliseconds(_ seconds: Double) -> String {
        let micros = Int((seconds * 1_000_000).rounded())
        let fraction = String(micros % 1000)
        return "\(micros / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) ms"
    }
}

private extension String {
    func padding(toLength length: Int) -> String {
        count >= length ? self + " " : self + String(repeating: " ", count: length - count)
    }
    func leftPadding(toLength length: Int) -> String {
        count >= length ? self : String(repeating: " ", count: length - count) + self
    }
}
