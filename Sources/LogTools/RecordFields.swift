import ResponseSerialization

/// Read access to a parsed record by member name. Records come from our own writer but may be from
/// another version, so every accessor returns nil for a missing or differently-typed member
/// instead of trapping.
extension JSON {
    subscript(member key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        for member in members where member.key == key { return member.value }
        return nil
    }

    subscript(path keys: String...) -> JSON? {
        var value: JSON? = self
        for key in keys { value = value?[member: key] }
        return value
    }

    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var doubleValue: Double? {
        if case .number(let text) = self { return Double(text) }
        return nil
    }

    var intValue: Int? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int(text) { return exact }
        if let real = Double(text), real.isFinite, real.rounded() == real, abs(real) < 9e15 { return Int(real) }
        return nil
    }

    var isNull: Bool { self == .null }
}

/// The fields of a record that the filter, the formatter and the HAR writer share, named once.
struct RecordView {
    let json: JSON

    var kind: String { json[member: "kind"]?.stringValue ?? "http" }
    var request: JSON? { nonNull(json[member: "request"]) }
    var response: JSON? { nonNull(json[member: "response"]) }
    var method: String? { request?[member: "method"]?.stringValue }
    var url: String? { request?[member: "url"]?.stringValue }
    var status: Int? {
        if let status = response?[member: "status"]?.intValue { return status }
        if kind == "tunnel" || kind == "websocket" { return json[member: "status"]?.intValue }
        return nil
    }
    var mimeType: String? { response?[member: "mimeType"]?.stringValue }
    var serializer: String? { json[member: "serializer"]?.stringValue }

    /// The transport failure: `{"code","message"}` as the engine writes it, or a bare code string.
    var transportError: (code: String, message: String)? {
        guard let error = nonNull(json[member: "error"]) else { return nil }
        if let code = error.stringValue { return (code, code) }
        let code = error[member: "code"]?.stringValue ?? error[member: "error"]?.stringValue ?? "error"
        let message = error[member: "message"]?.stringValue ?? code
        return (code, message)
    }

    /// `result.failure`: the serializer's or validator's error.
    var resultFailure: (error: String, reason: String?, message: String?)? {
        guard let failure = nonNull(json[path: "result", "failure"]) else { return nil }
        if let text = failure.stringValue { return (text, nil, nil) }
        return (failure[member: "error"]?.stringValue ?? "failure",
                failure[member: "reason"]?.stringValue,
                failure[member: "message"]?.stringValue)
    }

    var successValue: JSON? { json[path: "result", "success"] }

    /// Host (lower-cased, without port or IPv6 brackets) of the URL, or of a tunnel's target.
    var host: String? {
        if let url { return URLParts(url).host }
        if let target = json[member: "target"]?.stringValue { return URLParts.hostOfAuthority(target) }
        return nil
    }

    var path: String? { url.map { URLParts($0).path } }

    /// A message's `headers` as (name, value) pairs, in order; malformed pairs are skipped.
    func headers(of message: JSON) -> [(String, String)] {
        guard case .array(let pairs)? = message[member: "headers"] else { return [] }
        return pairs.compactMap { pair in
            guard case .array(let parts) = pair, parts.count >= 2, let name = parts[0].stringValue,
                  let value = parts[1].stringValue else { return nil }
            return (name, value)
        }
    }

    private func nonNull(_ value: JSON?) -> JSON? {
        guard let value, value != .null else { return nil }
        return value
    }
}

/// Splits an absolute URL (`http://host:port/path?query`) the way a log reader needs it, without
/// Foundation's URL (which rejects some URLs a proxy sees and logs verbatim).
struct URLParts {
    var scheme = ""
    var authority = ""
    var path = "/"
    var query: String?

    init(_ url: String) {
        var rest = Substring(url)
        if let fragment = rest.firstIndex(of: "#") { rest = rest[..<fragment] }
        if let schemeEnd = rest.range(of: "://") {
            scheme = String(rest[..<schemeEnd.lowerBound])
            rest = rest[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
            authority = String(rest[..<authorityEnd])
            rest = rest[authorityEnd...]
        }
        if let question = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        path = rest.isEmpty ? "/" : String(rest)
    }

    var host: String { URLParts.hostOfAuthority(authority) }

    /// `user@[::1]:8080` → `::1`, `Example.COM:443` → `example.com`.
    static func hostOfAuthority(_ authority: String) -> String {
        var rest = Substring(authority)
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            return String(rest[rest.index(after: rest.startIndex)..<close]).lowercased()
        }
        if let colon = rest.lastIndex(of: ":") { rest = rest[..<colon] }
        return rest.lowercased()
    }
}
