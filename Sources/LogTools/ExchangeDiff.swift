import ResponseSerialization

/// `tapwire diff ID1 ID2`: how two exchanges differ, structurally: method and URL, status,
/// request and response header fields (added, removed, changed; names compared without case,
/// repeated fields as lists), and the logged JSON values (request body and response value)
/// leaf by leaf, each difference named by its JSON Pointer:
///
///     status: 200 → 404
///     response header Content-Length: 312 → 18
///     response header + Retry-After: 5
///     response /items/3/price: 9.99 → 10.49
///     response /items/4: + {"id":5}
///
/// Numbers compare by exact value (`ExactNumber`, no rounding through `Double`), so `1.50` and
/// `1.5` are the same value however each side wrote it; a difference prints both texts as recorded.
/// Timing, ids and other per-exchange facts (Date, client port) are not compared, except header
/// fields, which are compared as sent.
public struct ExchangeDiff {
    public private(set) var lines: [String] = []
    public var isEmpty: Bool { lines.isEmpty }

    public init(_ a: JSON, _ b: JSON) {
        let left = RecordView(json: a), right = RecordView(json: b)
        scalar("kind", left.kind, right.kind)
        scalar("method", left.method, right.method)
        scalar("url", left.url, right.url)
        scalar("status", left.status.map(String.init), right.status.map(String.init))
        scalar("error", left.transportError?.code, right.transportError?.code)
        scalar("failure", left.resultFailure.map { [$0.error, $0.reason ?? ""].joined(separator: " ") },
               right.resultFailure.map { [$0.error, $0.reason ?? ""].joined(separator: " ") })
        headers("request header", left.request, right.request)
        headers("response header", left.response, right.response)
        values("request body", left.request?[member: "body"], right.request?[member: "body"])
        values("response", left.successValue, right.successValue)
    }

    public var text: String { lines.map { $0 + "\n" }.joined() }

    private mutating func scalar(_ name: String, _ a: String?, _ b: String?) {
        guard a != b else { return }
        lines.append("\(name): \(a.map { ExchangeDetail.clean($0) } ?? "-") → \(b.map { ExchangeDetail.clean($0) } ?? "-")")
    }

    private mutating func headers(_ label: String, _ a: JSON?, _ b: JSON?) {
        let left = ExchangeDiff.fields(a), right = ExchangeDiff.fields(b)
        var seen = Set<String>()
        for name in left.map(\.key) + right.map(\.key) where seen.insert(name.lowercased()).inserted {
            let lower = name.lowercased()
            let l = left.first { $0.key.lowercased() == lower }, r = right.first { $0.key.lowercased() == lower }
            let shown = ExchangeDetail.clean(r?.key ?? l?.key ?? name)
            switch (l?.values, r?.values) {
            case (nil, let added?): lines.append("\(label) + \(shown): \(ExchangeDiff.joined(added))")
            case (let removed?, nil): lines.append("\(label) - \(shown): \(ExchangeDiff.joined(removed))")
            case (let was?, let now?) where was != now:
                lines.append("\(label) \(shown): \(ExchangeDiff.joined(was)) → \(ExchangeDiff.joined(now))")
            default: break
            }
        }
    }

    /// Header fields by name (first spelling kept), the values of repeated fields in order.
    private static func fields(_ message: JSON?) -> [(key: String, values: [String])] {
        guard case .array(let pairs)? = message?[member: "headers"] else { return [] }
        var out: [(key: String, values: [String])] = []
        for pair in pairs {
            guard case .array(let parts) = pair, parts.count >= 2,
                  let name = parts[0].stringValue, let value = parts[1].stringValue else { continue }
            if let i = out.firstIndex(where: { $0.key.lowercased() == name.lowercased() }) {
                out[i].values.append(value)
            } else {
                out.append((name, [value]))
            }
        }
        return out
    }

    private static func joined(_ values: [String]) -> String {
        values.map { ExchangeDetail.clean($0) }.joined(separator: ", ")
    }

    private mutating func values(_ label: String, _ a: JSON?, _ b: JSON?) {
        switch (a, b) {
        case (nil, nil): return
        case (nil, let b?): lines.append("\(label): + \(ExchangeDiff.compact(b))")
        case (let a?, nil): lines.append("\(label): - \(ExchangeDiff.compact(a))")
        case (let a?, let b?): compare(label, a, b, at: [])
        }
    }

    private mutating func compare(_ label: String, _ a: JSON, _ b: JSON, at tokens: [String]) {
        let here = label + " " + (tokens.isEmpty ? "(root)" : JSONPointer(tokens: tokens).description)
        switch (a, b) {
        case (.object(let l), .object(let r)):
            // By key: member order is not a difference worth a line each (it shows in the value
            // when a key is added or removed). Duplicate keys pair up in order.
            var rightUsed = [Bool](repeating: false, count: r.count)
            var leftCounts: [String: Int] = [:]
            for member in l {
                let nth = leftCounts[member.key, default: 0]
                leftCounts[member.key] = nth + 1
                let matches = r.indices.filter { r[$0].key == member.key }
                if nth < matches.count {
                    rightUsed[matches[nth]] = true
                    compare(label, member.value, r[matches[nth]].value, at: tokens + [member.key])
                } else {
                    lines.append("\(label) \(JSONPointer(tokens: tokens + [member.key]).description): - \(ExchangeDiff.compact(member.value))")
                }
            }
            for (i, member) in r.enumerated() where !rightUsed[i] {
                lines.append("\(label) \(JSONPointer(tokens: tokens + [member.key]).description): + \(ExchangeDiff.compact(member.value))")
            }
        case (.array(let l), .array(let r)):
            for i in 0..<max(l.count, r.count) {
                let path = JSONPointer(tokens: tokens + [String(i)]).description
                if i >= r.count {
                    lines.append("\(label) \(path): - \(ExchangeDiff.compact(l[i]))")
                } else if i >= l.count {
                    lines.append("\(label) \(path): + \(ExchangeDiff.compact(r[i]))")
                } else {
                    compare(label, l[i], r[i], at: tokens + [String(i)])
                }
            }
        case (.number(let l), .number(let r)):
            if let x = ExactNumber(l), let y = ExactNumber(r), x == y { return }
            if l != r { lines.append("\(here): \(l) → \(r)") }
        default:
            if a != b { lines.append("\(here): \(ExchangeDiff.compact(a)) → \(ExchangeDiff.compact(b))") }
        }
    }

    /// Compact JSON, cut at 200 characters: a diff line names a value, it need not hold a document.
    static func compact(_ value: JSON) -> String {
        let text = value.compactText
        return text.count > 200 ? String(text.prefix(199)) + "…" : text
    }
}
