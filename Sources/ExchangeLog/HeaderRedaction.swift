import HTTP1

/// The header names whose values a record replaces with `"[redacted]"`
/// (config `redact.headers`), matched ASCII case-insensitively.
public struct HeaderRedaction: Sendable {
    public static let replacement = "[redacted]"

    /// Lower-cased names.
    public let names: Set<String>
    private let lowered: [[UInt8]]
    /// Bit n set when some name is n bytes long (n < 64): most header names are
    /// turned away by their length alone.
    private let lengths: UInt64
    /// Some name is 64 bytes or longer.
    private let hasLongNames: Bool

    public init(_ names: Set<String>) {
        let lower = Set(names.map { String(decoding: $0.utf8.map(HeaderRedaction.asciiLower), as: UTF8.self) })
        self.names = lower
        lowered = lower.map { Array($0.utf8) }
        lengths = lowered.reduce(0) { $1.count < 64 ? $0 | (1 << UInt64($1.count)) : $0 }
        hasLongNames = lowered.contains { $0.count >= 64 }
    }

    /// Whether a header name (its bytes, as the record encoder has them) is redacted.
    /// Compares bytes against the few configured names rather than lower-casing
    /// every header name of every record into a new string.
    public func redacts(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let length = bytes.count
        if length < 64 ? lengths & (1 << UInt64(length)) == 0 : !hasLongNames { return false }
        for candidate in lowered where candidate.count == length {
            var equal = true
            for i in 0..<length where HeaderRedaction.asciiLower(bytes[i]) != candidate[i] {
                equal = false
                break
            }
            if equal { return true }
        }
        return false
    }

    @inline(__always)
    static func asciiLower(_ c: UInt8) -> UInt8 { (c >= 65 && c <= 90) ? c | 0x20 : c }
}
