import Foundation
import ResponseSerialization

/// A filter word the CLI could not use. `description` is the one line the CLI prints before exiting 2.
public struct RecordFilterError: Error, Sendable, Equatable, CustomStringConvertible {
    public var word: String
    public var message: String
    public init(word: String, message: String) { self.word = word; self.message = message }
    public var description: String { "filter '\(word)': \(message)" }
}

/// The filter words of `tapwire tail` and `tapwire har`:
///
/// | word | keeps |
/// |---|---|
/// | `host=GLOB` | URL host (or tunnel target host), case-insensitive, port ignored unless the glob has `:` |
/// | `path=GLOB` | URL path without the query |
/// | `status=404`, `4xx`, `200-299` | response status (tunnels: the status answered to the client) |
/// | `method=GET` | request method, case-insensitive (tunnels: `CONNECT`) |
/// | `type=json` | serializer name (`json`, `string`, `data`, …), a MIME subtype or `+suffix` of the response type (`json` also keeps `application/problem+json`), or a full type `text/html` (`*` globs) |
/// | `error` | a transport error, a `result.failure`, a tunnel ended by an error, or a loss record |
///
/// Globs use `*` for any run of characters. `status`, `method` and `type` take several values
/// separated by `,` or `|`. Different words must all match; repeating one kind of word
/// (`status=4xx status=5xx`) keeps records matching any of them. Loss records only match `error`
/// (or no filter at all).
public struct RecordFilter: Sendable, Equatable {
    enum Condition: Sendable, Equatable {
        case host(String)
        case path(String)
        case status([StatusRange])
        case method([String])
        case type([String])
        case error

        var kind: Int {
            switch self {
            case .host: return 0
            case .path: return 1
            case .status: return 2
            case .method: return 3
            case .type: return 4
            case .error: return 5
            }
        }
    }

    struct StatusRange: Sendable, Equatable {
        var lower: Int
        var upper: Int
    }

    /// Conditions grouped by kind: all groups must match, any condition within a group.
    let groups: [[Condition]]

    /// Keeps every record.
    public static let all = RecordFilter(groups: [])

    public var isEmpty: Bool { groups.isEmpty }

    init(groups: [[Condition]]) { self.groups = groups }

    public static func parse(_ words: [String]) throws(RecordFilterError) -> RecordFilter {
        var byKind: [Int: [Condition]] = [:]
        var order: [Int] = []
        for word in words {
            let condition = try parseWord(word)
            if byKind[condition.kind] == nil { order.append(condition.kind) }
            byKind[condition.kind, default: []].append(condition)
        }
        return RecordFilter(groups: order.compactMap { byKind[$0] })
    }

    static let usage = "expected host=GLOB, path=GLOB, status=404|4xx|200-299, method=NAME, type=NAME or error"

    private static func parseWord(_ word: String) throws(RecordFilterError) -> Condition {
        if word == "error" { return .error }
        guard let equals = word.firstIndex(of: "=") else {
            throw RecordFilterError(word: word, message: "unknown filter; " + usage)
        }
        let key = String(word[..<equals])
        let value = String(word[word.index(after: equals)...])
        func values() throws(RecordFilterError) -> [String] {
            let parts = value.split(whereSeparator: { $0 == "," || $0 == "|" }).map(String.init)
            guard !parts.isEmpty, !parts.contains(where: \.isEmpty) else {
                throw RecordFilterError(word: word, message: "missing value")
            }
            return parts
        }
        switch key {
        case "host", "path":
            guard !value.isEmpty else { throw RecordFilterError(word: word, message: "missing value") }
            return key == "host" ? .host(value.lowercased()) : .path(value)
        case "status":
            var ranges: [StatusRange] = []
            for part in try values() {
                guard let range = parseStatus(part) else {
                    throw RecordFilterError(word: word,
                                            message: "'\(part)' is not a status; expected 404, 4xx or 200-299")
                }
                ranges.append(range)
            }
            return .status(ranges)
        case "method":
            let methods = try values()
            for method in methods where !method.allSatisfy({ $0.isLetter || $0 == "-" || $0 == "_" }) {
                throw RecordFilterError(word: word, message: "'\(method)' is not a method name")
            }
            return .method(methods.map { $0.uppercased() })
        case "type":
            return .type(try values().map { $0.lowercased() })
        case "error":
            throw RecordFilterError(word: word, message: "'error' takes no value")
        default:
            throw RecordFilterError(word: word, message: "unknown filter '\(key)='; " + usage)
        }
    }

