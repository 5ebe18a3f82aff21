import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// Byte tests on a raw record line that rule it out before its JSON is parsed: a query for
/// `"secret"` cannot match a line without those six letters, nor `status>=500` a line where no
/// `"status"` key is followed by such a number. The tests are necessary conditions only (every
/// line they pass is still parsed and evaluated), so they may pass too much, never too little:
///
/// - needles come only from parts of the query that must appear as text in the line (a value
///   compared with `=`, a glob's literal runs, a bare word, a JSON Pointer's last key), and only
///   the runs of them that the writer copies verbatim (printable ASCII without `"` and `\`);
///   ASCII letters compare without case where the field does;
/// - text the evaluator finds in a value's compact JSON (a bare word in a body, a `json:`
///   value that is not a string) is split at JSON's structural characters `, : [ ] { }` as
///   well: another writer may put whitespace next to them (`[1, 2]` for `[1,2]`), while inside
///   a string or number token no whitespace can appear, so each piece is still verbatim;
/// - `not`, `!=`, regexes, times and the mitmproxy filters give no needle (every line passes);
/// - a line with a `\u` or `\/` escape always passes: a foreign writer could spell any
///   character that way.
struct QueryPrefilter: @unchecked Sendable {
    /// What a line must contain.
    indirect enum Requirement {
        case anything
        case contains(Needle)
        case allOf([Requirement])
        case anyOf([Requirement])
    }

    let requirement: Requirement
    /// The needles a scan looks for to find candidate lines (any of them); nil: every line is one.
    let anchors: [Needle]?

    init(_ expression: QueryExpression) {
        requirement = QueryPrefilter.requirement(expression)
        anchors = QueryPrefilter.anchors(requirement)
    }

    /// Whether `line` may match (false: it cannot).
    func mayMatch(_ line: [UInt8]) -> Bool {
        line.withUnsafeBufferPointer { mayMatch($0) }
    }

    func mayMatch(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        guard anchors != nil, let base = line.baseAddress else { return true }
        if QueryPrefilter.escapes.contains(where: { $0.find(base, 0, line.count) != nil }) { return true }
        return holds(requirement, base, line.count)
    }

    private func holds(_ requirement: Requirement, _ base: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        switch requirement {
        case .anything: return true
        case .contains(let needle): return needle.find(base, 0, count) != nil
        case .allOf(let parts): return parts.allSatisfy { holds($0, base, count) }
        case .anyOf(let parts): return parts.contains { holds($0, base, count) }
        }
    }

