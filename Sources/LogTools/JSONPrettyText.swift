import ResponseSerialization

/// A JSON value indented for reading: members in the record's order (duplicates kept), every
/// number as its source text (never through Double, so `9.990` and `1e400` stay as sent).
public enum JSONPrettyText {
    public static func render(_ value: JSON, indent: String = "  ") -> String {
        var out: [UInt8] = []
        write(value, level: 0, indent: Array(indent.utf8), into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func write(_ value: JSON, level: Int, indent: [UInt8], into out: inout [UInt8]) {
        func newline(_ depth: Int) {
            out.append(10)
            for _ in 0..<depth { out.append(contentsOf: indent) }
        }
        switch value {
        case .array(let items):
            guard !items.isEmpty else { out.append(contentsOf: Array("[]".utf8)); return }
            // A short array of scalars (a header pair, a few numbers) reads better on one line.
            if let inline = inlineScalars(items) { out.append(contentsOf: inline); return }
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                write(item, level: level + 1, indent: indent, into: &out)
            }
            newline(level)
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else { out.append(contentsOf: Array("{}".utf8)); return }
            out.append(UInt8(ascii: "{"))
            for (i, member) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                newline(level + 1)
                JSONWriter.appendQuoted(member.key, into: &out)
                out.append(contentsOf: Array(": ".utf8))
                write(member.value, level: level + 1, indent: indent, into: &out)
            }
            newline(level)
            out.append(UInt8(ascii: "}"))
        default:
            // Scalars: the compact writer keeps number text and escapes strings.
            JSONWriter.write(value, into: &out)
        }
    }

    static let inlineWidth = 72

    /// `[1, 2, "x"]` when every item is a scalar and the line stays within `inlineWidth`.
    static func inlineScalars(_ items: [JSON]) -> [UInt8]? {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (i, item) in items.enumerated() {
            switch item {
            case .array, .object: return nil
            default: break
            }
            if i > 0 { out.append(contentsOf: [UInt8(ascii: ","), UInt8(ascii: " ")]) }
            JSONWriter.write(item, into: &out)
            if out.count > inlineWidth { return nil }
        }
        out.append(UInt8(ascii: "]"))
        return out
    }
}
