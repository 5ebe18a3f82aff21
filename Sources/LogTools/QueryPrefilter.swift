/// Byte tests on a raw record line that rule it out before its JSON is parsed.
struct QueryPrefilter: Sendable {
    init(_ expression: QueryExpression) {}
    func mayMatch(_ line: [UInt8]) -> Bool { true }
}
