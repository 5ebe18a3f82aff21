/// Why a body is not one MessagePack value: what is wrong and where, as a byte offset
/// into the body (after Content-Encoding is undone), so a reader can find the byte.
public struct MsgPackError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the value at fault (its first byte), or of the first byte after
    /// the value when extra bytes follow it.
    public var offset: Int
    /// What is wrong.
    public var message: String

    /// - Parameters:
    ///   - offset: Byte offset of the problem.
    ///   - message: What is wrong.
    public init(offset: Int, message: String) {
        self.offset = offset; self.message = message
    }

    /// The message and the offset: "byte 0xc1 is never used at byte offset 3".
    public var description: String { "\(message) at byte offset \(offset)" }
}
