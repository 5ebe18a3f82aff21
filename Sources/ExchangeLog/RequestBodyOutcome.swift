import ResponseSerialization

/// What a captured request body became: the value of the default serializer for
/// its Content-Type (after undoing its Content-Encoding), or why it could not be read.
public enum RequestBodyOutcome: Sendable, Equatable {
    case value(JSON)
    /// A value already written as compact JSON text (`CompactJSON`).
    case valueText([UInt8])
    case failure(ErrorLogFields)
}
