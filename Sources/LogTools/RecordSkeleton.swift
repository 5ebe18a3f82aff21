import ResponseSerialization

/// A record line parsed into only the members a list row needs (`RecordSummary`): the
/// headers, the decoded body (`result.success`), the metrics and the rest are stepped over
/// without building values. The viewer's live rows at full load parse every new record;
/// the body and headers are most of a record's bytes and nearly all of its parse time.
///
/// Rules:
/// - What it returns is the record with the other members left out: `RecordSummary.json`
///   of it equals `RecordSummary.json` of the full parse (the tests hold it to that).
/// - Skipping does not validate: a line whose skipped parts are not JSON may still give a
///   skeleton. The lines are Tapwire's own records, and a row is only a summary; the full
///   record is parsed when it is opened. Structure it cannot follow gives nil, and the
///   caller parses the line in full.
/// - Memory-safe on any input: every index is checked against the line's length.
public enum RecordSkeleton {
    /// Top-level members kept whole (small scalars or small objects).
    private static let kept: Set<String> = ["id", "kind", "time", "startTime", "target", "serializer", "error", "rule",
                                           "replayOf", "bytesFromUpstream", "duration", "lost", "reason", "status",
                                           "size", "direction", "opcode", "connection"]
    /// Top-level objects of which only some members are kept.
    private static let nested: [String: Set<String>] = [
        "request": ["method", "url"],
        "response": ["status", "mimeType", "bodySize"],
        "result": ["failure"],
        "timeline": ["requestStartTime", "requestDuration"],
        "data": ["size"],
    ]

    public static func parse(_ line: [UInt8]) -> JSON? {
        line.withUnsafeBytes { bytes in
            var scanner = Scanner(bytes: bytes)
            return scanner.object(keeping: { key in
                if kept.contains(key) { return .whole }
                if let inner = nested[key] { return .some(inner) }
                return .skip
            })
        }
    }

    enum Keep {
        case whole, skip
        case some(Set<String>)
    }

    struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var i = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        mutating func whitespace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
        }

        mutating func expect(_ byte: UInt8) -> Bool {
            whitespace()
            guard i < bytes.count, bytes[i] == byte else { return false }
            i += 1
            return true
        }

        /// An object whose members `keep` decides about; nil when the structure is not followed.
        mutating func object(keeping keep: (String) -> Keep) -> JSON? {
            guard expect(UInt8(ascii: "{")) else { return nil }
            var members: [JSON.Member] = []
            whitespace()
            if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                whitespace()
                let keyStart = i
                guard skipString(), let key = decode(keyStart, i)?.stringValue, expect(UInt8(ascii: ":")) else { return nil }
                whitespace()
                switch keep(key) {
                case .skip:
                    guard skipValue() else { return nil }
                case .whole:
                    let start = i
                    guard skipValue(), let value = decode(start, i) else { return nil }
                    members.append(JSON.Member(key, value))
                case .some(let inner):
                    if i < bytes.count, bytes[i] == UInt8(ascii: "{") {
                        guard let value = object(keeping: { inner.contains($0) ? .whole : .skip }) else { return nil }
                        members.append(JSON.Member(key, value))
                    } else {
                        let start = i
                        guard skipValue(), let value = decode(start, i) else { return nil }
                        members.append(JSON.Member(key, value))
                    }
                }
                whitespace()
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
                if bytes[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
                return nil
            }
        }

        /// The value in `bytes[start..<end]`: a string without escapes, a number or a literal
        /// directly (most members of a row), anything else through the parser.
        func decode(_ start: Int, _ end: Int) -> JSON? {
            guard start < end, end <= bytes.count else { return nil }
            let value = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            switch value[0] {
            case UInt8(ascii: "\""):
                if value.count >= 2, value[value.count - 1] == UInt8(ascii: "\""),
                   !value.contains(where: { $0 == UInt8(ascii: "\\") || $0 < 0x20 }),
                   let text = String(validating: value[1..<(value.count - 1)], as: UTF8.self) {
                    return .string(text)
                }
            case UInt8(ascii: "n") where value.elementsEqual("null".utf8): return .null
            case UInt8(ascii: "t") where value.elementsEqual("true".utf8): return .bool(true)
            case UInt8(ascii: "f") where value.elementsEqual("false".utf8): return .bool(false)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                // The writer's own number text; the parser checks the grammar when it is odd.
                if value.allSatisfy({ ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }),
                   value[0] != UInt8(ascii: "0") || value.count == 1 || value[1] == UInt8(ascii: "."),
                   value[value.count - 1] != UInt8(ascii: "."), value.filter({ $0 == UInt8(ascii: ".") }).count <= 1 {
                    return .number(String(decoding: value, as: UTF8.self))
                }
            default: break
            }
            return try? JSONParser.parse(value, allowFragments: true)
        }

        /// Steps over a string starting at `i` (its opening quote); false if it does not end.
        mutating func skipString() -> Bool {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { return false }
            i += 1
            while i < bytes.count {
                let b = bytes[i]
                if b == UInt8(ascii: "\"") { i += 1; return true }
                i += b == UInt8(ascii: "\\") ? 2 : 1
            }
            return false
        }

        /// Steps over one value starting at `i`; false if it does not end inside the line.
        mutating func skipValue() -> Bool {
            guard i < bytes.count else { return false }
            switch bytes[i] {
            case UInt8(ascii: "\""):
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while i < bytes.count {
                    let b = bytes[i]
                    if b == UInt8(ascii: "\"") {
                        guard skipString() else { return false }
                        continue
                    }
                    if b == UInt8(ascii: "{") || b == UInt8(ascii: "[") { depth += 1 }
                    else if b == UInt8(ascii: "}") || b == UInt8(ascii: "]") {
                        depth -= 1
                        if depth == 0 { i += 1; return true }
                    }
                    i += 1
                }
                return false
            default:
                let start = i
                while i < bytes.count {
                    let b = bytes[i]
                    if b == UInt8(ascii: ",") || b == UInt8(ascii: "}") || b == UInt8(ascii: "]") || b == 0x20 || b == 0x0A
                        || b == 0x0D || b == 0x09 { break }
                    i += 1
                }
                return i > start
            }
        }
    }
}
