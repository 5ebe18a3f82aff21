/// The messages of a gRPC body (`application/grpc`, `+proto`, `+json`): each is a 5-byte
/// prefix — a compressed flag (0 or 1) and a 4-byte big-endian length — then that many
/// bytes (the gRPC over HTTP/2 protocol, "Length-Prefixed-Message"). Pure: it only finds
/// the messages; undoing `grpc-encoding` and decoding each is the caller's.
public struct GRPCMessages: Sendable, Equatable {
    /// One message's place in the body.
    public struct Message: Sendable, Equatable {
        /// Where the message's prefix starts in the body.
        public var offset: Int
        /// The compressed flag: the payload is in the stream's `grpc-encoding`.
        public var compressed: Bool
        /// The payload's bytes in the body (after the prefix).
        public var payload: Range<Int>
    }

    /// Whole messages, in order.
    public var messages: [Message]
    /// Bytes after the last whole message: a message cut short (the capture limit, or a
    /// transfer that stopped) — its prefix's offset and the length it declared, if known.
    public var cutShort: (offset: Int, declaredLength: Int?)?

    /// Equal messages and an equal cut.
    /// - Parameters:
    ///   - a: One split.
    ///   - b: The other.
    public static func == (a: GRPCMessages, b: GRPCMessages) -> Bool {
        a.messages == b.messages && a.cutShort?.offset == b.cutShort?.offset
            && a.cutShort?.declaredLength == b.cutShort?.declaredLength
    }

    /// Splits `bytes`; a compressed flag other than 0 or 1 is an error naming its offset
    /// (the body is not gRPC framing), a message cut short is not.
    /// - Parameter bytes: The body (after any HTTP Content-Encoding is undone).
    public static func split(_ bytes: UnsafeRawBufferPointer) throws(GRPCFramingError) -> GRPCMessages {
        var messages: [Message] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 5 else {
                return GRPCMessages(messages: messages, cutShort: (offset, nil))
            }
            let flag = bytes[offset]
            guard flag <= 1 else {
                throw GRPCFramingError(offset: offset, message: "compressed flag \(flag) is neither 0 nor 1")
            }
            let length = Int(bytes[offset + 1]) << 24 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4])
            let start = offset + 5
            guard bytes.count - start >= length else {
                return GRPCMessages(messages: messages, cutShort: (offset, length))
            }
            messages.append(Message(offset: offset, compressed: flag == 1, payload: start..<(start + length)))
            offset = start + length
        }
        return GRPCMessages(messages: messages, cutShort: nil)
    }

    /// `split` for a byte array.
    /// - Parameter bytes: The body.
    public static func split(_ bytes: [UInt8]) throws(GRPCFramingError) -> GRPCMessages {
        let result: Result<GRPCMessages, GRPCFramingError> = bytes.withUnsafeBytes { raw in
            Result { () throws(GRPCFramingError) -> GRPCMessages in try split(raw) }
        }
        return try result.get()
    }
}

/// Why a body is not gRPC's length-prefixed framing, and where.
public struct GRPCFramingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the message prefix at fault.
    public var offset: Int
    /// What is wrong.
    public var message: String
    /// - Parameters:
    ///   - offset: Byte offset of the problem.
    ///   - message: What is wrong.
    public init(offset: Int, message: String) { self.offset = offset; self.message = message }
    /// The message and the offset.
    public var description: String { "\(message) at byte offset \(offset)" }
}
