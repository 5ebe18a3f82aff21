// CONTRACT (filled in by the HTTP1 work): signatures here are what ProxyEngine calls.

/// How the end of a message body is found (RFC 9112 §6).
public enum BodyFraming: Sendable, Equatable {
    case none
    case contentLength(UInt64)
    case chunked
    /// Response only: the body ends when the connection closes.
    case closeDelimited
}

extension HTTPRequestHead {
    /// The request body's framing, refusing ambiguity: CL with TE, differing CLs,
    /// bad CL syntax → `.malformed`; a TE whose final coding is not chunked → `.malformed`;
    /// an unknown coding → `.unsupportedTransferCoding`.
    public func bodyFraming() throws(HTTPParseError) -> BodyFraming {
        fatalError("unimplemented")
    }
}

extension HTTPResponseHead {
    /// The response body's framing given the request method: none for HEAD, 1xx,
    /// 204, 304 and a 2xx answer to CONNECT; chunked when TE ends in chunked;
    /// close-delimited when TE ends otherwise or neither header is present.
    /// CL with TE, differing CLs, bad CL → `.malformed`.
    public func bodyFraming(requestMethod: String) throws(HTTPParseError) -> BodyFraming {
        fatalError("unimplemented")
    }
}

/// Finds the end of one message body in a byte stream, incrementally, and
/// reports the payload (chunk data without framing) as it goes. It never copies:
/// the caller forwards the consumed input bytes verbatim and copies payload
/// slices only for its bounded capture.
public struct BodyFramer: Sendable {
    public init(_ framing: BodyFraming) { fatalError("unimplemented") }

    /// True once the whole body (including a chunked body's trailers) was consumed.
    public var isComplete: Bool { fatalError("unimplemented") }

    /// Payload bytes seen so far (the decoded body size).
    public var payloadBytes: UInt64 { fatalError("unimplemented") }

    /// Consumes the longest prefix of `input` that belongs to this body, calling
    /// `payload` for each run of payload bytes inside it. Returns how many bytes of
    /// `input` were consumed; fewer than `input.count` only when the body is complete
    /// (the rest belongs to the next message). Throws `.malformed` on bad chunk
    /// syntax (non-hex size, size overflow, missing CRLF after data, oversized
    /// chunk line or trailers).
    public mutating func consume(_ input: UnsafeRawBufferPointer,
                                 payload: (UnsafeRawBufferPointer) -> Void) throws(HTTPParseError) -> Int {
        fatalError("unimplemented")
    }

    /// Called at end of stream. Returns true when EOF validly ends the body
    /// (close-delimited, or already complete); false means the body was truncated.
    public mutating func finishAtEOF() -> Bool { fatalError("unimplemented") }
}
