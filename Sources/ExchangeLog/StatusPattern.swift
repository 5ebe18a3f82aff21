import Foundation

/// The one status pattern of Tapwire: `404`, `4xx` (`4XX`), `200-299`. Config rules
/// (`match.status`, `validate.statusCode`), the query language's `status=` and the older filter
/// words parse it here. Codes are 100 to 999 (a pattern outside what servers send just never
/// matches); classes `1xx` to `5xx`.
public struct StatusPattern: Sendable, Equatable, CustomStringConvertible {
    public let range: ClosedRange<Int>
    public let description: String

    /// What a status pattern looks like, for error messages.
    public static let expected = "a status such as 404, 4xx or 200-299"

    public init?(_ text: String) {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        description = text
        if t.count == 3, t.hasSuffix("xx"), let d = Int(t.prefix(1)), (1...5).contains(d) {
            range = (d * 100)...(d * 100 + 99)
        } else if let dash = t.firstIndex(of: "-"), let lo = Int(t[..<dash]), let hi = Int(t[t.index(after: dash)...]),
                  (100...999).contains(lo), (100...999).contains(hi), lo <= hi {
            range = lo...hi
        } else if let v = Int(t), (100...999).contains(v), t.allSatisfy(\.isNumber) {
            range = v...v
        } else {
            return nil
        }
    }

    public init(range: ClosedRange<Int>) {
        self.range = range
        description = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
    }

    public func matches(_ status: Int) -> Bool { range.contains(status) }
}
