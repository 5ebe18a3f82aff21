import ResponseSerialization

/// A field a query can test, as it names a part of a record (see docs/query.md).
public enum QueryField: Sendable, Equatable, CustomStringConvertible {
    case id, kind, method, url, host, path, query, status, type, mime, rule, error, failure
    case client, upstream, duration, latency, wait, size, requestSize, time
    case requestHeader(String)
    case responseHeader(String)
    /// A JSON Pointer into the logged response value (`result.success`).
    case responseJSON(JSONPointer)
    /// A JSON Pointer into the decoded request body (`request.body`).
    case requestJSON(JSONPointer)

    /// The plain field names, for `tapwire query --help` and error messages.
    public static let simpleNames: [(String, QueryField)] = [
        ("id", .id), ("kind", .kind), ("method", .method), ("url", .url), ("host", .host), ("path", .path),
        ("query", .query), ("status", .status), ("type", .type), ("mime", .mime), ("rule", .rule),
        ("error", .error), ("failure", .failure), ("client", .client), ("upstream", .upstream),
        ("duration", .duration), ("latency", .latency), ("wait", .wait), ("size", .size),
        ("reqsize", .requestSize), ("time", .time),
    ]

    public var description: String {
        switch self {
        case .requestHeader(let name): return "req.header." + name
        case .responseHeader(let name): return "res.header." + name
        case .responseJSON(let pointer): return "json:" + pointer.description
        case .requestJSON(let pointer): return "reqjson:" + pointer.description
        default: return QueryField.simpleNames.first { $0.1 == self }?.0 ?? "?"
        }
    }

    /// What the values of this field are, which decides how a query value is read.
    var valueKind: QueryValueKind {
        switch self {
        case .status: return .status
        case .duration, .latency, .wait: return .duration
        case .size, .requestSize: return .size
        case .time: return .time
        case .responseJSON, .requestJSON: return .json
        default: return .text
        }
    }
}

enum QueryValueKind {
    case text, status, duration, size, time, json
}
