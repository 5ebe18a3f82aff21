/// HTTP/1.x message heads as plain values: what the parser produces, what the
/// engine forwards and what the serializers read. Field order and the case of
/// names are kept exactly as received, because a log reader wants to see what
/// was on the wire.

public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) { self.major = major; self.minor = minor }
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// An ordered list of header fields. Lookups ignore case (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByArrayLiteral {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) { self.name = name; self.value = value }
    }

    public private(set) var fields: [Field]

    public init() { fields = [] }
    public init(_ pairs: [(String, String)]) { fields = pairs.map { Field(name: $0.0, value: $0.1) } }
    public init(arrayLiteral elements: (String, String)...) { self.init(elements) }
    public init(fields: [Field]) { self.fields = fields }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }
    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }
    public mutating func insert(name: String, value: String, at index: Int) {
        fields.insert(Field(name: name, value: value), at: index)
    }

    /// Replaces every field named `name` with one field (appended if absent).
    public mutating func replaceOrAdd(name: String, value: String) {
        if let i = fields.firstIndex(where: { Self.equalNames($0.name, name) }) {
            fields[i].value = value
            var j = fields.count - 1
            while j > i { if Self.equalNames(fields[j].name, name) { fields.remove(at: j) }; j -= 1 }
        } else {
            add(name: name, value: value)
        }
    }

    public mutating func remove(name: String) { fields.removeAll { Self.equalNames($0.name, name) } }
    public mutating func removeAll(where predicate: (Field) -> Bool) { fields.removeAll(where: predicate) }

    /// All values of fields named `name`, in order.
    public subscript(name: String) -> [String] {
        fields.compactMap { Self.equalNames($0.name, name) ? $0.value : nil }
    }
    public func first(name: String) -> String? {
        fields.first { Self.equalNames($0.name, name) }?.value
    }
    public func contains(name: String) -> Bool { fields.contains { Self.equalNames($0.name, name) } }

    /// Comma-separated list elements across all fields named `name`, trimmed, empties dropped
    /// (RFC 9110 §5.6.1), e.g. the tokens of `Connection` or `Transfer-Encoding`.
    public func tokens(name: String) -> [String] {
        self[name].flatMap { $0.split(separator: ",", omittingEmptySubsequences: true) }
            .map { $0.trimmingOWS() }
            .filter { !$0.isEmpty }
    }

    /// Whether the comma-separated lists in fields named `name` hold `token`
    /// (ASCII case-insensitively), without allocating: this runs for every
    /// request and response (`Connection: close`, `keep-alive`, `upgrade`).
    public func listContains(name: String, token: String) -> Bool {
        for field in fields where Self.equalNames(field.name, name) {
            if Self.list(field.value, contains: token) { return true }
        }
        return false
    }

    /// Whether the comma-separated list `value` holds `token` (ASCII case-insensitively).
    static func list(_ value: String, contains token: String) -> Bool {
        var token = token, value = value
        return token.withUTF8 { t in
            value.withUTF8 { v -> Bool in
                var i = 0
                while i < v.count {
                    while i < v.count && (v[i] == 0x20 || v[i] == 0x09 || v[i] == 0x2C) { i += 1 }
                    let start = i
                    while i < v.count && v[i] != 0x2C { i += 1 }
                    var end = i
                    while end > start && (v[end - 1] == 0x20 || v[end - 1] == 0x09) { end -= 1 }
                    if end - start == t.count {
                        var same = true
                        for k in 0..<t.count where asciiLower(v[start + k]) != asciiLower(t[k]) { same = false; break }
                        if same { return true }
                    }
                }
                return false
            }
        }
    }

    /// ASCII case-insensitive equality on the UTF-8 bytes (field names are tokens).
    public static func equalNames(_ a: String, _ b: String) -> Bool {
        if a.utf8.count != b.utf8.count { return false }
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                for i in 0..<pa.count where asciiLower(pa[i]) != asciiLower(pb[i]) { return false }
                return true
            }
        }
    }
}

@inline(__always)
func asciiLower(_ c: UInt8) -> UInt8 { (c >= 65 && c <= 90) ? c | 0x20 : c }

extension Substring {
    func trimmingOWS() -> String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

public struct HTTPRequestHead: Sendable, Equatable {
    public var method: String
    /// The request-target as received: origin-form (`/a?b`), absolute-form
    /// (`http://h/a`), authority-form (`h:443`, CONNECT) or `*`.
    public var target: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public init(method: String, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = []) {
        self.method = method; self.target = target; self.version = version; self.headers = headers
    }
}

public struct HTTPResponseHead: Sendable, Equatable {
    public var status: Int
    public var reason: String
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public init(status: Int, reason: String = "", version: HTTPVersion = .http1_1, headers: HTTPHeaders = []) {
        self.status = status; self.reason = reason; self.version = version; self.headers = headers
    }
}
