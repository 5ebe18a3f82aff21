// CONTRACT (filled in by the JSON work): signatures here are what other code calls.

/// Where and why a document is not RFC 8259 JSON.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input where the problem was found.
    public var offset: Int
    public var message: String
    public init(offset: Int, message: String) { self.offset = offset; self.message = message }
    public var description: String { "\(message) at byte \(offset)" }
}

public enum JSONParser {
    /// Parses one JSON text (surrounding white space allowed). `allowFragments`
    /// accepts a scalar at top level (Alamofire's default); nesting deeper than
    /// `maxDepth` fails cleanly instead of overflowing the stack.
    public static func parse(_ bytes: UnsafeRawBufferPointer, allowFragments: Bool = true, maxDepth: Int = 512) throws(JSONParseError) -> JSON {
        fatalError("unimplemented")
    }
}
