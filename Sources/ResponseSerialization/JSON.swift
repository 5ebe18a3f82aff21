/// A JSON value that keeps what a log reader needs to see exactly as the
/// upstream sent it: member order (duplicates included) and the source text of
/// every number. Only `object` is `indirect`: scalars and arrays stay inline,
/// saving one allocation per value. `object` must stay boxed: without that box
/// (recursion through `Member` inside an array) the Swift 6.3 debug build reads
/// values back wrong (`"[redacted]"` comes out as `false`).
/// Foundation's `Any` tree loses both (and prints `true` as `1`).
public enum JSON: Sendable, Equatable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// The number's exact source text, already validated against RFC 8259's grammar.
    case number(String)
    /// A string, unescaped.
    case string(String)
    /// Elements in source order.
    case array([JSON])
    /// Members in source order; duplicate keys are kept.
    indirect case object([Member])

    /// One object member: a key and its value.
    public struct Member: Sendable, Equatable, Hashable {
        /// The key, unescaped.
        public var key: String
        /// The member's value.
        public var value: JSON
        /// - Parameters:
        ///   - key: The key, unescaped.
        ///   - value: Its value.
        public init(_ key: String, _ value: JSON) { self.key = key; self.value = value }
    }
}
