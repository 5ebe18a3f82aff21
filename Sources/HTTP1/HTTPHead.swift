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
    /// A request that came over HTTP/2 (the engine forwards it as HTTP/1.1).
    public static let http2 = HTTPVersion(major: 2, minor: 0)
    /// `HTTP/1.1`; `HTTP/2` for 2.0, as RFC 9113 names it (it has no minor version).
    public var description: String { minor == 0 && major >= 2 ? "HTTP/\(major)" : "HTTP/\(major).\(minor)" }
}

/// An ordered list of header fields. Lookups ignore case (RFC 9110 §5.1).
///
/// Kept as bytes: a parsed head's field section is copied once and each field is a span
/// of it, so parsing makes no string per name and value, filtering shares the bytes, and
/// the wire form and the log record copy them straight out. Strings (`Field`) are made
/// only when asked for; a name or value that is not valid UTF-8 is forwarded as it came
/// and read as a string with U+FFFD in place of the bad bytes.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByArrayLiteral {
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) { self.name = name; self.value = value }
    }

    /// Where one field's name and value lie in `bytes`. Usable from inlinable code so that
    /// `forEachField` is inlined into the record encoder with its closure.
    @usableFromInline
    struct Span: Sendable, Equatable {
        @usableFromInline var nameStart: UInt32, nameEnd: UInt32, valueStart: UInt32, valueEnd: UInt32
        init(name: Range<Int>, value: Range<Int>) {
            // Spans are read without bounds checks in release builds: never let one wrap.
            precondition(value.upperBound <= Int(UInt32.max), "header bytes beyond 4 GiB")
            nameStart = UInt32(truncatingIfNeeded: name.lowerBound); nameEnd = UInt32(truncatingIfNeeded: name.upperBound)
            valueStart = UInt32(truncatingIfNeeded: value.lowerBound); valueEnd = UInt32(truncatingIfNeeded: value.upperBound)
        }
        @inlinable var name: Range<Int> { Int(nameStart)..<Int(nameEnd) }
        @inlinable var value: Range<Int> { Int(valueStart)..<Int(valueEnd) }
    }

    /// The bytes the spans point into: a parsed field section (line ends and all), then
    /// the names and values of fields added later. Bytes no span points to are unused.
    @usableFromInline private(set) var bytes: [UInt8]
    @usableFromInline private(set) var spans: [Span]

    public init() { bytes = []; spans = [] }
    public init(_ pairs: [(String, String)]) {
        self.init()
        bytes.reserveCapacity(pairs.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count })
        spans.reserveCapacity(pairs.count)
        for (name, value) in pairs { add(name: name, value: value) }
    }
    public init(arrayLiteral elements: (String, String)...) { self.init(elements) }
    public init(fields: [Field]) {
        self.init()
        for field in fields { add(name: field.name, value: field.value) }
    }
    /// The parser's: `spans` index into `section`, which is copied.
    init(section: UnsafeRawBufferPointer, spans: [Span]) {
        bytes = Array(section)
        self.spans = spans
    }
    /// Some of `self`'s fields, sharing its bytes.
    private init(bytes: [UInt8], spans: [Span]) { self.bytes = bytes; self.spans = spans }

    public var count: Int { spans.count }
    public var isEmpty: Bool { spans.isEmpty }

    /// The fields as strings (made on each call).
    public var fields: [Field] { map { $0 } }

    public struct Iterator: IteratorProtocol {
        let headers: HTTPHeaders
        var index = 0
        public mutating func next() -> Field? {
            guard index < headers.spans.count else { return nil }
            defer { index += 1 }
            return headers[index]
        }
    }
    public func makeIterator() -> Iterator { Iterator(headers: self) }

    /// The field at `index` (0 ..< count) as strings.
    public subscript(index: Int) -> Field {
        let span = spans[index]
        return bytes.withUnsafeBufferPointer { b in
            Field(name: String(decoding: UnsafeBufferPointer(rebasing: b[span.name]), as: UTF8.self),
                  value: String(decoding: UnsafeBufferPointer(rebasing: b[span.value]), as: UTF8.self))
        }
    }

    /// Visits every field's name and value bytes in order, without making strings (the
    /// log record's encoder). The buffers are valid only inside `body`.
    /// Inlinable: called across modules without it, every field would go through a closure
    /// context, and the record encoder calls this for every field of every record.
    @inlinable
    public func forEachField(_ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try bytes.withUnsafeBufferPointer { b in
            for span in spans {
                try body(UnsafeBufferPointer(rebasing: b[span.name]), UnsafeBufferPointer(rebasing: b[span.value]))
            }
        }
    }

    // MARK: Changes

    public mutating func add(name: String, value: String) {
        let span = appendBytes(name: name, value: value)
        spans.append(span)
    }
    /// Adds a field from bytes as received (an HTTP/2 header callback's), without strings.
    public mutating func add(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = bytes.count
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        spans.append(Span(name: nameStart..<valueStart, value: valueStart..<bytes.count))
    }
    public mutating func insert(name: String, value: String, at index: Int) {
        let span = appendBytes(name: name, value: value)
        spans.insert(span, at: index)
    }

    private mutating func appendBytes(name: String, value: String) -> Span {
        var name = name, value = value
        let nameStart = bytes.count
        name.withUTF8 { bytes.append(contentsOf: $0) }
        let valueStart = bytes.count
        value.withUTF8 { bytes.append(contentsOf: $0) }
        return Span(name: nameStart..<valueStart, value: valueStart..<bytes.count)
    }

    /// Replaces every field named `name` with one field (appended if absent).
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let i = firstIndex(name: name) else { return add(name: name, value: value) }
        setValue(value, at: i)
        var j = spans.count - 1
        while j > i { if nameEquals(spans[j], name) { spans.remove(at: j) }; j -= 1 }
    }

    /// Gives the field at `index` a new value (its name and place stay).
    mutating func setValue(_ value: String, at index: Int) {
        let valueStart = bytes.count
        bytes.append(contentsOf: value.utf8)
        precondition(bytes.count <= Int(UInt32.max), "header bytes beyond 4 GiB")
        spans[index].valueStart = UInt32(truncatingIfNeeded: valueStart)
        spans[index].valueEnd = UInt32(truncatingIfNeeded: bytes.count)
    }

    public mutating func remove(name: String) {
        let headers = self
        spans.removeAll { headers.nameEquals($0, name) }
    }
    public mutating func removeAll(where predicate: (Field) -> Bool) {
        var kept: [Span] = []
        kept.reserveCapacity(spans.count)
        for i in spans.indices where !predicate(self[i]) { kept.append(spans[i]) }
        spans = kept
    }

    /// The fields whose spans `keep` says to keep, sharing these bytes.
    func filtered(_ keep: (Span) -> Bool) -> HTTPHeaders {
        HTTPHeaders(bytes: bytes, spans: spans.filter(keep))
    }

    // MARK: Lookups

    /// All values of fields named `name`, in order.
    public subscript(name: String) -> [String] {
        spans.indices.compactMap { nameEquals(spans[$0], name) ? self[$0].value : nil }
    }
    public func first(name: String) -> String? { firstIndex(name: name).map { self[$0].value } }
    /// The first field named `name`'s value bytes (nil without one), without making strings.
    /// The buffer is valid only inside `body`.
    public func withFirstValue<R>(name: String, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        guard let index = firstIndex(name: name) else { return try body(nil) }
        let span = spans[index]
        return try bytes.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[span.value])) }
    }
    public func contains(name: String) -> Bool { firstIndex(name: name) != nil }

    /// The name's bytes are taken once, not per field: this runs for every head
    /// (Content-Length, Transfer-Encoding, Content-Type, Host).
    func firstIndex(name: String) -> Int? {
        bytes.withUnsafeBufferPointer { b in
            HTTPHeaders.withUTF8(name) { n in
                spans.firstIndex { span in
                    Int(span.nameEnd &- span.nameStart) == n.count
                        && HTTPHeaders.equalBytes(UnsafeBufferPointer(rebasing: b[span.name]), n)
                }
            }
        }
    }

    /// Whether the field at `span` is named `name` (ASCII case-insensitively).
    func nameEquals(_ span: Span, _ name: String) -> Bool {
        let length = Int(span.nameEnd &- span.nameStart)
        guard length == name.utf8.count else { return false }
        return bytes.withUnsafeBufferPointer { b in
            HTTPHeaders.withUTF8(name) { HTTPHeaders.equalBytes(UnsafeBufferPointer(rebasing: b[span.name]), $0) }
        }
    }

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
        // The name's and token's bytes are taken once, not per field: this runs about three
        // times an exchange on the loop.
        bytes.withUnsafeBufferPointer { b in
            HTTPHeaders.withUTF8(name) { n in
                HTTPHeaders.withUTF8(token) { t in
                    for span in spans where Int(span.nameEnd &- span.nameStart) == n.count
                        && HTTPHeaders.equalBytes(UnsafeBufferPointer(rebasing: b[span.name]), n)
                        && HTTPHeaders.list(UnsafeBufferPointer(rebasing: b[span.value]), contains: t) {
                        return true
                    }
                    return false
                }
            }
        }
    }

    /// Whether the comma-separated list `value` holds `token` (ASCII case-insensitively).
    static func list(_ v: UnsafeBufferPointer<UInt8>, contains t: UnsafeBufferPointer<UInt8>) -> Bool {
        !everyElement(of: v) { !equalBytes($0, t) }
    }

    /// Whether every element of the comma-separated list `value` is `token` (ASCII
    /// case-insensitively). True for an empty list.
    static func list(_ v: UnsafeBufferPointer<UInt8>, holdsOnly t: UnsafeBufferPointer<UInt8>) -> Bool {
        everyElement(of: v) { equalBytes($0, t) }
    }

    /// Whether `test` holds for every element of the comma-separated list `v` (whitespace
    /// around elements trimmed, empty elements skipped); stops at the first that fails.
    @inline(__always)
    static func everyElement(of v: UnsafeBufferPointer<UInt8>, _ test: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        var i = 0
        while i < v.count {
            while i < v.count && (v[i] == 0x20 || v[i] == 0x09 || v[i] == 0x2C) { i += 1 }
            let start = i
            while i < v.count && v[i] != 0x2C { i += 1 }
            var end = i
            while end > start && (v[end - 1] == 0x20 || v[end - 1] == 0x09) { end -= 1 }
            if end > start && !test(UnsafeBufferPointer(rebasing: v[start..<end])) { return false }
        }
        return true
    }

    /// ASCII case-insensitive equality on the UTF-8 bytes (field names are tokens).
    public static func equalNames(_ a: String, _ b: String) -> Bool {
        if a.utf8.count != b.utf8.count { return false }
        return withUTF8(a) { pa in withUTF8(b) { pb in equalBytes(pa, pb) } }
    }

    /// ASCII case-insensitive equality of two byte runs.
    @inline(__always)
    static func equalBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for i in 0..<a.count where asciiLower(a[i]) != asciiLower(b[i]) { return false }
        return true
    }

    /// Whether `name` is a field name as RFC 9110 §5.1 has it (a token): for fields read
    /// from elsewhere than a parsed head, such as a log file.
    public static func isFieldName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy(ByteClass.isToken)
    }

    /// Whether a field name's bytes are `lowercase` (a lower-case literal), ignoring ASCII case.
    public static func name(_ bytes: UnsafeBufferPointer<UInt8>, is lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for i in 0..<bytes.count where asciiLower(bytes[i]) != expected[i] { return false }
        return true
    }

    /// The string's UTF-8 without a copy when it is stored contiguously (literals, parsed text).
    @inline(__always)
    static func withUTF8<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let r = text.utf8.withContiguousStorageIfAvailable(body) { return r }
        var copy = text
        return copy.withUTF8(body)
    }

    public static func == (a: HTTPHeaders, b: HTTPHeaders) -> Bool {
        guard a.spans.count == b.spans.count else { return false }
        return a.bytes.withUnsafeBufferPointer { pa in
            b.bytes.withUnsafeBufferPointer { pb in
                for (x, y) in zip(a.spans, b.spans) {
                    if !pa[x.name].elementsEqual(pb[y.name]) || !pa[x.value].elementsEqual(pb[y.value]) { return false }
                }
                return true
            }
        }
    }
}

@inline(__always)
public func asciiLower(_ c: UInt8) -> UInt8 { (c >= 65 && c <= 90) ? c | 0x20 : c }

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
