/// Member names whose values a log hides, prepared for matching raw key bytes:
/// ASCII case-insensitive, as `JSON.redactingKeys` compares them.
public struct JSONKeySet: Sendable, Equatable {
    /// Lower-cased (ASCII) keys, indexed by byte length: a key is looked up with no hashing.
    let keysByLength: [[[UInt8]]]
    /// Bit n set when some key is n bytes long (n < 64): most keys are rejected on length alone.
    let shortLengths: UInt64

    public init<S: Sequence>(_ keys: S) where S.Element == String {
        var byLength: [[[UInt8]]] = []
        var lengths: UInt64 = 0
        for key in keys {
            let lowered = key.utf8.map(JSONKeySet.asciiLower)
            while byLength.count <= lowered.count { byLength.append([]) }
            if byLength[lowered.count].contains(lowered) { continue }
            byLength[lowered.count].append(lowered)
            if lowered.count < 64 { lengths |= 1 << UInt64(lowered.count) }
        }
        keysByLength = byLength
        shortLengths = lengths
    }

    public var isEmpty: Bool { keysByLength.isEmpty }

    @inline(__always)
    static func asciiLower(_ c: UInt8) -> UInt8 { (c >= 65 && c <= 90) ? c | 0x20 : c }

    /// Whether the (decoded) key bytes name a redacted member.
    @inline(__always)
    func matches(_ key: UnsafePointer<UInt8>, count: Int) -> Bool {
        if count < 64 && shortLengths & (1 << UInt64(count)) == 0 { return false }
        guard count < keysByLength.count else { return false }
        for candidate in keysByLength[count] {
            var equal = true
            for i in 0..<count where JSONKeySet.asciiLower(key[i]) != candidate[i] {
                equal = false
                break
            }
            if equal { return true }
        }
        return false
    }

    /// `value` with the value of every member named by this set replaced by
    /// `"[redacted]"`, at any depth, inside arrays too; a replaced value is not searched further.
    public func redacting(_ value: JSON) -> JSON {
        guard !isEmpty else { return value }
        switch value {
        case .object(var members):
            for i in members.indices {
                if matches(members[i].key) {
                    members[i].value = .string("[redacted]")
                } else if members[i].value.isJSONContainer {
                    members[i].value = redacting(members[i].value)
                }
            }
            return .object(members)
        case .array(var elements):
            for i in elements.indices where elements[i].isJSONContainer {
                elements[i] = redacting(elements[i])
            }
            return .array(elements)
        default:
            return value
        }
    }

    public func matches(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { utf8 -> Bool in
            guard let base = utf8.baseAddress else { return !keysByLength.isEmpty && !keysByLength[0].isEmpty }
            return matches(base, count: utf8.count)
        }
    }
}

extension JSON {
    var isJSONContainer: Bool {
        switch self {
        case .object, .array: return true
        default: return false
        }
    }
}

/// Validates a JSON document and writes its compact text in one pass, without
/// building a `JSON` value: the output is byte for byte what
/// `JSONWriter.write(JSONParser.parse(input).redactingKeys(keys))` gives (same
/// member order, duplicates, number text, canonical string escapes, `"[redacted]"`
/// for the values of redacted keys at any depth).
///
/// This is the log's path for a JSON body that no rule selects from or redacts by
/// pointer: the tree costs an allocation per value, this copies runs of input that
/// are already compact (all of a typical API response) with one `memcpy`.
///
/// It accepts exactly what `JSONParser` accepts or less: on any doubt it returns
/// false and the caller asks `JSONParser` (for the error message, or for a document
/// this pass refuses but the parser takes). A differential test holds the two together.
public enum JSONCompactor {
    /// Appends the compact text of the document in `input` to `output` and returns
    /// true; on invalid input returns false with `output` as it was.
    public static func append(_ input: UnsafeRawBufferPointer, allowFragments: Bool = true, maxDepth: Int = 512,
                              redacting keys: JSONKeySet = JSONKeySet([]), into output: inout [UInt8]) -> Bool {
        guard let base = input.baseAddress, input.count > 0 else { return false }
        let mark = output.count
        var pass = CompactingPass(base.assumingMemoryBound(to: UInt8.self), count: input.count, keys: keys,
                                  maxDepth: maxDepth)
        if pass.run(allowFragments: allowFragments, into: &output) { return true }
        output.removeSubrange(mark...)
        return false
    }

    public static func append(_ input: [UInt8], allowFragments: Bool = true, maxDepth: Int = 512,
                              redacting keys: JSONKeySet = JSONKeySet([]), into output: inout [UInt8]) -> Bool {
        input.withUnsafeBytes { append($0, allowFragments: allowFragments, maxDepth: maxDepth, redacting: keys, into: &output) }
    }
}

