/// One whole message of one direction, reassembled from its fragments and inflated.
public struct WebSocketMessage: Equatable, Sendable {
    /// `.text` or `.binary`.
    public var opcode: WebSocketOpcode
    /// The first bytes of the payload (at most the parser's `keepBytes`), inflated.
    public var payload: [UInt8]
    /// The payload's size after permessage-deflate is undone; for a message that inflates
    /// past `maxDecodedBytes`, the bytes inflated up to there.
    public var size: UInt64
    /// `payload` is not the whole message (`keepBytes`, or inflating stopped at `maxDecodedBytes`).
    public var truncated: Bool
    /// The message came compressed (RSV1).
    public var compressed: Bool

    public init(opcode: WebSocketOpcode, payload: [UInt8], size: UInt64, truncated: Bool, compressed: Bool) {
        self.opcode = opcode; self.payload = payload; self.size = size; self.truncated = truncated; self.compressed = compressed
    }
}

/// The first Close frame of a direction (RFC 6455 §5.5.1): its code and reason, both
/// optional (an empty Close carries neither).
public struct WebSocketClose: Equatable, Sendable {
    public var code: UInt16?
    public var reason: String?
    public init(code: UInt16?, reason: String?) { self.code = code; self.reason = reason }
}
