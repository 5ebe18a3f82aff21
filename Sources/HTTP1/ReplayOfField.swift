/// The request field with which `tapwire replay` names the record it re-sends. It is addressed
/// to the proxy, like Proxy-Authorization: never forwarded (`HopRole` drops it), and logged as
/// the record's `replayOf` member instead of as a request header.
public enum ReplayOfField {
    public static let name = "X-Tapwire-Replay-Of"

    /// Whether a field name is this one, in any case; compared on bytes (it runs for every
    /// logged request field), the length first.
    @inline(__always)
    public static func matches(_ fieldName: UnsafeBufferPointer<UInt8>) -> Bool {
        guard fieldName.count == 19 else { return false }
        let lower: StaticString = "x-tapwire-replay-of"
        let c = lower.utf8Start
        for i in 0..<19 where asciiLower(fieldName[i]) != c[i] { return false }
        return true
    }
}
