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

    /// Works on the UTF-8 bytes and cuts only at ASCII delimiters: Character-wise searching
    /// (grapheme breaking) and Foundation's `range(of:)` cost more than the rest of a record's
    /// fields together, and every query on `host`, `path` or `query` (and each viewer row)
    /// splits a URL.
    init(_ url: String) {
        let bytes = url.utf8
        var start = bytes.startIndex
        var end = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        func text(_ from: String.Index, _ to: String.Index) -> String { String(decoding: bytes[from..<to], as: UTF8.self) }
        if let colon = URLParts.schemeSeparator(bytes, start, end) {
            scheme = text(start, colon)
            let authorityStart = bytes.index(colon, offsetBy: 3)
            let authorityEnd = bytes[authorityStart..<end].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? end
            authority = text(authorityStart, authorityEnd)
            start = authorityEnd
        }
        if let question = bytes[start..<end].firstIndex(of: UInt8(ascii: "?")) {
            query = text(bytes.index(after: question), end)
            end = question
        }
        path = start == end ? "/" : text(start, end)
    }

    /// The first `://` in `bytes[start..<end]`: the index of its colon.
    private static func schemeSeparator(_ bytes: String.UTF8View, _ start: String.Index, _ end: String.Index) -> String.Index? {
        var i = start
        while let colon = bytes[i..<end].firstIndex(of: UInt8(ascii: ":")) {
            let first = bytes.index(after: colon)
            guard first < end else { return nil }
            let second = bytes.index(after: first)
            if bytes[first] == UInt8(ascii: "/"), second < end, bytes[second] == UInt8(ascii: "/") { return colon }
            i = first
        }
        return nil
    }

    var host: String { URLParts.hostOfAuthority(authority) }

    /// `user@[::1]:8080` → `::1`, `Example.COM:443` → `example.com`.
    static func hostOfAuthority(_ authority: String) -> String {
        let bytes = authority.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        if let at = bytes.lastIndex(of: UInt8(ascii: "@")) { start = bytes.index(after: at) }
        if start < end, bytes[start] == UInt8(ascii: "["), let close = bytes[start..<end].firstIndex(of: UInt8(ascii: "]")) {
            return lowered(bytes[bytes.index(after: start)..<close])
        }
        if let colon = bytes[start..<end].lastIndex(of: UInt8(ascii: ":")) { end = colon }
        return lowered(bytes[start..<end])
    }

    /// Lower case; plain lower-case ASCII (most hosts) is copied without Unicode case mapping.
    private static func lowered(_ bytes: Substring.UTF8View) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        return bytes.allSatisfy({ $0 < 0x80 && !($0 >= 65 && $0 <= 90) }) ? text : text.lowercased()
    }
}
