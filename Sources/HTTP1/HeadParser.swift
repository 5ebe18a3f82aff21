// CONTRACT (filled in by the HTTP1 work): signatures here are what ProxyEngine calls.

public enum HeadParseResult<Head: Sendable>: Sendable {
    /// No complete head yet (no CRLFCRLF) and the limit is not reached: read more.
    case incomplete
    /// A complete head; `length` bytes (including any leading empty lines and the
    /// final CRLFCRLF) belong to it and can be dropped from the input.
    case complete(Head, length: Int)
}

public enum HTTPHeadParser {
    /// Parses a request head at the start of `bytes` (RFC 9112 §2-5).
    /// Throws `.headTooLarge` once `bytes` holds more than `maxHeadBytes` without a
    /// complete head, `.malformed` for any syntax error.
    public static func parseRequestHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        fatalError("unimplemented")
    }

    /// Parses a response head (status-line + fields) at the start of `bytes`.
    public static func parseResponseHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPResponseHead> {
        fatalError("unimplemented")
    }
}
