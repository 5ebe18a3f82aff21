/// Why a text is not an RFC 6901 JSON Pointer.
public struct JSONPointerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The text that is not a pointer.
    public var pointer: String
    /// UTF-8 byte offset into `pointer` where the problem was found.
    public var offset: Int
    /// What is wrong.
    public var message: String
    /// - Parameters:
    ///   - pointer: The text.
    ///   - offset: UTF-8 byte offset of the problem.
    ///   - message: What is wrong.
    public init(pointer: String, offset: Int, message: String) {
        self.pointer = pointer; self.offset = offset; self.message = message
    }
    /// The pointer, what is wrong, and where.
    public var description: String { "invalid JSON Pointer \"\(pointer)\": \(message) at byte \(offset)" }
}

/// An RFC 6901 JSON Pointer such as `/owner/login` or `/items/0`.
///
/// - `""` is the whole document; `"/"` is the member whose key is the empty string.
/// - `~1` stands for `/` and `~0` for `~` inside a token; any other `~` is an error.
/// - A token selects an array element only when it is a decimal index without leading
///   zeros (`0`, `17`, not `01`) that is inside the array; `-` (RFC 6901's "past the end")
///   never selects anything.
/// - `JSON` keeps duplicate keys, so one token addresses every member with that key:
///   `values(at:)`, `selecting` and `redacting` act on all of them; `value(at:)`
///   returns the first match in document order.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    /// The unescaped reference tokens; empty for the whole document.
    public var tokens: [String]

    /// Parses a pointer's text (`""`, `/a/b`, `/items/0`, `/a~1b`).
    /// - Parameter text: The pointer as written in a rule.
    public init(_ text: String) throws(JSONPointerError) {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty else { tokens = []; return }
        guard utf8[0] == UInt8(ascii: "/") else {
            throw JSONPointerError(pointer: text, offset: 0, message: "must be empty or start with '/'")
        }
        var tokens: [String] = []
        var current: [UInt8] = []
        var i = 1
        while i < utf8.count {
            let byte = utf8[i]
            if byte == UInt8(ascii: "/") {
                tokens.append(String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
            } else if byte == UInt8(ascii: "~") {
                let next: UInt8? = i + 1 < utf8.count ? utf8[i + 1] : nil
                switch next {
                case UInt8(ascii: "0"): current.append(UInt8(ascii: "~"))
                case UInt8(ascii: "1"): current.append(UInt8(ascii: "/"))
                default: throw JSONPointerError(pointer: text, offset: i, message: "'~' must be followed by '0' or '1'")
                }
                i += 1
            } else {
                current.append(byte)
            }
            i += 1
        }
        tokens.append(String(decoding: current, as: UTF8.self))
        self.tokens = tokens
    }

    /// - Parameter tokens: Unescaped reference tokens; none for the whole document.
    public init(tokens: [String]) { self.tokens = tokens }

    /// The pointer's text, tokens escaped again.
    public var description: String {
        tokens.map { "/" + $0.replacingAll("~", with: "~0").replacingAll("/", with: "~1") }.joined()
    }

    /// The array index a token names, if it is one (RFC 6901: `0` or no leading zero).
    static func arrayIndex(_ token: String) -> Int? {
        let utf8 = token.utf8
        guard let first = utf8.first, utf8.count <= 18 else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

private extension String {
    func replacingAll(_ target: Character, with replacement: String) -> String {
        guard contains(target) else { return self }
        var result = ""
        for character in self {
            if character == target { result += replacement } else { result.append(character) }
        }
        return result
    }
}

/// Several pointers merged by their common prefixes, so one walk of the document serves them all.
private struct PointerTree {
    var isEnd = false
    var children: [String: PointerTree] = [:]

    init() {}

    init(_ pointers: [JSONPointer]) {
        for pointer in pointers { insert(pointer.tokens[...]) }
    }

    mutating func insert(_ tokens: ArraySlice<String>) {
        guard let first = tokens.first else { isEnd = true; return }
        children[first, default: PointerTree()].insert(tokens.dropFirst())
    }

    /// The children that name elements of an array of `count` elements, in index order.
    func elementChildren(count: Int) -> [(index: Int, tree: PointerTree)] {
        var picks: [(index: Int, tree: PointerTree)] = []
        for (token, tree) in children {
            if let index = JSONPointer.arrayIndex(token), index < count { picks.append((index, tree)) }
        }
        picks.sort { $0.index < $1.index }
        return picks
    }
}

// Traversals recurse once per nesting level; parsed documents are bounded by the parser's maxDepth.
extension JSON {
    /// Every value the pointer addresses, in document order (more than one only when
    /// an object on the way has duplicate keys).
    /// - Parameter pointer: What to look up.
    public func values(at pointer: JSONPointer) -> [JSON] {
        var current = [self]
        for token in pointer.tokens {
            var next: [JSON] = []
            for value in current {
                switch value {
                case .object(let members):
                    for member in members where member.key == token { next.append(member.value) }
                case .array(let elements):
                    if let index = JSONPointer.arrayIndex(token), index < elements.count { next.append(elements[index]) }
                default:
                    break
                }
            }
            if next.isEmpty { return [] }
            current = next
        }
        return current
    }

    /// The value the pointer addresses (the first in document order if duplicate keys
    /// make it address several), or nil when it addresses nothing.
    /// - Parameter pointer: What to look up.
    public func value(at pointer: JSONPointer) -> JSON? {
        values(at: pointer).first
    }

    /// Keeps only what the pointers address, inside the document's own structure and
    /// order (array elements keep their relative order and close up). A pointer that
    /// addresses nothing is ignored; `""` keeps everything. When nothing at all is kept
    /// the result is the root's empty container (`{}` or `[]`), or `null` for a scalar root.
    /// - Parameter pointers: What to keep.
    public func selecting(_ pointers: [JSONPointer]) -> JSON {
        let tree = PointerTree(pointers)
        if let kept = JSON.select(self, tree) { return kept }
        switch self {
        case .object: return .object([])
        case .array: return .array([])
        default: return .null
        }
    }

    private static func select(_ value: JSON, _ tree: PointerTree) -> JSON? {
        if tree.isEnd { return value }
        switch value {
        case .object(let members):
            var kept: [Member] = []
            for member in members {
                if let child = tree.children[member.key], let selected = select(member.value, child) {
                    kept.append(Member(member.key, selected))
                }
            }
            return kept.isEmpty ? nil : .object(kept)
        case .array(let elements):
            var kept: [JSON] = []
            for (index, child) in tree.elementChildren(count: elements.count) {
                if let selected = select(elements[index], child) { kept.append(selected) }
            }
            return kept.isEmpty ? nil : .array(kept)
        default:
            return nil
        }
    }

    /// Replaces every value the pointers address with `replacement`; pointers that
    /// address nothing are ignored. `""` replaces the whole document.
    /// - Parameters:
    ///   - pointers: What to replace.
    ///   - replacement: What it becomes; default the string `[redacted]`.
    public func redacting(_ pointers: [JSONPointer], with replacement: JSON = .string("[redacted]")) -> JSON {
        JSON.redact(self, PointerTree(pointers), replacement)
    }

    private static func redact(_ value: JSON, _ tree: PointerTree, _ replacement: JSON) -> JSON {
        if tree.isEnd { return replacement }
        if tree.children.isEmpty { return value }
        switch value {
        case .object(var members):
            for i in members.indices {
                if let child = tree.children[members[i].key] {
                    members[i].value = redact(members[i].value, child, replacement)
                }
            }
            return .object(members)
        case .array(var elements):
            for (index, child) in tree.elementChildren(count: elements.count) {
                elements[index] = redact(elements[index], child, replacement)
            }
            return .array(elements)
        default:
            return value
        }
    }
}
