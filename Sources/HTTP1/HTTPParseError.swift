/// Why a message was refused. `status` is what a proxy answers a client with;
/// `reason` is the short text that goes into the response body and the log.
public struct HTTPParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Malformed or ambiguous syntax or framing → 400.
        case malformed
        /// The head exceeded the configured limit → 431 (request) / 502 (response).
        case headTooLarge
        /// A transfer coding we do not implement → 501.
        case unsupportedTransferCoding
    }
    public var kind: Kind
    public var reason: String

    public init(_ kind: Kind, _ reason: String) { self.kind = kind; self.reason = reason }

    /// The status a proxy sends a client whose *request* failed this way.
    public var answerStatus: ProxyStatus {
        switch kind {
        case .malformed: return .badRequest
        case .headTooLarge: return .requestHeaderFieldsTooLarge
        case .unsupportedTransferCoding: return .notImplemented
        }
    }
    public var status: Int { answerStatus.code }
    /// The reason phrase of `status`, for the status line of that answer.
    public var reasonPhrase: String { answerStatus.reasonPhrase }
    public var description: String { reason }
}
