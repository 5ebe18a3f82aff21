import ExchangeLog
import Foundation
import ResponseSerialization

/// A `QueryExpression` compiled into nested closures over a parsed record: regexes are compiled
/// and relative times resolved once, here. Evaluation never fails; a record without the field
/// tested does not match (and `!=` / `not` then do).
struct QueryEvaluator: @unchecked Sendable {
    typealias Test = (RecordView) -> Bool
    let test: Test

    init(_ expression: QueryExpression, now: Double) {
        test = QueryEvaluator.compile(expression, now: now)
    }

    func matches(_ record: JSON) -> Bool {
        guard case .object = record else { return false }
        return test(RecordView(json: record))
    }

    private static func compile(_ expression: QueryExpression, now: Double) -> Test {
        switch expression {
        case .all:
            return { _ in true }
        case .and(let terms):
            let tests = terms.map { compile($0, now: now) }
            return { view in tests.allSatisfy { $0(view) } }
        case .or(let terms):
            let tests = terms.map { compile($0, now: now) }
            return { view in tests.contains { $0(view) } }
        case .not(let inner):
            let test = compile(inner, now: now)
            return { view in !test(view) }
        case .exists(let field):
            return { view in exists(field, view) }
        case .compare(let field, let op, let value):
            return compare(field, op, value, now: now)
        case .text(let needle):
            let search = TextSearch(needle)
            return { view in searchableTexts(view).contains { search.found(in: $0) } }
        case .bodyRegex(let pattern, let side):
            let regex = compileRegex(pattern, lines: false)
            return { view in bodies(view, side).contains { regex.found(in: $0) } }
        case .headerLineRegex(let pattern, let side):
            let regex = compileRegex(pattern, lines: true)
            return { view in
                messages(view, side).contains { message in
                    regex.found(in: view.headers(of: message).map { $0.0.lowercased() + ": " + $0.1 }.joined(separator: "\n"))
                }
            }
        case .contentTypeRegex(let pattern, let side):
            let regex = compileRegex(pattern, lines: false)
            return { view in
                messages(view, side).contains { message in
                    view.headers(of: message).contains { $0.0.lowercased() == "content-type" && regex.found(in: $0.1) }
                }
            }
        case .hasResponse:
            return { view in view.response != nil }
        case .requestWithoutResponse:
            return { view in view.request != nil && view.response == nil }
        case .asset:
            return { view in
                guard let response = view.response else { return false }
                return view.headers(of: response).contains { name, value in
                    name.lowercased() == "content-type" && QueryEvaluator.isAsset(value.lowercased())
                }
            }
        }
    }

    /// `type=`: a serializer name (`json`, `string`, `data`…), a MIME subtype or `+suffix` of the
    /// response type (`json` also keeps `application/problem+json`), or a full type (`text/*`).
    /// A glob as `type=`: against the serializer, the full type, the subtype or a `+suffix`.
    static func typeMatches(_ glob: Glob, _ view: RecordView) -> Bool {
        if let serializer = view.serializer, glob.matches(serializer) { return true }
        guard let mime = view.mimeType?.lowercased() else { return false }
        let essence = mime.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? mime
        if glob.matches(essence) { return true }
        guard let slash = essence.firstIndex(of: "/") else { return false }
        let subtype = String(essence[essence.index(after: slash)...])
        if glob.matches(subtype) { return true }
        guard let plus = subtype.lastIndex(of: "+") else { return false }
        return glob.matches(String(subtype[subtype.index(after: plus)...]))
    }

    static func typeMatches(_ wanted: String, _ view: RecordView) -> Bool {
        if let serializer = view.serializer, serializer.lowercased() == wanted { return true }
        guard let mime = view.mimeType?.lowercased() else { return false }
        let essence = mime.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? mime
        if wanted.contains("/") { return Glob(wanted).matches(essence) }
        guard let slash = essence.firstIndex(of: "/") else { return false }
        let subtype = essence[essence.index(after: slash)...]
        return subtype == wanted || subtype.hasSuffix("+" + wanted)
    }

    static func isAsset(_ contentType: String) -> Bool {
        ["text/javascript", "application/x-javascript", "application/javascript", "text/css", "image/",
         "application/x-shockwave-flash"].contains { contentType.contains($0) }
    }

