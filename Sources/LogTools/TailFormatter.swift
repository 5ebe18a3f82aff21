import Foundation
import ResponseSerialization

/// One readable line per record for `tapwire tail`:
///
///     10:11:12.123 GET http://api.local:8080/v1/items?x=1 200 1.0 KB 2.1 ms json {"items":[1,2,3]}
///     10:11:13.000 GET http://down.local/ upstreamConnectFailed - 3.0 ms - connection refused
///     10:11:14.500 CONNECT api.github.com:443 200 up 1.2 KB down 34.5 KB 1523.0 ms closed by client
///     10:11:15.000 LOST 5 records (disk full)
///
/// The time is the record's start as the time-of-day part of its RFC 3339 stamp, in UTC (the log's
/// own clock, so lines compare directly with the file and with other machines). Size is the
/// decoded body size (`data.size`, else the response `bodySize`), duration `timeline.requestDuration`.
/// The preview is the compact JSON of the logged value, cut to `previewWidth` characters, or the
/// failure (`reason: message`). Control characters from the record are shown as `?` so a logged
/// value cannot drive the terminal.
///
/// With `color`, the status is green (2xx), cyan (3xx), yellow (4xx) or red (5xx, transport errors),
/// and failures and loss lines are red.
public struct TailFormatter: Sendable {
    public var color: Bool
    public var previewWidth: Int

    public init(color: Bool, previewWidth: Int = 80) {
        self.color = color
        self.previewWidth = previewWidth
    }

    /// Colour when standard output (or `fileDescriptor`) is a terminal and `NO_COLOR` is unset or
    /// empty (no-color.org).
    public static func colorWanted(fileDescriptor: Int32 = 1,
                                   environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        colorWanted(isTerminal: isatty(fileDescriptor) != 0, environment: environment)
    }

    public static func colorWanted(isTerminal: Bool, environment: [String: String]) -> Bool {
        isTerminal && (environment["NO_COLOR"] ?? "").isEmpty
    }

    /// Formats one raw log line; a line that is not a JSON object gets an `(unreadable record)` line.
    public func format(line: [UInt8]) -> String {
        if let record = try? JSONParser.parse(line, allowFragments: false), case .object = record {
            return format(record)
        }
        let text = String(decoding: line.prefix(previewWidth * 4), as: UTF8.self)
        return paint("(unreadable record) ", .red) + clip(sanitize(text), previewWidth)
    }

    public func format(_ record: JSON) -> String {
        guard case .object = record else {
            return paint("(unreadable record) ", .red) + clip(sanitize(record.compactText), previewWidth)
        }
        let view = RecordView(json: record)
        switch view.kind {
        case "http": return formatExchange(view)
        case "tunnel": return formatTunnel(view)
        case "websocket": return view.request != nil ? formatExchange(view) : formatTunnel(view)
        case "loss": return formatLoss(view)
        case "wsMessage": return formatMessage(view)
        default:
            let time = TailFormatter.timeOfDay(record[member: "time"]?.stringValue
                                               ?? record[member: "startTime"]?.stringValue)
            return time + " ? " + clip(sanitize(record.compactText), previewWidth)
        }
    }

    // MARK: Line forms

    private func formatExchange(_ view: RecordView) -> String {
        var parts: [String] = []
        parts.append(TailFormatter.timeOfDay(view.json[path: "timeline", "requestStartTime"]?.stringValue
                                             ?? view.json[member: "startTime"]?.stringValue))
        if view.kind == "websocket" { parts.append("WEBSOCKET") }
        parts.append(sanitize(view.method ?? "-"))
        parts.append(sanitize(view.url ?? "-"))
        let transport = view.transportError
        if let status = view.status {
            parts.append(paint(String(status), TailFormatter.statusColor(status)))
        } else {
            parts.append(paint(sanitize(transport?.code ?? "-"), .red))
        }
        if view.kind == "websocket" {
            parts.append(byteCounts(view))
        } else {
            let size = view.response == nil ? nil
                : (view.json[path: "data", "size"]?.intValue ?? view.response?[member: "bodySize"]?.intValue)
            parts.append(size.map(TailFormatter.humanSize) ?? "-")
        }
        let duration = view.json[path: "timeline", "requestDuration"]?.doubleValue
            ?? view.json[path: "timeline", "totalDuration"]?.doubleValue
            ?? view.json[member: "duration"]?.doubleValue
        parts.append(duration.map(TailFormatter.milliseconds) ?? "-")
        parts.append(sanitize(view.serializer ?? "-"))
        if let transport {
            // With a response the code is not in the status column yet.
            let text = view.status == nil ? transport.message : transport.code + ": " + transport.message
            parts.append(paint(clip(sanitize(text), previewWidth), .red))
        } else if let failure = view.resultFailure {
            let reason = failure.reason ?? failure.error
            let text = failure.message.map { reason + ": " + $0 } ?? reason
            parts.append(paint(clip(sanitize(text), previewWidth), .red))
        } else if let value = view.successValue {
            parts.append(clip(sanitize(value.compactText), previewWidth))
        }
        return parts.joined(separator: " ")
    }

