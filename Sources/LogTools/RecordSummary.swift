import ResponseSerialization

/// One row of the viewer's list: the few fields of a record a table shows, as a small JSON
/// object (`{"id","kind","time","method","host","path","status","type","size","duration","rule",
/// "error","failure","replayOf","lost"}`, and for a WebSocket message `"direction","opcode",
/// "connection"`; absent members left out). Numbers the record holds are
/// copied as their text; `duration` is seconds.
public enum RecordSummary {
    public static func json(_ record: JSON) -> JSON {
        let view = RecordView(json: record)
        var members: [JSON.Member] = []
        func add(_ key: String, _ value: JSON?) {
            guard let value, value != .null else { return }
            members.append(JSON.Member(key, value))
        }
        func text(_ value: String?) -> JSON? { value.map(JSON.string) }
        add("id", record[member: "id"])
        add("kind", .string(view.kind))
        add("time", record[path: "timeline", "requestStartTime"] ?? record[member: "startTime"] ?? record[member: "time"])
        add("method", text(view.method ?? (view.kind == "tunnel" ? "CONNECT" : nil)))
        // One split of the URL for both (`view.host` and `view.path` would split it twice).
        let parts = view.url.map(URLParts.init)
        add("host", text(parts?.host ?? view.host))
        add("path", text(parts?.path ?? record[member: "target"]?.stringValue))
        add("status", view.status.map { .number(String($0)) })
        add("type", text(view.serializer ?? view.mimeType))
        switch view.kind {
        case "tunnel", "websocket":
            add("size", record[member: "bytesFromUpstream"])
            add("duration", record[member: "duration"])
        case "loss":
            add("lost", record[member: "lost"])
            add("reason", record[member: "reason"])
        case "wsMessage":
            add("size", record[member: "size"])
            add("direction", record[member: "direction"])
            add("opcode", record[member: "opcode"])
            add("connection", record[member: "connection"])
        default:
            add("size", record[path: "data", "size"] ?? view.response?[member: "bodySize"])
            add("duration", record[path: "timeline", "requestDuration"])
        }
        add("rule", record[member: "rule"])
        add("error", text(view.transportError?.code))
        add("failure", text(view.resultFailure.map { $0.reason ?? $0.error }))
        add("replayOf", record[member: "replayOf"])
        return .object(members)
    }

    /// The row as compact JSON text.
    public static func bytes(_ record: JSON) -> [UInt8] {
        var out: [UInt8] = []
        JSONWriter.write(json(record), into: &out)
        return out
    }
}