    // MARK: Fields

    static func exists(_ field: QueryField, _ view: RecordView) -> Bool {
        switch field {
        case .error:
            // The older filter word: a transport error, a failed result, or lost records.
            return view.kind == "loss" || view.transportError != nil || view.resultFailure != nil
        case .failure:
            return view.resultFailure != nil
        default:
            return values(field, view).contains { $0 != .null }
        }
    }

    /// The record's values for `field` (several for repeated headers or duplicate JSON keys).
    static func values(_ field: QueryField, _ view: RecordView) -> [JSON] {
        let json = view.json
        func one(_ value: JSON?) -> [JSON] {
            guard let value, value != .null else { return [] }
            return [value]
        }
        func string(_ text: String?) -> [JSON] { text.map { [.string($0)] } ?? [] }
        /// The first of `candidates` present and not null: a written `null` falls through to the
        /// next source as a missing member does.
        func first(_ candidates: JSON?...) -> [JSON] { one(candidates.first { $0 != nil && $0 != .null } ?? nil) }
        switch field {
        case .id: return one(json[member: "id"])
        case .kind: return [.string(view.kind)]
        case .method: return string(view.method ?? (view.kind == "tunnel" ? "CONNECT" : nil))
        case .url: return string(view.url)
        case .host: return string(view.host)
        case .path: return string(view.path)
        case .query: return string(view.url.flatMap { URLParts($0).query })
        case .status: return view.status.map { [.number(String($0))] } ?? []
        case .type: return string(view.serializer)
        case .mime: return string(view.mimeType)
        case .rule: return one(json[member: "rule"])
        case .error: return string(view.transportError?.code)
        case .failure: return string(view.resultFailure.map { $0.reason ?? $0.error })
        case .client: return one(json[member: "client"])
        case .upstream: return one(json[path: "metrics", "upstream"])
        case .duration:
            return first(json[path: "timeline", "requestDuration"], json[path: "timeline", "totalDuration"], json[member: "duration"])
        case .latency: return one(json[path: "timeline", "latency"])
        case .wait: return one(json[path: "metrics", "wait"])
        case .size:
            // Tunnels and WebSockets: the bytes relayed, not the upgrade response's empty body.
            if view.kind == "tunnel" || view.kind == "websocket" { return one(json[member: "bytesFromUpstream"]) }
            guard let response = view.response else { return [] }
            return first(json[path: "data", "size"], response[member: "bodySize"])
        case .requestSize:
            if view.kind == "tunnel" || view.kind == "websocket" { return one(json[member: "bytesFromClient"]) }
            return one(view.request?[member: "bodySize"])
        case .time:
            return first(json[path: "timeline", "requestStartTime"], json[member: "startTime"], json[member: "time"])
        case .requestHeader(let name):
            guard let request = view.request else { return [] }
            return view.headers(of: request).filter { $0.0.lowercased() == name }.map { .string($0.1) }
        case .responseHeader(let name):
            guard let response = view.response else { return [] }
            return view.headers(of: response).filter { $0.0.lowercased() == name }.map { .string($0.1) }
        case .responseJSON(let pointer):
            guard let value = view.successValue else { return [] }
            return value.values(at: pointer)
        case .requestJSON(let pointer):
            guard let body = view.request?[member: "body"] else { return [] }
            return body.values(at: pointer)
        }
    }

    // MARK: Comparisons

