/// A JSON value that keeps what a log reader needs to see exactly as the
/// upstream sent it: member order (duplicates included) and the source text of
/// every number. Only `object` is `indirect`: scalars and arrays stay inline,
/// saving one allocation per value. `object` must stay boxed: without that box
/// (recursion through `Member` inside an array) the Swift 6.3 debug build reads
/// values back wrong (`"[redacted]"` comes out as `false`).
/// Foundation's `Any` tree loses both (and prints `true` as `1`).
public enum JSON: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    /// The number's exact source text, already validated against RFC 8259's grammar.
    case number(String)
    case string(String)
    case array([JSON])
    /// Members in source order; duplicate keys are kept.
    indirect case object([Member])

    public struct Member: Sendable, Equatable, Hashable {
        public var key: String
        public var value: JSON
        public init(_ key: String, _ value: JSON) { self.key = key; self.value = value }
    }
}