    static let escapes = [Needle.literal(Array(#"\u"#.utf8), caseInsensitive: false),
                          Needle.literal(Array(#"\/"#.utf8), caseInsensitive: false)]

    /// Calls `body` with the byte range of every line in `region` (lines end with `\n`; the
    /// region ends after one) that contains an anchor, in order; every line when there are no
    /// anchors. `body` returns false to stop.
    func forEachCandidate(in region: UnsafeBufferPointer<UInt8>, _ body: (Range<Int>) -> Bool) {
        guard let base = region.baseAddress else { return }
        let count = region.count
        guard let anchors else {
            var start = 0
            while start < count {
                let end = QueryPrefilter.lineEnd(base, start, count)
                if end > start, !body(start..<end) { return }
                start = end + 1
            }
            return
        }
        let all = anchors + QueryPrefilter.escapes
        // The next hit of each anchor at or after `position` (Int.max: none left).
        var next = [Int](repeating: -1, count: all.count)
        var position = 0
        while position < count {
            var hit = Int.max
            for i in all.indices {
                if next[i] != Int.max && next[i] < position { next[i] = all[i].find(base, position, count) ?? Int.max }
                hit = min(hit, next[i])
            }
            if hit == Int.max { return }
            var start = hit
            while start > position && base[start - 1] != 10 { start -= 1 }
            let end = QueryPrefilter.lineEnd(base, hit, count)
            if end > start, !body(start..<end) { return }
            position = end + 1
        }
    }

    @inline(__always)
    static func lineEnd(_ base: UnsafePointer<UInt8>, _ from: Int, _ count: Int) -> Int {
        guard from < count, let newline = memchr(base + from, 10, count - from) else { return count }
        return base.distance(to: newline.assumingMemoryBound(to: UInt8.self))
    }

    // MARK: From the expression

    static func requirement(_ expression: QueryExpression) -> Requirement {
        switch expression {
        case .and(let terms):
            return simplify(.allOf(terms.map(requirement)))
        case .or(let terms):
            return simplify(.anyOf(terms.map(requirement)))
        case .text(let text):
            return literal(text, caseInsensitive: true, json: true)
        case .exists(let field):
            switch field {
            case .responseJSON(let pointer), .requestJSON(let pointer):
                guard let last = pointer.tokens.last, !isArrayIndex(last) else { return .anything }
                return literal("\"" + last + "\"", caseInsensitive: false, whole: true)
            case .requestHeader(let name), .responseHeader(let name):
                return literal("\"" + name + "\"", caseInsensitive: true, whole: true)
            default:
                return .anything
            }
        case .compare(let field, let op, let value):
            guard op != .notEqual, op != .regex else { return .anything }
            return compare(field, op, value)
        default:
            return .anything
        }
    }

    private static func compare(_ field: QueryField, _ op: QueryOperator, _ value: QueryValue) -> Requirement {
        switch value {
        case .statuses(let patterns):
            return keyed(["status"]) { number in
                patterns.contains { pattern in
                    number.isInteger && number >= ExactNumber(pattern.range.lowerBound) && number <= ExactNumber(pattern.range.upperBound)
                }
            }
        case .number(let wanted):
            guard let keys = numberKeys(field) else { return .anything }
            return keyed(keys) { number in
                switch op {
                case .equal: return number == wanted
                case .less: return number < wanted
                case .lessOrEqual: return number <= wanted
                case .greater: return number > wanted
                case .greaterOrEqual: return number >= wanted
                default: return true
                }
            }
        case .text(let text) where op == .equal:
            guard textIsVerbatim(field) else { return .anything }
            return literal(text, caseInsensitive: QueryValueReader.caseInsensitive(field), json: isJSON(field))
        case .literal(.string(let text)) where op == .equal:
            guard textIsVerbatim(field) else { return .anything }
            return literal(text, caseInsensitive: false)
        case .glob(let glob) where op == .equal:
            guard textIsVerbatim(field) else { return .anything }
            return simplify(.allOf(glob.literals.map { literal($0, caseInsensitive: glob.caseInsensitive, json: isJSON(field)) }))
        default:
            return .anything
        }
    }

    /// One needle per key (a scan keeps each needle's next hit, so a key absent from the file
    /// is looked for once per piece, not once per candidate line).
    private static func keyed(_ keys: [String], _ test: @escaping (ExactNumber) -> Bool) -> Requirement {
        simplify(.anyOf(keys.map { .contains(.keyedNumber(key: Array(("\"" + $0 + "\"").utf8), test)) }))
    }

    /// Fields whose value appears in the line as written (`method` does not: a tunnel is CONNECT).
    private static func textIsVerbatim(_ field: QueryField) -> Bool {
        switch field {
        case .id, .url, .host, .path, .query, .mime, .rule, .error, .failure, .client, .upstream,
             .requestHeader, .responseHeader, .responseJSON, .requestJSON:
            return true
        default:
            return false
        }
    }

    /// Fields whose non-string values are compared as their compact JSON text.
    private static func isJSON(_ field: QueryField) -> Bool {
        switch field {
        case .responseJSON, .requestJSON: return true
        default: return false
        }
    }

    /// The record keys a numeric field's value may sit under.
    private static func numberKeys(_ field: QueryField) -> [String]? {
        switch field {
        case .status: return ["status"]
        case .duration: return ["requestDuration", "totalDuration", "duration"]
        case .latency: return ["latency"]
        case .wait: return ["wait"]
        case .size: return ["size", "bodySize", "bytesFromUpstream"]
        case .requestSize: return ["bodySize", "bytesFromClient"]
        case .responseJSON(let pointer), .requestJSON(let pointer):
            guard let last = pointer.tokens.last, !isArrayIndex(last), isVerbatim(last) else { return nil }
            return [last]
        default: return nil
        }
    }

    /// The longest run of `text` the writer copies verbatim; `.anything` when it is shorter than
    /// two bytes (a one-letter needle would only cost time). With `json`, the text may be compact
    /// JSON the line spells with whitespace, so runs also end at structural characters.
    private static func literal(_ text: String, caseInsensitive: Bool, whole: Bool = false, json: Bool = false) -> Requirement {
        // Unicode case folding can turn non-ASCII text into ASCII (`ß` is `ss`, `İ` lowers to
        // `i` and a combining dot), so a folded non-ASCII needle names no bytes for certain.
        if caseInsensitive, !text.utf8.allSatisfy({ $0 < 0x80 }) { return .anything }
        if whole {
            return isVerbatim(text) ? .contains(.literal(Array(caseInsensitive ? text.lowercased().utf8 : text.utf8), caseInsensitive: caseInsensitive)) : .anything
        }
        var best: [UInt8] = []
        var run: [UInt8] = []
        for byte in text.utf8 {
            if isVerbatimByte(byte), !(json && isStructural(byte)) {
                run.append(caseInsensitive ? TextSearch.lower(byte) : byte)
                if run.count > best.count { best = run }
            } else {
                run = []
            }
        }
        guard best.count >= 2 else { return .anything }
        return .contains(.literal(best, caseInsensitive: caseInsensitive))
    }

    /// A pointer token that may name an array element: its value sits under no key.
    private static func isArrayIndex(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }

    /// The bytes JSON allows whitespace around (outside strings).
    private static func isStructural(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ",") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "[") || byte == UInt8(ascii: "]")
            || byte == UInt8(ascii: "{") || byte == UInt8(ascii: "}")
    }

    private static func isVerbatim(_ text: String) -> Bool { text.utf8.allSatisfy(isVerbatimByte) }

    private static func isVerbatimByte(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    private static func simplify(_ requirement: Requirement) -> Requirement {
        switch requirement {
        case .allOf(let parts):
            let kept = parts.filter { if case .anything = $0 { return false } else { return true } }
            if kept.isEmpty { return .anything }
            return kept.count == 1 ? kept[0] : .allOf(kept)
        case .anyOf(let parts):
            if parts.contains(where: { if case .anything = $0 { return true } else { return false } }) { return .anything }
            return parts.count == 1 ? parts[0] : .anyOf(parts)
        default:
            return requirement
        }
    }

    /// The needles a line must contain one of for `requirement` to hold; nil when any line may.
    static func anchors(_ requirement: Requirement) -> [Needle]? {
        switch requirement {
        case .anything:
            return nil
        case .contains(let needle):
            return [needle]
        case .anyOf(let parts):
            var all: [Needle] = []
            for part in parts {
                guard let needles = anchors(part) else { return nil }
                all += needles
            }
            return all
        case .allOf(let parts):
            // Any one part's anchors will do: take the most selective.
            return parts.compactMap(anchors).max { selectivity($0) < selectivity($1) }
        }
    }

    private static func selectivity(_ needles: [Needle]) -> Int {
        needles.map(\.selectivity).min() ?? 0
    }
}