    /// `404`, `4xx` (`4XX`), `200-299`; codes are three digits from 100 to 599.
    static func parseStatus(_ text: String) -> StatusRange? {
        let lower = text.lowercased()
        if lower.count == 3, lower.hasSuffix("xx"), let first = lower.first?.wholeNumberValue, (1...5).contains(first) {
            return StatusRange(lower: first * 100, upper: first * 100 + 99)
        }
        let bounds = lower.split(separator: "-", omittingEmptySubsequences: false)
        let codes = bounds.compactMap { part -> Int? in
            guard part.count == 3, part.allSatisfy({ $0.isASCII && $0.isNumber }), let code = Int(part),
                  (100...599).contains(code) else { return nil }
            return code
        }
        guard codes.count == bounds.count else { return nil }
        switch codes.count {
        case 1: return StatusRange(lower: codes[0], upper: codes[0])
        case 2 where codes[0] <= codes[1]: return StatusRange(lower: codes[0], upper: codes[1])
        default: return nil
        }
    }

    // MARK: Matching

    /// Whether a parsed record passes. A line that is not a JSON object passes only the empty filter.
    public func matches(_ record: JSON) -> Bool {
        if groups.isEmpty { return true }
        guard case .object = record else { return false }
        let view = RecordView(json: record)
        return groups.allSatisfy { group in group.contains { matches($0, view) } }
    }

    /// Parses `line` and matches it; unparseable lines pass only the empty filter.
    public func matches(line: [UInt8]) -> Bool {
        if groups.isEmpty { return true }
        guard let record = try? JSONParser.parse(line, allowFragments: false) else { return false }
        return matches(record)
    }

    private func matches(_ condition: Condition, _ view: RecordView) -> Bool {
        if view.kind == "loss" {
            if case .error = condition { return true }
            return false
        }
        switch condition {
        case .host(let glob):
            guard let host = view.host else { return false }
            if Glob.matches(glob, host) { return true }
            // A glob with a port (`api.local:8080`) is matched against host:port as written.
            guard glob.contains(":") else { return false }
            if let url = view.url { return Glob.matches(glob, URLParts(url).authority.lowercased()) }
            if let target = view.json[member: "target"]?.stringValue { return Glob.matches(glob, target.lowercased()) }
            return false
        case .path(let glob):
            guard let path = view.path else { return false }
            return Glob.matches(glob, path)
        case .status(let ranges):
            guard let status = view.status else { return false }
            return ranges.contains { $0.lower <= status && status <= $0.upper }
        case .method(let methods):
            let method = view.method?.uppercased() ?? (view.kind == "tunnel" ? "CONNECT" : nil)
            guard let method else { return false }
            return methods.contains(method)
        case .type(let types):
            return types.contains { RecordFilter.typeMatches($0, view) }
        case .error:
            return view.transportError != nil || view.resultFailure != nil
        }
    }

    static func typeMatches(_ wanted: String, _ view: RecordView) -> Bool {
        if let serializer = view.serializer, serializer.lowercased() == wanted { return true }
        guard let mime = view.mimeType?.lowercased() else { return false }
        let essence = mime.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? mime
        if wanted.contains("/") { return Glob.matches(wanted, essence) }
        guard let slash = essence.firstIndex(of: "/") else { return false }
        let subtype = essence[essence.index(after: slash)...]
        return subtype == wanted || subtype.hasSuffix("+" + wanted)
    }
}

/// `*` matches any run of characters (including none, and `/`); everything else matches itself.
enum Glob {
    static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.utf8)
        let t = Array(text.utf8)
        var pi = 0, ti = 0
        var star = -1, mark = 0
        while ti < t.count {
            if pi < p.count && p[pi] == UInt8(ascii: "*") {
                star = pi
                mark = ti
                pi += 1
            } else if pi < p.count && p[pi] == t[ti] {
                pi += 1
                ti += 1
            } else if star >= 0 {
                pi = star + 1
                mark += 1
                ti = mark
            } else {
                return false
            }
        }
        while pi < p.count && p[pi] == UInt8(ascii: "*") { pi += 1 }
        return pi == p.count
    }
}
