import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// A query over log records, in the language docs/query.md describes:
///
///     let query = try Query.parse("status>=500 host=*.example.com")
///     if query.matches(record) { … }
///
/// `parse` checks everything (fields, values, regexes, pointers) so that matching cannot fail;
/// `matches` is safe to call from several threads at once.
public struct Query: Sendable {
    /// The expression as parsed (a pure value: print it, compare it, test it).
    public let expression: QueryExpression
    /// The text parsed (the command line's words joined by spaces).
    public let text: String
    private let evaluator: QueryEvaluator
    /// Byte tests that rule lines out before any JSON is parsed.
    let prefilter: QueryPrefilter

    /// - Parameter now: seconds since 1970 that relative times (`time>=-1h`) count from.
    public static func parse(_ text: String, now: Double = Query.currentTime()) throws(QuerySyntaxError) -> Query {
        let expression = try QueryParser.parse(text)
        return Query(expression: expression, text: text, now: now)
    }

    /// The words of a command line, joined by single spaces (columns count in the joined text).
    public static func parse(_ words: [String], now: Double = Query.currentTime()) throws(QuerySyntaxError) -> Query {
        try parse(words.joined(separator: " "), now: now)
    }

    /// Keeps every record.
    public static let all = Query(expression: .all, text: "", now: 0)

    init(expression: QueryExpression, text: String, now: Double) {
        self.expression = expression
        self.text = text
        evaluator = QueryEvaluator(expression, now: now)
        prefilter = QueryPrefilter(expression)
    }

    public var isEmpty: Bool { expression == .all }

    /// Whether a parsed record matches. Only a JSON object is a record and can match, even the
    /// empty query's: an unreadable line is never counted, printed or exported.
    public func matches(_ record: JSON) -> Bool {
        guard case .object = record else { return false }
        if isEmpty { return true }
        return evaluator.matches(record)
    }

    /// Parses `line` and matches it; a line that is not a JSON object never matches.
    public func matches(line: [UInt8]) -> Bool {
        guard prefilter.mayMatch(line) else { return false }
        guard let record = try? JSONParser.parse(line, allowFragments: false) else { return false }
        return matches(record)
    }

    public static func currentTime() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
