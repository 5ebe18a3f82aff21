import ResponseSerialization

/// What a record's `result` holds: the logged value, or the failure's three names.
public enum RecordResult: Sendable, Equatable {
    case success(JSON)
    /// A value already written as compact JSON text (`CompactJSON`).
    case successText([UInt8])
    case failure(ErrorLogFields)
}
