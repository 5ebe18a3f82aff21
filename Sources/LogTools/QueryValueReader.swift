import ExchangeLog
import Foundation
import ResponseSerialization

/// Reads the VALUE of `FIELD OP VALUE` for its field: a status pattern for `status=`, a duration
/// with its unit for `duration>`, a size for `size>=`, a time for `time>=`, a regex for `~`…
/// Errors point at the value's column.
enum QueryValueReader {
    static let kinds = ["http", "tunnel", "websocket", "wsMessage", "loss"]

    static func read(_ text: String, quoted: Bool, for field: QueryField, op: QueryOperator,
                     column: Int) throws(QuerySyntaxError) -> QueryValue {
        if op == .regex {
            try checkRegex(text, column: column)
            return .regex(text)
        }
        let ordering = op != .equal && op != .notEqual
        switch field.valueKind {
        case .status:
            if ordering {
                guard let number = ExactNumber(text) else {
                    throw QuerySyntaxError(column: column, message: "expected a status code such as 500 after '\(op.rawValue)', found '\(text)'")
                }
                return .number(number)
            }
            var patterns: [StatusPattern] = []
            for (part, offset) in alternatives(text) {
                guard let pattern = StatusPattern(part) else {
                    throw QuerySyntaxError(column: column + offset,
                                           message: "expected \(StatusPattern.expected), found '\(part)'")
                }
                patterns.append(pattern)
            }
            return .statuses(patterns)
        case .duration:
            guard let seconds = duration(text) else {
                throw QuerySyntaxError(column: column, message: "expected a duration such as 250ms, 1.5s or 2m after '\(op.rawValue)', found '\(text)'")
            }
            return .number(seconds)
        case .size:
            guard let bytes = size(text) else {
                throw QuerySyntaxError(column: column, message: "expected a size such as 512, 10KB or 1.5MB after '\(op.rawValue)', found '\(text)'")
            }
            return .number(bytes)
        case .time:
            if let offset = relativeTime(text) { return .relativeTime(offset) }
            if let stamp = RFC3339Reader.seconds(text) { return .time(stamp) }
            throw QuerySyntaxError(column: column, message: "expected a time such as 2026-12-02T10:00:00Z, 2026-12-02 or -1h after '\(op.rawValue)', found '\(text)'")
        case .json:
            if !quoted {
                switch text {
                case "true": return .literal(.bool(true))
                case "false": return .literal(.bool(false))
                case "null": return .literal(.null)
                default: break
                }
                if let number = ExactNumber(text) { return .number(number) }
            }
            if !quoted, !ordering, text.contains("*") || text.contains("?") { return .glob(Glob(text)) }
            // Quoted: the JSON string, never a number, array or object spelled that way.
            if quoted, !ordering { return .literal(.string(text)) }
            return .text(text)
        case .text:
            if ordering { return .text(text) }
            let isGlob = !quoted && (text.contains("*") || text.contains("?"))
            switch field {
            case .method where isGlob, .type where isGlob, .kind where isGlob:
                // `=` with `*` or `?` is a glob for these names too; a list may mix globs and names.
                let parts = alternatives(text)
                if let empty = parts.first(where: { $0.0.isEmpty }) {
                    throw QuerySyntaxError(column: column + empty.1, message: "expected a name or glob between commas")
                }
                return .anyGlob(parts.map { Glob($0.0, caseInsensitive: true) })
            case .method:
                let methods = alternatives(text)
                for (method, offset) in methods where method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" || $0 == "_" }) {
                    throw QuerySyntaxError(column: column + offset, message: "expected a method name such as GET, found '\(method)'")
                }
                return .anyOf(methods.map { $0.0.uppercased() })
            case .type:
                let types = alternatives(text)
                if let empty = types.first(where: { $0.0.isEmpty }) {
                    throw QuerySyntaxError(column: column + empty.1, message: "expected a serializer or media type such as json")
                }
                return .anyOf(types.map { $0.0.lowercased() })
            case .kind:
                let wanted = alternatives(text)
                for (kind, offset) in wanted where !kinds.contains(where: { $0.lowercased() == kind.lowercased() }) {
                    throw QuerySyntaxError(column: column + offset,
                                           message: "expected a kind (\(kinds.joined(separator: ", "))), found '\(kind)'")
                }
                return .anyOf(wanted.map { $0.0.lowercased() })
            default:
                if !quoted, text.contains("*") || text.contains("?") {
                    return .glob(Glob(text, caseInsensitive: caseInsensitive(field)))
                }
                return .text(text)
            }
        }
    }

    /// Fields whose values compare without regard to case: names, not content.
    static func caseInsensitive(_ field: QueryField) -> Bool {
        switch field {
        case .host, .method, .kind, .type, .mime, .error, .failure: return true
        default: return false
        }
    }

    /// `a,b,c` (or, as the older filter words wrote it, `a|b|c`) → its parts with their character
    /// offsets. The lexer leaves a `|` in a value only where it separates list values.
    static func alternatives(_ text: String) -> [(String, Int)] {
        var parts: [(String, Int)] = []
        var current = ""
        var start = 0
        for (offset, c) in text.enumerated() {
            if c == "," || c == "|" {
                parts.append((current, start))
                current = ""
                start = offset + 1
            } else {
                current.append(c)
            }
        }
        parts.append((current, start))
        return parts
    }

    static func checkRegex(_ pattern: String, column: Int) throws(QuerySyntaxError) {
        guard (try? NSRegularExpression(pattern: pattern, options: [.caseInsensitive])) != nil else {
            throw QuerySyntaxError(column: column, message: "expected a regular expression, found '\(pattern)' (it does not compile)")
        }
    }

    /// `250ms`, `1.5s`, `2m`, `1h`, `800us`; a bare number is seconds (the records' unit).
    static func duration(_ text: String) -> ExactNumber? {
        let units: [(String, Int, Int)] = [  // suffix, power of ten, then factor
            ("ns", -9, 1), ("us", -6, 1), ("µs", -6, 1), ("ms", -3, 1), ("s", 0, 1), ("sec", 0, 1),
            ("min", 0, 60), ("m", 0, 60), ("h", 0, 3600), ("d", 0, 86400),
        ]
        return number(text, units: units)
    }

    /// `512`, `512B`, `10KB` (KB, MB, GB are 1024-based, as `tail` prints sizes; KiB… too).
    static func size(_ text: String) -> ExactNumber? {
        let units: [(String, Int, Int)] = [
            ("b", 0, 1), ("k", 0, 1024), ("kb", 0, 1024), ("kib", 0, 1024), ("m", 0, 1 << 20), ("mb", 0, 1 << 20),
            ("mib", 0, 1 << 20), ("g", 0, 1 << 30), ("gb", 0, 1 << 30), ("gib", 0, 1 << 30),
        ]
        return number(text.lowercased(), units: units)
    }

    private static func number(_ text: String, units: [(String, Int, Int)]) -> ExactNumber? {
        let digitsEnd = text.firstIndex { !($0.isASCII && ($0.isNumber || $0 == "." || $0 == "-" || $0 == "+")) } ?? text.endIndex
        guard let value = ExactNumber(String(text[..<digitsEnd])) else { return nil }
        let unit = text[digitsEnd...]
        if unit.isEmpty { return value }
        guard let (_, power, factor) = units.first(where: { $0.0 == unit }) else { return nil }
        return value.scaled(byPowerOfTen: power).multiplied(by: factor)
    }

    /// `-1h`, `-30m`, `-2d`, `-90s`: seconds before now. Only `-` and then a plain number: the
    /// log holds no future, and `--1h` must not quietly mean an hour ahead.
    static func relativeTime(_ text: String) -> Double? {
        guard text.hasPrefix("-") else { return nil }
        let rest = text.dropFirst()
        guard let first = rest.first, first.isASCII, first.isNumber || first == ".",
              let amount = duration(String(rest)) else { return nil }
        return -amount.doubleValue
    }
}