private struct CompactingPass {
    let p: UnsafePointer<UInt8>
    let end: Int
    let keys: JSONKeySet
    let redacts: Bool
    let maxDepth: Int
    var pos = 0
    /// Input from here up to the current position is still to be copied as it is.
    var run = 0
    /// Inside a redacted value: nothing is copied until it ends.
    var suppressed = false
    /// Open containers; bit (depth % 64) of word (depth / 64) is 1 for an object.
    var depth = 0
    var kinds: UInt64 = 0
    var deeperKinds: [UInt64] = []
    /// The depth at which the redacted value started.
    var suppressedDepth = 0
    /// Decoded bytes of a string that has escapes.
    var scratch: [UInt8] = []

    init(_ p: UnsafePointer<UInt8>, count: Int, keys: JSONKeySet, maxDepth: Int) {
        self.p = p
        self.end = count
        self.keys = keys
        self.redacts = !keys.isEmpty
        self.maxDepth = maxDepth
    }

    // MARK: Output

    /// Copies the pending run up to `i` (unless suppressed) and starts the next run at `next`.
    @inline(__always)
    mutating func cut(at i: Int, resumeAt next: Int, into out: inout [UInt8]) {
        if !suppressed && i > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: i - run)) }
        run = next
    }

    @inline(__always)
    mutating func skipWhitespace(into out: inout [UInt8]) {
        guard pos < end else { return }
        let c = p[pos]
        guard c <= 0x20, c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
        let start = pos
        pos += 1
        while pos < end {
            let d = p[pos]
            guard d <= 0x20, d == 0x20 || d == 0x0A || d == 0x0D || d == 0x09 else { break }
            pos += 1
        }
        cut(at: start, resumeAt: pos, into: &out)
    }

    // MARK: Containers

    @inline(__always)
    mutating func push(isObject: Bool) -> Bool {
        guard depth < maxDepth else { return false }
        let bit: UInt64 = 1 << UInt64(depth & 63)
        if depth < 64 {
            if isObject { kinds |= bit } else { kinds &= ~bit }
        } else {
            let word = depth >> 6 - 1
            if word == deeperKinds.count { deeperKinds.append(0) }
            if isObject { deeperKinds[word] |= bit } else { deeperKinds[word] &= ~bit }
        }
        depth += 1
        return true
    }

    @inline(__always)
    func topIsObject() -> Bool {
        let d = depth - 1
        let bit: UInt64 = 1 << UInt64(d & 63)
        return (d < 64 ? kinds : deeperKinds[d >> 6 - 1]) & bit != 0
    }

    /// A value just ended at `depth`: a redacted one ends its suppression.
    @inline(__always)
    mutating func valueEnded() {
        if suppressed && depth == suppressedDepth {
            suppressed = false
            run = pos
        }
    }

    // MARK: Document

    mutating func run(allowFragments: Bool, into out: inout [UInt8]) -> Bool {
        skipWhitespace(into: &out)
        guard pos < end else { return false }
        if !allowFragments && p[pos] != UInt8(ascii: "{") && p[pos] != UInt8(ascii: "[") { return false }
        nextValue: while true {
            skipWhitespace(into: &out)
            guard pos < end else { return false }
            switch p[pos] {
            case UInt8(ascii: "{"):
                guard push(isObject: true) else { return false }
                pos += 1
                skipWhitespace(into: &out)
                guard pos < end else { return false }
                if p[pos] == UInt8(ascii: "}") {
                    pos += 1
                    depth -= 1
                } else {
                    guard memberName(into: &out) else { return false }
                    continue nextValue
                }
            case UInt8(ascii: "["):
                guard push(isObject: false) else { return false }
                pos += 1
                skipWhitespace(into: &out)
                guard pos < end else { return false }
                if p[pos] == UInt8(ascii: "]") {
                    pos += 1
                    depth -= 1
                } else {
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                guard string(isKey: false, into: &out) != nil else { return false }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                guard number() else { return false }
            case UInt8(ascii: "t"):
                guard literal(0x74, 0x72, 0x75, 0x65, count: 4) else { return false }
            case UInt8(ascii: "f"):
                guard literal(0x66, 0x61, 0x6C, 0x73, count: 5), p[pos - 1] == 0x65 else { return false }
            case UInt8(ascii: "n"):
                guard literal(0x6E, 0x75, 0x6C, 0x6C, count: 4) else { return false }
            default:
                return false
            }
            valueEnded()

            // Close every container that ends here.
            while depth > 0 {
                skipWhitespace(into: &out)
                guard pos < end else { return false }
                let c = p[pos]
                if c == UInt8(ascii: ",") {
                    pos += 1
                    if topIsObject() { guard memberName(into: &out) else { return false } }
                    continue nextValue
                }
                guard c == (topIsObject() ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
                pos += 1
                depth -= 1
                valueEnded()
            }
            skipWhitespace(into: &out)
            guard pos == end else { return false }
            cut(at: end, resumeAt: end, into: &out)
            return true
        }
    }

    /// A member name and its colon; when the name is redacted, writes the replacement
    /// and suppresses the value that follows.
    mutating func memberName(into out: inout [UInt8]) -> Bool {
        skipWhitespace(into: &out)
        guard pos < end, p[pos] == UInt8(ascii: "\"") else { return false }
        guard let redacted = string(isKey: true, into: &out) else { return false }
        skipWhitespace(into: &out)
        guard pos < end, p[pos] == UInt8(ascii: ":") else { return false }
        pos += 1
        if redacted && !suppressed {
            cut(at: pos, resumeAt: pos, into: &out)
            out.append(contentsOf: [0x22, 0x5B, 0x72, 0x65, 0x64, 0x61, 0x63, 0x74, 0x65, 0x64, 0x5D, 0x22])  // "[redacted]"
            suppressed = true
            suppressedDepth = depth
        }
        return true
    }

    /// `t`/`n` literals (4 bytes) and `false` (5 bytes: the caller checks the last).
    @inline(__always)
    mutating func literal(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8, count: Int) -> Bool {
        guard pos + count <= end, p[pos] == a, p[pos + 1] == b, p[pos + 2] == c, p[pos + 3] == d else { return false }
        pos += count
        return true
    }

    @inline(__always)
    func isDigit(_ i: Int) -> Bool { i < end && p[i] &- 0x30 < 10 }

    /// RFC 8259 number grammar; the text is copied as it is.
    mutating func number() -> Bool {
        var i = pos
        if p[i] == UInt8(ascii: "-") { i += 1 }
        guard i < end else { return false }
        if p[i] == UInt8(ascii: "0") {
            i += 1
            if isDigit(i) { return false }
        } else if p[i] &- 0x31 < 9 {
            i += 1
            while isDigit(i) { i += 1 }
        } else {
            return false
        }
        if i < end && p[i] == UInt8(ascii: ".") {
            i += 1
            guard isDigit(i) else { return false }
            while isDigit(i) { i += 1 }
        }
        if i < end && (p[i] | 0x20) == UInt8(ascii: "e") {
            i += 1
            if i < end && (p[i] == UInt8(ascii: "+") || p[i] == UInt8(ascii: "-")) { i += 1 }
            guard isDigit(i) else { return false }
            while isDigit(i) { i += 1 }
        }
        pos = i
        return true
    }

    // MARK: Strings

    /// Index of the first byte at or after `start` that is `"`, `\`, a control character
    /// or non-ASCII, eight bytes at a time (as the parser scans).
    @inline(__always)
    func scanPlain(from start: Int) -> Int {
        var i = start
        let ones: UInt64 = 0x0101_0101_0101_0101
        while i + 8 <= end {
            let w = UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
            let quote = w ^ (ones &* 0x22)
            let backslash = w ^ (ones &* 0x5C)
            var special = w | ((w &- ones &* 0x20) & ~w)
            special |= (quote &- ones) & ~quote
            special |= (backslash &- ones) & ~backslash
            special &= 0x8080_8080_8080_8080
            if special != 0 { return i + special.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end {
            let c = p[i]
            if c == 0x22 || c == 0x5C || c < 0x20 || c >= 0x80 { return i }
            i += 1
        }
        return end
    }

    /// `pos` is on the opening quote; leaves it after the closing one. Returns whether
    /// the (decoded) string is a redacted key (always false for values), nil when invalid.
    /// A string whose escapes are all in the writer's canonical form stays in the run;
    /// any other is written out decoded and re-escaped.
    @inline(__always)
    mutating func string(isKey: Bool, into out: inout [UInt8]) -> Bool? {
        let open = pos
        let (close, escapes) = scanString(from: open)
        guard close >= 0 else { return nil }
        pos = close + 1
        if escapes == 0 {
            return isKey && redacts ? keys.matches(p + open + 1, count: close - open - 1) : false
        }
        if escapes == 1 && !(isKey && redacts) { return false }
        return escapedString(open: open, close: close, canonical: escapes == 1, isKey: isKey, into: &out)
    }

    /// Where the string opening at `open` closes (-1 when invalid) and what its escapes
    /// need: 0 none, 1 all in canonical form, 2 some to rewrite. Non-mutating, so the hot
    /// scan works on registers instead of a copy of the pass.
    @inline(__always)
    func scanString(from open: Int) -> (Int, Int) {
        var i = open + 1
        var escapes = 0
        while true {
            i = scanPlain(from: i)
            guard i < end else { return (-1, 0) }
            let c = p[i]
            if c == 0x22 { return (i, escapes) }
            if c == 0x5C {
                guard let (next, isCanonical) = checkEscape(at: i) else { return (-1, 0) }
                escapes = max(escapes, isCanonical ? 1 : 2)
                i = next
            } else if c < 0x20 {
                return (-1, 0)
            } else {
                guard let next = validateUTF8Sequence(at: i) else { return (-1, 0) }
                i = next
            }
        }
    }

    /// The slow path: a string with escapes that is a key to compare or needs rewriting.
    @inline(never)
    mutating func escapedString(open: Int, close: Int, canonical: Bool, isKey: Bool, into out: inout [UInt8]) -> Bool {
        scratch.removeAll(keepingCapacity: true)
        decode(from: open + 1, to: close)
        let redacted = isKey && redacts && scratchIsRedactedKey()
        if !canonical {
            cut(at: open, resumeAt: close + 1, into: &out)
            if !suppressed { scratch.withUnsafeBufferPointer { JSONWriter.appendQuoted(utf8: $0, into: &out) } }
        }
        return redacted
    }

    /// Not inlined and not mutating on purpose: a closure over `self` inside the mutating
    /// `string` made the compiler copy the whole pass onto the stack on every call.
    @inline(never)
    func scratchIsRedactedKey() -> Bool {
        scratch.withUnsafeBufferPointer { b in b.baseAddress.map { keys.matches($0, count: b.count) } ?? false }
    }

    /// Checks the escape at `i` (on the backslash). Returns the index after it and whether
    /// `JSONWriter` would write the same two or six bytes for what it decodes to.
    func checkEscape(at i: Int) -> (Int, Bool)? {
        guard i + 1 < end else { return nil }
        switch p[i + 1] {
        case 0x22, 0x5C, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return (i + 2, true)
        case UInt8(ascii: "/"):
            return (i + 2, false)
        case UInt8(ascii: "u"):
            guard let scalar = hex4(at: i + 2) else { return nil }
            if scalar >= 0xDC00 && scalar <= 0xDFFF { return nil }
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                let next = i + 6
                guard next + 1 < end, p[next] == 0x5C, p[next + 1] == UInt8(ascii: "u"),
                      let low = hex4(at: next + 2), low >= 0xDC00 && low <= 0xDFFF else { return nil }
                return (next + 6, false)
            }
            // The writer uses \u00xx, lower-case, only for control characters without a short form.
            let canonical = scalar < 0x20 && scalar != 0x08 && scalar != 0x0C && scalar != 0x0A && scalar != 0x0D
                && scalar != 0x09 && !(2...5).contains(where: { p[i + $0] >= UInt8(ascii: "A") && p[i + $0] <= UInt8(ascii: "F") })
            return (i + 6, canonical)
        default:
            return nil
        }
    }

    func hex4(at i: Int) -> UInt32? {
        guard i + 4 <= end else { return nil }
        var value: UInt32 = 0
        for k in 0..<4 {
            let c = p[i + k]
            let digit: UInt8
            switch c {
            case 0x30...0x39: digit = c - 0x30
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// RFC 3629 multi-byte sequence at `i` (the parser's table); the index after it.
    @inline(__always)
    func validateUTF8Sequence(at i: Int) -> Int? {
        let lead = p[i]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE, 0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        guard i + length <= end else { return nil }
        let second = p[i + 1]
        guard second >= low && second <= high else { return nil }
        for k in 2..<max(length, 2) where p[i + k] & 0xC0 != 0x80 { return nil }
        return i + length
    }

    /// Decodes the (already validated) string content `from..<to` into `scratch`.
    mutating func decode(from: Int, to: Int) {
        var i = from
        var segment = from
        while i < to {
            guard p[i] == 0x5C else { i += 1; continue }
            scratch.append(contentsOf: UnsafeBufferPointer(start: p + segment, count: i - segment))
            switch p[i + 1] {
            case UInt8(ascii: "b"): scratch.append(0x08); i += 2
            case UInt8(ascii: "f"): scratch.append(0x0C); i += 2
            case UInt8(ascii: "n"): scratch.append(0x0A); i += 2
            case UInt8(ascii: "r"): scratch.append(0x0D); i += 2
            case UInt8(ascii: "t"): scratch.append(0x09); i += 2
            case UInt8(ascii: "u"):
                var scalar = hex4(at: i + 2) ?? 0xFFFD
                i += 6
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    let low = hex4(at: i + 2) ?? 0xDC00
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                appendUTF8(scalar)
            default:  // \" \\ \/
                scratch.append(p[i + 1]); i += 2
            }
            segment = i
        }
        scratch.append(contentsOf: UnsafeBufferPointer(start: p + segment, count: to - segment))
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
