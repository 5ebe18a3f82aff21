import CJSONScan

/// Member names whose values a log hides, prepared for matching raw key bytes:
/// ASCII case-insensitive, as `JSON.redactingKeys` compares them.
public struct JSONKeySet: Sendable, Equatable {
    /// Lower-cased (ASCII) keys, indexed by byte length: a key is looked up with no hashing.
    let keysByLength: [[[UInt8]]]
    /// Bit n set when some key is n bytes long (n < 64): most keys are rejected on length alone.
    let shortLengths: UInt64

    /// - Parameter keys: Member names, any case; duplicates are ignored.
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

    /// Whether the set names no key (nothing is redacted).
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
    /// - Parameter value: A document.
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

    /// Whether `key` names a redacted member (ASCII case-insensitive).
    /// - Parameter key: A member name, unescaped.
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
    /// - Parameters:
    ///   - input: One JSON text.
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    ///   - keys: Member names whose values are written as `"[redacted]"`; default none.
    ///   - output: Where the text is appended.
    public static func append(_ input: UnsafeRawBufferPointer, allowFragments: Bool = true, maxDepth: Int = 512,
                              redacting keys: JSONKeySet = JSONKeySet([]), into output: inout [UInt8]) -> Bool {
        guard let base = input.baseAddress, input.count > 0 else { return false }
        let mark = output.count
        if compact(base.assumingMemoryBound(to: UInt8.self), end: input.count, allowFragments: allowFragments,
                   maxDepth: maxDepth, keys: keys, into: &output) { return true }
        output.removeSubrange(mark...)
        return false
    }

    /// `append(_:allowFragments:maxDepth:redacting:into:)` over an array.
    /// - Parameters:
    ///   - input: One JSON text.
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    ///   - keys: Member names whose values are written as `"[redacted]"`; default none.
    ///   - output: Where the text is appended.
    public static func append(_ input: [UInt8], allowFragments: Bool = true, maxDepth: Int = 512,
                              redacting keys: JSONKeySet = JSONKeySet([]), into output: inout [UInt8]) -> Bool {
        input.withUnsafeBytes { append($0, allowFragments: allowFragments, maxDepth: maxDepth, redacting: keys, into: &output) }
    }
}

// MARK: - The pass

extension JSONCompactor {
    /// One function with its state in locals: as methods on a struct the state lived in
    /// memory behind `self` and every token paid loads, stores and calls for it. For the
    /// same reason the white-space skip is written out at its four places: a nested
    /// function capturing the locals would move them back to memory.
    static func compact(_ p: UnsafePointer<UInt8>, end: Int, allowFragments: Bool, maxDepth: Int,
                        keys: JSONKeySet, into out: inout [UInt8]) -> Bool {
        let redacts = !keys.isEmpty
        var pos = 0
        /// Input from `run` up to `pos` is still to be copied as it is.
        var run = 0
        /// Open containers; bit d of `kinds` (d < 64) or of `deeperKinds` is 1 for an object.
        var depth = 0
        var kinds: UInt64 = 0
        var deeperKinds: [UInt64] = []
        /// Inside a redacted value (opened at `suppressedDepth`): nothing is copied.
        var suppressed = false
        var suppressedDepth = 0
        var expectKey = false
        var scratch: [UInt8] = []

        @inline(__always) func isWhitespace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 }