    private static func compare(_ field: QueryField, _ op: QueryOperator, _ value: QueryValue, now: Double) -> Test {
        if op == .notEqual {
            let equal = compare(field, .equal, value, now: now)
            return { view in !equal(view) }
        }
        let folded = QueryValueReader.caseInsensitive(field)
        switch value {
        case .statuses(let patterns):
            return { view in view.status.map { status in patterns.contains { $0.matches(status) } } ?? false }
        case .anyOf(let wanted):
            switch field {
            case .type:
                return { view in wanted.contains { typeMatches($0, view) } }
            default:
                let normalize: (String) -> String = field == .method ? { $0.uppercased() } : { $0.lowercased() }
                return { view in values(field, view).contains { $0.stringValue.map { wanted.contains(normalize($0)) } ?? false } }
            }
        case .anyGlob(let globs):
            if field == .type {
                return { view in globs.contains { typeMatches($0, view) } }
            }
            return { view in values(field, view).contains { value in globs.contains { $0.matches(text(of: value)) } } }
        case .glob(let glob):
            if field == .host, glob.pattern.contains(":") {
                // A glob with a port (`api.local:8080`) is matched against host:port as written.
                return { view in
                    if let host = view.host, glob.matches(host) { return true }
                    if let url = view.url { return glob.matches(URLParts(url).authority) }
                    if let target = view.json[member: "target"]?.stringValue { return glob.matches(target) }
                    return false
                }
            }
            return { view in values(field, view).contains { glob.matches(text(of: $0)) } }
        case .text(let wanted):
            let key = folded ? wanted.lowercased() : wanted
            if field == .host, op == .equal, wanted.contains(":") {
                let glob = Glob(wanted, caseInsensitive: true)
                return compare(field, op, .glob(glob), now: now)
            }
            return { view in
                values(field, view).contains { value in
                    guard case .string(let s) = value else { return op == .equal && text(of: value) == wanted }
                    return order(folded ? s.lowercased() : s, key, op)
                }
            }
        case .number(let wanted):
            return { view in
                values(field, view).contains { value in
                    guard case .number(let text) = value, let number = ExactNumber(text) else { return false }
                    return order(number, wanted, op)
                }
            }
        case .time(let stamp):
            return { view in timeMatches(view, stamp, op) }
        case .relativeTime(let offset):
            let stamp = now + offset
            return { view in timeMatches(view, stamp, op) }
        case .regex(let pattern):
            let regex = compileRegex(pattern, lines: false)
            return { view in values(field, view).contains { regex.found(in: text(of: $0)) } }
        case .literal(let wanted):
            return { view in values(field, view).contains { $0 == wanted } }
        }
    }

    private static func timeMatches(_ view: RecordView, _ stamp: Double, _ op: QueryOperator) -> Bool {
        values(.time, view).contains { value in
            guard let text = value.stringValue, let seconds = RFC3339Reader.seconds(text) else { return false }
            return order(seconds, stamp, op)
        }
    }

    private static func order<T: Comparable>(_ a: T, _ b: T, _ op: QueryOperator) -> Bool {
        switch op {
        case .equal: return a == b
        case .notEqual: return a != b
        case .less: return a < b
        case .lessOrEqual: return a <= b
        case .greater: return a > b
        case .greaterOrEqual: return a >= b
        case .regex: return false
        }
    }

    /// A value as text: strings as they are, anything else as its compact JSON.
    static func text(of value: JSON) -> String {
        switch value {
        case .string(let s): return s
        case .number(let n): return n
        default: return value.compactText
        }
    }

    // MARK: Text and bodies

    /// What a bare word searches: the URL (or tunnel target), every header value, the decoded
    /// request body and the logged response value.
    static func searchableTexts(_ view: RecordView) -> [String] {
        var texts: [String] = []
        if let url = view.url { texts.append(url) }
        if let target = view.json[member: "target"]?.stringValue { texts.append(target) }
        for message in [view.request, view.response].compactMap({ $0 }) {
            texts += view.headers(of: message).map(\.1)
        }
        texts += bodies(view, .either)
        return texts
    }

    static func bodies(_ view: RecordView, _ side: QueryMessageSide) -> [String] {
        var texts: [String] = []
        if side != .response, let body = view.request?[member: "body"], body != .null { texts.append(text(of: body)) }
        if side != .request, let value = view.successValue, value != .null { texts.append(text(of: value)) }
        return texts
    }

    static func messages(_ view: RecordView, _ side: QueryMessageSide) -> [JSON] {
        switch side {
        case .request: return [view.request].compactMap { $0 }
        case .response: return [view.response].compactMap { $0 }
        case .either: return [view.request, view.response].compactMap { $0 }
        }
    }

    static func compileRegex(_ pattern: String, lines: Bool) -> QueryRegex {
        QueryRegex(pattern, anchorsMatchLines: lines)
    }
}
