// CONTRACT (filled in by the JSON work): signatures here are what other code calls.

public enum JSONWriter {
    /// Appends the compact text of `value` (no insignificant white space; numbers
    /// as their source text; strings escaped per RFC 8259).
    public static func write(_ value: JSON, into output: inout [UInt8]) {
        fatalError("unimplemented")
    }
    /// Appends `string` as a quoted JSON string. Record encoders use it for fields.
    public static func appendQuoted(_ string: String, into output: inout [UInt8]) {
        fatalError("unimplemented")
    }
}
