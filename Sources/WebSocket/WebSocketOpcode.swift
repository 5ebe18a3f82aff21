/// A frame's opcode (RFC 6455 §5.2); the others (3–7, 11–15) are reserved and malformed.
public enum WebSocketOpcode: UInt8, Sendable, Equatable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Control frames (close, ping, pong) may come between a message's fragments.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}
