extension JSON {
    /// Replaces the value of every object member whose key is in `keys`, compared ASCII
    /// case-insensitively (`Token` matches `token`), at any depth, inside arrays too.
    /// A replaced value is not searched further. Keys in `keys` are lowercased (ASCII)
    /// here as well, so a mixed-case set still works.
    /// - Parameters:
    ///   - keys: Member names, any case.
    ///   - replacement: What a matched value becomes; default the string `[redacted]`.
    public func redactingKeys(_ keys: Set<String>, with replacement: JSON = .string("[redacted]")) -> JSON {
        guard !keys.isEmpty else { return self }
        let matcher = KeyMatcher(keys)
        return JSON.redactKeys(self, matcher, replacement)
    }

    private static func redactKeys(_ value: JSON, _ matcher: KeyMatcher, _ replacement: JSON) -> JSON {
        switch value {
        case .object(var members):
            for i in members.indices {
                if matcher.matches(members[i].key) {
                    members[i].value = replacement
                } else if members[i].value.isContainer {
                    members[i].value = redactKeys(members[i].value, matcher, replacement)
                }
            }
            return .object(members)
        case .array(var elements):
            for i in elements.indices where elements[i].isContainer {
                elements[i] = redactKeys(elements[i], matcher, replacement)
            }
            return .array(elements)
        default:
            return value
        }
    }

    fileprivate var isContainer: Bool {
        switch self {
        case .object, .array: return true
        default: return false
        }
    }
}

/// Compares keys without allocating for the common case: a length that no redacted key
/// has is rejected at once, and a key without ASCII capitals is looked up as it is.
private struct KeyMatcher {
    let keys: Set<String>
    let lengths: Set<Int>

    init(_ keys: Set<String>) {
        let lowered = Set(keys.map(KeyMatcher.asciiLowercased))
        self.keys = lowered
        lengths = Set(lowered.map { $0.utf8.count })
    }

    func matches(_ key: String) -> Bool {
        guard lengths.contains(key.utf8.count) else { return false }
        if key.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) {
            return keys.contains(KeyMatcher.asciiLowercased(key))
        }
        return keys.contains(key)
    }

    static func asciiLowercased(_ text: String) -> String {
        String(decoding: text.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