    private func formatTunnel(_ view: RecordView) -> String {
        var parts: [String] = []
        parts.append(TailFormatter.timeOfDay(view.json[member: "startTime"]?.stringValue))
        parts.append(view.kind == "websocket" ? "WEBSOCKET" : "CONNECT")
        parts.append(sanitize(view.json[member: "target"]?.stringValue ?? "-"))
        if let status = view.status {
            parts.append(paint(String(status), TailFormatter.statusColor(status)))
        } else {
            parts.append(paint("-", .red))
        }
        parts.append(byteCounts(view))
        parts.append(view.json[member: "duration"]?.doubleValue.map(TailFormatter.milliseconds) ?? "-")
        if let closedBy = view.json[member: "closedBy"]?.stringValue {
            parts.append("closed by " + sanitize(closedBy))
        }
        if let transport = view.transportError {
            parts.append(paint(clip(sanitize(transport.code + ": " + transport.message), previewWidth), .red))
        }
        return parts.joined(separator: " ")
    }

    /// `10:11:12.345 WS client text 23 B {"hello":"world"}`: the value (or the failure) clipped.
    private func formatMessage(_ view: RecordView) -> String {
        var parts = [TailFormatter.timeOfDay(view.json[member: "time"]?.stringValue), "WS"]
        parts.append(sanitize(view.json[member: "direction"]?.stringValue ?? "-"))
        parts.append(sanitize(view.json[member: "opcode"]?.stringValue ?? "-"))
        parts.append("\(view.json[member: "size"]?.intValue ?? 0) B")
        if let value = view.json[path: "result", "success"] {
            parts.append(clip(sanitize(value.compactText), previewWidth))
        } else if let reason = view.json[path: "result", "failure", "reason"]?.stringValue {
            parts.append(paint(sanitize(reason), .red))
        }
        return parts.joined(separator: " ")
    }

    private func formatLoss(_ view: RecordView) -> String {
        let count = view.json[member: "lost"]?.intValue ?? 0
        var text = "LOST \(count) record" + (count == 1 ? "" : "s")
        if let reason = view.json[member: "reason"]?.stringValue, !reason.isEmpty {
            text += " (" + sanitize(reason) + ")"
        }
        return TailFormatter.timeOfDay(view.json[member: "time"]?.stringValue) + " " + paint(text, .red)
    }

    private func byteCounts(_ view: RecordView) -> String {
        let up = view.json[member: "bytesFromClient"]?.intValue
        let down = view.json[member: "bytesFromUpstream"]?.intValue
        return "up " + (up.map(TailFormatter.humanSize) ?? "-") + " down " + (down.map(TailFormatter.humanSize) ?? "-")
    }

    // MARK: Pieces

    enum Color: String {
        case green = "32", cyan = "36", yellow = "33", red = "31"
    }

    static func statusColor(_ status: Int) -> Color? {
        switch status {
        case 200..<300: return .green
        case 300..<400: return .cyan
        case 400..<500: return .yellow
        case 500..<600: return .red
        default: return nil
        }
    }

    private func paint(_ text: String, _ color: Color?) -> String {
        guard self.color, let color else { return text }
        return "\u{1B}[" + color.rawValue + "m" + text + "\u{1B}[0m"
    }

    /// `2026-12-02T10:11:12.123456Z` → `10:11:12.123`; unknown layouts become `--:--:--.---`.
    static func timeOfDay(_ stamp: String?) -> String {
        guard let stamp else { return "--:--:--.---" }
        let characters = Array(stamp)
        guard characters.count >= 19, characters[10] == "T" || characters[10] == "t" || characters[10] == " " else {
            return "--:--:--.---"
        }
        var fraction = ""
        var index = 19
        if characters.count > 19, characters[19] == "." {
            index = 20
            while index < characters.count, characters[index].isASCII, characters[index].isNumber, fraction.count < 3 {
                fraction.append(characters[index])
                index += 1
            }
        }
        while fraction.count < 3 { fraction.append("0") }
        return String(characters[11..<19]) + "." + fraction
    }

    /// 1023 → `1023 B`, 1229 → `1.2 KB`, then MB and GB (powers of 1024).
    public static func humanSize(_ bytes: Int) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        var value = Double(bytes) / 1024
        for unit in ["KB", "MB", "GB"] {
            if value < 1024 || unit == "GB" { return String(format: "%.1f", value) + " " + unit }
            value /= 1024
        }
        return "\(bytes) B"
    }

    /// Seconds → `2.1 ms`.
    public static func milliseconds(_ seconds: Double) -> String {
        String(format: "%.1f ms", seconds * 1000)
    }

    private func sanitize(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: TailFormatter.isControl) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { TailFormatter.isControl($0) ? "?" : $0 }))
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    private func clip(_ text: String, _ width: Int) -> String {
        guard text.count > width else { return text }
        return String(text.prefix(max(0, width - 1))) + "…"
    }
}
