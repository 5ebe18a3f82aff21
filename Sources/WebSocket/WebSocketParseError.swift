/// Why a direction's frames could not be parsed (a malformed frame, a message that breaks
/// the fragmentation rules, a permessage-deflate error). Parsing of that connection stops
/// there; the bytes are still relayed. The message is the record's `frameError`.
public struct WebSocketParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
