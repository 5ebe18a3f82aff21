import ResponseSerialization

/// The `data` block: the response body as decoded for the serializer.
public struct ResponseBodySummary: Sendable, Equatable {
    /// Decoded size in bytes; nil when the Content-Encoding could not be undone.
    public var size: Int?
    /// Bytes kept from the wire (before decoding), at most `capture.maxBodyBytes`.
    public var captured: Int
    /// The serializer saw only a prefix: the capture limit or the decode limit cut it.
    public var truncated: Bool
    /// The response's Content-Encoding header as sent, nil without one.
    public var contentEncoding: String?

    public init(size: Int?, captured: Int, truncated: Bool, contentEncoding: String?) {
        self.size = size; self.captured = captured; self.truncated = truncated; self.contentEncoding = contentEncoding
    }
}