        while true {
            // White space before a token leaves the run.
            if pos < end && p[pos] <= 0x20 && isWhitespace(p[pos]) {
                let start = pos
                pos += 1
                pos = scanWhitespace(p, from: pos, end: end)
                if !suppressed && start > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: start - run)) }
                run = pos
            }
            guard pos < end else { return false }

            if expectKey {
                expectKey = false
                guard p[pos] == 0x22 else { return false }
                let open = pos
                let (close, escapes) = scanStringInline(p, from: open, end: end)
                guard close >= 0 else { return false }
                pos = close + 1
                var redacted = false
                if escapes == 0 {
                    if redacts { redacted = keys.matches(p + open + 1, count: close - open - 1) }
                } else if redacts || escapes == 2 {
                    scratch.removeAll(keepingCapacity: true)
                    decode(p, from: open + 1, to: close, into: &scratch)
                    if redacts {
                        redacted = scratch.withUnsafeBufferPointer { b in b.baseAddress.map { keys.matches($0, count: b.count) } ?? false }
                    }
                    if escapes == 2 {
                        if !suppressed {
                            if open > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: open - run)) }
                            scratch.withUnsafeBufferPointer { JSONWriter.appendQuoted(utf8: $0, into: &out) }
                        }
                        run = pos
                    }
                }
                if pos < end && p[pos] <= 0x20 && isWhitespace(p[pos]) {
                    let start = pos
                    pos = scanWhitespace(p, from: pos, end: end)
                    if !suppressed && start > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: start - run)) }
                    run = pos
                }
                guard pos < end, p[pos] == 0x3A else { return false }
                pos += 1
                if redacted && !suppressed {
                    if pos > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: pos - run)) }
                    run = pos
                    out.append(contentsOf: redactedText)
                    suppressed = true
                    suppressedDepth = depth
                }
                continue
            }

            // A value.
            let c = p[pos]
            switch c {
            case 0x7B, 0x5B:  // { [
                guard depth < maxDepth else { return false }
                let isObject = c == 0x7B
                let bit: UInt64 = 1 << UInt64(depth & 63)
                if depth < 64 {
                    if isObject { kinds |= bit } else { kinds &= ~bit }
                } else {
                    let word = depth >> 6 - 1
                    if word == deeperKinds.count { deeperKinds.append(0) }
                    if isObject { deeperKinds[word] |= bit } else { deeperKinds[word] &= ~bit }
                }
                depth += 1
                pos += 1
                if pos < end && p[pos] <= 0x20 && isWhitespace(p[pos]) {
                    let start = pos
                    pos = scanWhitespace(p, from: pos, end: end)
                    if !suppressed && start > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: start - run)) }
                    run = pos
                }
                guard pos < end else { return false }
                if p[pos] == (isObject ? 0x7D : 0x5D) {
                    pos += 1
                    depth -= 1
                } else {
                    expectKey = isObject
                    continue
                }
            case 0x22:
                if depth == 0 && !allowFragments { return false }
                let open = pos
                let (close, escapes) = scanStringInline(p, from: open, end: end)
                guard close >= 0 else { return false }
                pos = close + 1
                if escapes == 2 && !suppressed {
                    if open > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: open - run)) }
                    scratch.removeAll(keepingCapacity: true)
                    decode(p, from: open + 1, to: close, into: &scratch)
                    scratch.withUnsafeBufferPointer { JSONWriter.appendQuoted(utf8: $0, into: &out) }
                    run = pos
                }
            case 0x2D, 0x30...0x39:
                if depth == 0 && !allowFragments { return false }
                pos = scanNumber(p, from: pos, end: end)
                guard pos >= 0 else { return false }
            case 0x74:  // true
                guard depth > 0 || allowFragments, pos + 4 <= end, p[pos + 1] == 0x72, p[pos + 2] == 0x75, p[pos + 3] == 0x65 else { return false }
                pos += 4
            case 0x66:  // false
                guard depth > 0 || allowFragments, pos + 5 <= end, p[pos + 1] == 0x61, p[pos + 2] == 0x6C, p[pos + 3] == 0x73,
                      p[pos + 4] == 0x65 else { return false }
                pos += 5
            case 0x6E:  // null
                guard depth > 0 || allowFragments, pos + 4 <= end, p[pos + 1] == 0x75, p[pos + 2] == 0x6C, p[pos + 3] == 0x6C else { return false }
                pos += 4
            default:
                return false
            }
            if suppressed && depth == suppressedDepth { suppressed = false; run = pos }

            // Close every container that ends here; a comma leads to the next value or member.
            var next = false
            while depth > 0 {
                if pos < end && p[pos] <= 0x20 && isWhitespace(p[pos]) {
                    let start = pos
                    pos = scanWhitespace(p, from: pos, end: end)
                    if !suppressed && start > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: start - run)) }
                    run = pos
                }
                guard pos < end else { return false }
                let d = depth - 1
                let isObject = (d < 64 ? kinds : deeperKinds[d >> 6 - 1]) & (1 << UInt64(d & 63)) != 0
                let c = p[pos]
                if c == 0x2C {
                    pos += 1
                    expectKey = isObject
                    next = true
                    break
                }
                guard c == (isObject ? 0x7D : 0x5D) else { return false }
                pos += 1
                depth -= 1
                if suppressed && depth == suppressedDepth { suppressed = false; run = pos }
            }
            if next { continue }

            // The document's value is complete: only white space may follow.
            pos = scanWhitespace(p, from: pos, end: end)
            guard pos == end else { return false }
            // Trailing white space was not copied only if it was cut: cut it now.
            var last = end
            while last > run && isWhitespace(p[last - 1]) { last -= 1 }
            if last > run { out.append(contentsOf: UnsafeBufferPointer(start: p + run, count: last - run)) }
            return true
        }
    }

    static let redactedText: [UInt8] = Array(#""[redacted]""#.utf8)

    /// RFC 8259 number grammar from `start`; the index after it, or -1.
    @inline(__always)
    static func scanNumber(_ p: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        @inline(__always) func isDigit(_ i: Int) -> Bool { i < end && p[i] &- 0x30 < 10 }
        var i = start
        if p[i] == 0x2D { i += 1 }
        guard i < end else { return -1 }
        if p[i] == 0x30 {
            i += 1
            if isDigit(i) { return -1 }
        } else if p[i] &- 0x31 < 9 {
            i = scanDigits(p, from: i + 1, end: end)
        } else {
            return -1
        }
        if i < end && p[i] == 0x2E {
            i += 1
            guard isDigit(i) else { return -1 }
            i = scanDigits(p, from: i + 1, end: end)
        }
        if i < end && (p[i] | 0x20) == 0x65 {
            i += 1
            if i < end && (p[i] == 0x2B || p[i] == 0x2D) { i += 1 }
            guard isDigit(i) else { return -1 }
            i = scanDigits(p, from: i + 1, end: end)
        }
        return i
    }

    /// `scanString` with its common case in the caller: a string of plain ASCII up to its
    /// closing quote (most strings) costs one inlined scan, not a call: API documents hold
    /// thousands of short strings, and a call's entry and exit would weigh on each.
    @inline(__always)
    static func scanStringInline(_ p: UnsafePointer<UInt8>, from open: Int, end: Int) -> (Int, Int) {
        let stop = scanPlain(p, from: open + 1, end: end)
        if stop < end && p[stop] == 0x22 { return (stop, 0) }
        return scanString(p, resumingAt: stop, end: end)
    }

    /// Where a string closes (-1 when invalid) and what its escapes need: 0 none, 1 all in
    /// the writer's canonical form, 2 some to rewrite. `start` is the first byte after the
    /// opening quote that is not plain ASCII (see `scanPlain`).
    @inline(never)
    static func scanString(_ p: UnsafePointer<UInt8>, resumingAt start: Int, end: Int) -> (Int, Int) {
        var i = start
        var escapes = 0
        while true {
            guard i < end else { return (-1, 0) }
            let c = p[i]
            if c == 0x22 { return (i, escapes) }
            if c == 0x5C {
                let (next, canonical) = checkEscape(p, at: i, end: end)
                guard next >= 0 else { return (-1, 0) }
                escapes = max(escapes, canonical ? 1 : 2)
                i = next
            } else if c < 0x20 {
                return (-1, 0)
            } else {
                // Multi-byte sequences come in runs (a word of non-Latin text): the run is
                // validated before the ASCII scan resumes, which would stop at once.
                repeat {
                    i = validateUTF8Sequence(p, at: i, end: end)
                    guard i >= 0 else { return (-1, 0) }
                } while i < end && p[i] >= 0x80
            }
            i = scanPlain(p, from: i, end: end)
        }
    }

    /// Index of the first byte at or after `start` that is `"`, `\`, a control character
    /// or non-ASCII (JSONParser scans strings with it too), sixteen bytes a step (CJSONScan).
    /// A string's plain ASCII is valid UTF-8 and needs no rewriting, so the callers
    /// validate and copy it as a span.
    @inline(__always)
    static func scanPlain(_ p: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        tapwire_json_scan_plain(p, start, end)
    }

    /// Index of the first byte at or after `start` that is not JSON white space.
    @inline(__always)
    static func scanWhitespace(_ p: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        tapwire_json_scan_whitespace(p, start, end)
    }

    /// Index of the first byte at or after `start` that is not an ASCII digit: a long
    /// integer or fraction part (ids, timestamps) in one or two steps.
    @inline(__always)
    static func scanDigits(_ p: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        tapwire_json_scan_digits(p, start, end)
    }

    /// The escape at `i` (on the backslash): the index after it (-1 when invalid) and
    /// whether `JSONWriter` writes the same bytes for what it decodes to.
    static func checkEscape(_ p: UnsafePointer<UInt8>, at i: Int, end: Int) -> (Int, Bool) {
        guard i + 1 < end else { return (-1, false) }
        switch p[i + 1] {
        case 0x22, 0x5C, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return (i + 2, true)
        case UInt8(ascii: "/"):
            return (i + 2, false)
        case UInt8(ascii: "u"):
            let scalar = hex4(p, at: i + 2, end: end)
            guard scalar >= 0 else { return (-1, false) }
            if scalar >= 0xDC00 && scalar <= 0xDFFF { return (-1, false) }
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                let next = i + 6
                guard next + 1 < end, p[next] == 0x5C, p[next + 1] == UInt8(ascii: "u") else { return (-1, false) }
                let low = hex4(p, at: next + 2, end: end)
                guard low >= 0xDC00 && low <= 0xDFFF else { return (-1, false) }
                return (next + 6, false)
            }
            // The writer uses \u00xx, lower-case, only for control characters without a short form.
            var canonical = scalar < 0x20 && scalar != 0x08 && scalar != 0x0C && scalar != 0x0A && scalar != 0x0D && scalar != 0x09
            for k in 2...5 where p[i + k] >= UInt8(ascii: "A") && p[i + k] <= UInt8(ascii: "F") { canonical = false }
            return (i + 6, canonical)
        default:
            return (-1, false)
        }
    }

    /// Four hex digits at `i`, or -1.
    static func hex4(_ p: UnsafePointer<UInt8>, at i: Int, end: Int) -> Int {
        guard i + 4 <= end else { return -1 }
        var value = 0
        for k in 0..<4 {
            let c = p[i + k]
            let digit: Int
            switch c {
            case 0x30...0x39: digit = Int(c - 0x30)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(c - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = Int(c - UInt8(ascii: "A")) + 10
            default: return -1
            }
            value = value << 4 | digit
        }
        return value
    }

    /// RFC 3629 multi-byte sequence at `i` (the parser's table): the index after it, or -1.
    @inline(__always)
    static func validateUTF8Sequence(_ p: UnsafePointer<UInt8>, at i: Int, end: Int) -> Int {
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
        default: return -1
        }
        guard i + length <= end else { return -1 }
        let second = p[i + 1]
        guard second >= low && second <= high else { return -1 }
        for k in 2..<max(length, 2) where p[i + k] & 0xC0 != 0x80 { return -1 }
        return i + length
    }

    /// Decodes the (already validated) string content `from..<to` into `scratch`.
    static func decode(_ p: UnsafePointer<UInt8>, from: Int, to: Int, into scratch: inout [UInt8]) {
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
                var scalar = UInt32(max(0, hex4(p, at: i + 2, end: to)))
                i += 6
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    let low = UInt32(max(0xDC00, hex4(p, at: i + 2, end: to)))
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                appendUTF8(scalar, into: &scratch)
            default:  // \" \\ \/
                scratch.append(p[i + 1]); i += 2
            }
            segment = i
        }
        scratch.append(contentsOf: UnsafeBufferPointer(start: p + segment, count: to - segment))
    }

    static func appendUTF8(_ scalar: UInt32, into scratch: inout [UInt8]) {
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
