import Foundation  // the `Data` overload and NSLock; the parser itself works on raw bytes.

/// Where and why a document is not RFC 8259 JSON.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input where the problem was found.
    public var offset: Int
    /// What is wrong, e.g. `unexpected end of input`.
    public var message: String
    /// - Parameters:
    ///   - offset: Byte offset into the input.
    ///   - message: What is wrong.
    public init(offset: Int, message: String) { self.offset = offset; self.message = message }
    /// `message at byte N`.
    public var description: String { "\(message) at byte \(offset)" }
}

/// Strict RFC 8259 parsing.
///
/// Decisions worth knowing:
/// - Strings must be valid UTF-8 (RFC 3629: no overlongs, no encoded surrogates, nothing
///   above U+10FFFF); invalid bytes are an error, not replaced with U+FFFD, because a log
///   that silently repairs a body hides the very bug someone is looking for.
/// - A `\u` escape of a lone surrogate (a high one not followed by a `\u` low one, or a
///   low one on its own) is an error for the same reason: it cannot become a Swift String
///   without being changed.
/// - A byte order mark is not white space (RFC 8259 §8.1 lets parsers reject it).
/// - Nesting is tracked on an explicit stack, so depth costs heap, never the call stack;
///   a container that would be deeper than `maxDepth` fails with "nesting deeper than N".
///   Keep `maxDepth` in the thousands at most: releasing a `JSON` value, comparing two,
///   writing one and the pointer operations all recurse once per level.
/// - Numbers are checked against the grammar and kept as their source text.
///
/// Speed: strings without escapes become `String`s straight from the input bytes (found
/// eight bytes at a time); in documents of 16 KB and more, repeated short values and keys
/// share one box (`JSON` is indirect, so every value is an allocation otherwise); the
/// reader's stacks and tables are pooled between parses.
public enum JSONParser {
    /// Parses one JSON text (surrounding white space allowed). `allowFragments`
    /// accepts a scalar at top level (Alamofire's default); nesting deeper than
    /// `maxDepth` fails cleanly instead of overflowing the stack.
    /// - Parameters:
    ///   - bytes: One JSON text.
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    public static func parse(_ bytes: UnsafeRawBufferPointer, allowFragments: Bool = true, maxDepth: Int = 512) throws(JSONParseError) -> JSON {
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            throw JSONParseError(offset: 0, message: "unexpected end of input")
        }
        var reader = JSONReader(base.assumingMemoryBound(to: UInt8.self), count: bytes.count, maxDepth: maxDepth,
                                memory: ReaderMemory.take())
        let value = try reader.parseDocument(allowFragments: allowFragments)
        reader.finish().giveBack()
        return value
    }

    /// `parse(_:allowFragments:maxDepth:)` over an array.
    /// - Parameters:
    ///   - bytes: One JSON text.
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    public static func parse(_ bytes: [UInt8], allowFragments: Bool = true, maxDepth: Int = 512) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = bytes.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) -> JSON in try parse(raw, allowFragments: allowFragments, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// `parse(_:allowFragments:maxDepth:)` over `Data`, without copying it.
    /// - Parameters:
    ///   - data: One JSON text.
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    public static func parse(_ data: Data, allowFragments: Bool = true, maxDepth: Int = 512) throws(JSONParseError) -> JSON {
        let result: Result<JSON, JSONParseError> = data.withUnsafeBytes { raw in
            Result { () throws(JSONParseError) -> JSON in try parse(raw, allowFragments: allowFragments, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Offsets in errors count UTF-8 bytes of `string`.
    /// - Parameters:
    ///   - string: One JSON text.
    ///   - allowFragments: Accept a scalar at top level; default true.
    ///   - maxDepth: Nesting deeper than this fails; default 512.
    public static func parse(_ string: String, allowFragments: Bool = true, maxDepth: Int = 512) throws(JSONParseError) -> JSON {
        var text = string
        let result: Result<JSON, JSONParseError> = text.withUTF8 { utf8 in
            Result { () throws(JSONParseError) -> JSON in
                try parse(UnsafeRawBufferPointer(utf8), allowFragments: allowFragments, maxDepth: maxDepth)
            }
        }
        return try result.get()
    }
}

// MARK: - Reader

private enum Byte {
    static let quote: UInt8 = 0x22, backslash: UInt8 = 0x5C, slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C, colon: UInt8 = 0x3A, minus: UInt8 = 0x2D, plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E, zero: UInt8 = 0x30, nine: UInt8 = 0x39
    static let openBrace: UInt8 = 0x7B, closeBrace: UInt8 = 0x7D
    static let openBracket: UInt8 = 0x5B, closeBracket: UInt8 = 0x5D
}

/// A growable buffer that hands its tail to a new array by moving, not copying:
/// closing a container moves its children out without a retain/release per child.
private struct MoveStack<Element>: ~Copyable {
    private(set) var base: UnsafeMutablePointer<Element>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int, reusing block: ReaderMemory.Block?) {
        if let block, block.capacity >= capacity {
            self.capacity = block.capacity
            base = block.pointer.bindMemory(to: Element.self, capacity: block.capacity)
        } else {
            block?.pointer.deallocate()
            self.capacity = capacity
            base = .allocate(capacity: capacity)
        }
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Empties the stack and hands its memory on instead of freeing it.
    consuming func relinquish() -> ReaderMemory.Block {
        base.deinitialize(count: count)
        let block = ReaderMemory.Block(pointer: UnsafeMutableRawPointer(base), capacity: capacity)
        discard self
        return block
    }

    @inline(__always)
    mutating func push(_ element: consuming Element) {
        if count == capacity { grow() }
        (base + count).initialize(to: element)
        count += 1
    }

    var top: Element {
        @inline(__always) get { base[count - 1] }
    }

    mutating func pop() -> Element {
        count -= 1
        return (base + count).move()
    }

    private mutating func grow() {
        let newCapacity = capacity * 2
        let newBase = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        newBase.moveInitialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Moves the elements from `start` to the top into a new array.
    mutating func popArray(from start: Int) -> [Element] {
        let n = count - start
        if n == 0 { return [] }
        // reserveCapacity + append is specialized inline; `init(unsafeUninitializedCapacity:)`
        // went through an unspecialized path that looks up generic metadata on every call.
        var array = [Element]()
        array.reserveCapacity(n)
        for i in start..<count { array.append((base + i).move()) }
        count = start
        return array
    }

    /// Drops the top `n` elements after the caller has moved them out.
    mutating func forgetTop(_ n: Int) { count -= n }
}

/// Up to 32 bytes of text as four zero-padded words, plus a tag (length and kind), so
/// comparing two short texts is four integer compares.
private struct ShortText: Equatable {
    var w0: UInt64 = 0, w1: UInt64 = 0, w2: UInt64 = 0, w3: UInt64 = 0
    var tag = -1
    static let maxCount = 32
}

/// A direct-mapped cache from short texts to what was built from them. API documents
/// repeat short scalars ("User", "main", small numbers) and keys; sharing one `JSON` box
/// or `String` per text saves an allocation and a free for each repeat, which is most of
/// a short scalar's cost.
private struct ShortTextCache<Element>: ~Copyable {
    struct Entry {
        var text: ShortText
        var element: Element?
    }
    let capacity: Int
    let shift: UInt64
    let entries: UnsafeMutablePointer<Entry>

    /// `bits` sets the capacity (`1 << bits`); a disabled cache allocates nothing and must not be used.
    /// `table` is memory from an earlier cache with the same `bits`.
    init(enabled: Bool, bits: Int, reusing table: UnsafeMutableRawPointer?) {
        shift = UInt64(64 - bits)
        guard enabled else {
            capacity = 0
            entries = .allocate(capacity: 0)
            reuseLater = table
            return
        }
        capacity = 1 << bits
        entries = table?.bindMemory(to: Entry.self, capacity: capacity) ?? .allocate(capacity: capacity)
        entries.initialize(repeating: Entry(text: ShortText(), element: nil), count: capacity)
        reuseLater = nil
    }

    /// A table this (disabled) cache did not need, kept for the next reader.
    private let reuseLater: UnsafeMutableRawPointer?

    deinit {
        entries.deinitialize(count: capacity)
        entries.deallocate()
        reuseLater?.deallocate()
    }

    /// Empties the cache and hands its table on instead of freeing it.
    consuming func relinquish() -> UnsafeMutableRawPointer? {
        entries.deinitialize(count: capacity)
        let table: UnsafeMutableRawPointer?
        if capacity > 0 {
            table = UnsafeMutableRawPointer(entries)
        } else {
            entries.deallocate()
            table = reuseLater
        }
        discard self
        return table
    }

    @inline(__always)
    func slot(_ text: ShortText) -> Int {
        var h = (text.w0 &* 0x9E37_79B9_7F4A_7C15) ^ (text.w1 &* 0xC2B2_AE3D_27D4_EB4F)
        h ^= (text.w2 &* 0x1656_67B1_9E37_79F9) ^ (text.w3 &* 0x27D4_EB2F_1656_67C5)
        h ^= UInt64(truncatingIfNeeded: text.tag)
        return Int(truncatingIfNeeded: (h &* 0xFF51_AFD7_ED55_8CCD) >> shift)
    }

    @inline(__always)
    func element(_ text: ShortText, slot: Int) -> Element? {
        let entry = entries + slot
        guard entry.pointee.text == text else { return nil }
        return entry.pointee.element
    }

    @inline(__always)
    func store(_ element: Element, _ text: ShortText, slot: Int) {
        entries[slot] = Entry(text: text, element: element)
    }
}

/// A reader's working memory (stacks and tables), kept between parses in a small pool.
/// Why: allocated afresh, every parse would start with large allocations, and glibc
/// answers a large allocation by first consolidating every small block freed since (the
/// whole previous document).
/// Whoever holds a `ReaderMemory` owns its blocks, which contain no live values.
private struct ReaderMemory: @unchecked Sendable {
    struct Block {
        var pointer: UnsafeMutableRawPointer
        var capacity: Int
    }
    var values: Block?
    var keys: Block?
    var frames: Block?
    var valueTable: UnsafeMutableRawPointer?
    var keyTable: UnsafeMutableRawPointer?

    /// NSLock (a pthread mutex) rather than Synchronization.Mutex: ThreadSanitizer on
    /// Linux cannot see Mutex's locking and reported every concurrent parse as a race.
    private final class Pool: @unchecked Sendable {
        let lock = NSLock()
        var kept: [ReaderMemory] = []
        func withLock<T>(_ body: (inout [ReaderMemory]) -> T) -> T {
            lock.lock(); defer { lock.unlock() }
            return body(&kept)
        }
    }
    private static let pool = Pool()
    /// Enough for a few concurrent parses; more readers than this allocate their own.
    private static let poolLimit = 4
    /// Stacks grown for an unusually large document are freed rather than kept.
    private static let keptStackLimit = 1 << 15

    static func take() -> ReaderMemory {
        pool.withLock { $0.popLast() } ?? ReaderMemory()
    }

    consuming func giveBack() {
        for block in [values, keys, frames] {
            if let block, block.capacity > Self.keptStackLimit { freeAll(); return }
        }
        let refused: ReaderMemory? = Self.pool.withLock { kept in
            guard kept.count < Self.poolLimit else { return self }
            kept.append(self)
            return nil
        }
        refused?.freeAll()
    }

    private func freeAll() {
        for block in [values, keys, frames] { block?.pointer.deallocate() }
        valueTable?.deallocate()
        keyTable?.deallocate()
    }
}

private struct Frame {
    var isObject: Bool
    var valueStart: Int
    var keyStart: Int
}

private struct JSONReader: ~Copyable {
    let p: UnsafePointer<UInt8>
    let end: Int
    let maxDepth: Int
    var pos = 0
    var values: MoveStack<JSON>
    var keys: MoveStack<String>
    var frames: MoveStack<Frame>
    /// Decoded bytes of a string with escapes; reused so each escaped string costs no new buffer.
    var scratch: [UInt8] = []
    // Shared boxes: `JSON` is indirect, so reusing these turns an allocation into a retain.
    let trueValue = JSON.bool(true)
    let falseValue = JSON.bool(false)
    let nullValue = JSON.null
    let emptyArray = JSON.array([])
    let emptyObject = JSON.object([])
    /// Off for small inputs, where setting up the tables would cost more than they save.
    let cachesShortText: Bool
    var valueCache: ShortTextCache<JSON>
    var keyCache: ShortTextCache<String>

    init(_ p: UnsafePointer<UInt8>, count: Int, maxDepth: Int, memory: ReaderMemory) {
        self.p = p
        self.end = count
        self.maxDepth = maxDepth
        values = MoveStack(capacity: 64, reusing: memory.values)
        keys = MoveStack(capacity: 32, reusing: memory.keys)
        frames = MoveStack(capacity: 16, reusing: memory.frames)
        cachesShortText = count >= 16 * 1024
        // Documents have few distinct keys, so a small key table stays in L1.
        valueCache = ShortTextCache(enabled: cachesShortText, bits: 10, reusing: memory.valueTable)
        keyCache = ShortTextCache(enabled: cachesShortText, bits: 8, reusing: memory.keyTable)
    }

    /// Ends a successful parse, returning the working memory for the next one.
    consuming func finish() -> ReaderMemory {
        ReaderMemory(values: values.relinquish(), keys: keys.relinquish(), frames: frames.relinquish(),
                     valueTable: valueCache.relinquish(), keyTable: keyCache.relinquish())
    }

    func failure(_ message: String, at offset: Int) -> JSONParseError {
        JSONParseError(offset: offset, message: message)
    }

    func unexpected(at offset: Int, _ suffix: String = "") -> JSONParseError {
        guard offset < end else { return failure("unexpected end of input", at: offset) }
        return failure("unexpected \(describe(p[offset]))\(suffix)", at: offset)
    }

    func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte <= 0x7E { return "character '\(Character(Unicode.Scalar(byte)))'" }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x\(hex.count == 1 ? "0" + hex : hex)"
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while pos < end {
            let c = p[pos]
            if c > 0x20 { return }
            guard c == 0x20 || c == 0x0A || c == 0x0D || c == 0x09 else { return }
            pos += 1
        }
    }

    mutating func parseDocument(allowFragments: Bool) throws(JSONParseError) -> JSON {
        skipWhitespace()
        guard pos < end else { throw failure("unexpected end of input", at: pos) }
        if !allowFragments && p[pos] != Byte.openBrace && p[pos] != Byte.openBracket {
            throw failure("expected an object or array at top level", at: pos)
        }
        try parseValues()
        skipWhitespace()
        if pos < end { throw unexpected(at: pos, " after the value") }
        return values.pop()
    }

    /// Parses one value, containers included, without recursion: `frames` holds the open
    /// containers; their finished children wait on `values` (and `keys`) until the close.
    mutating func parseValues() throws(JSONParseError) {
        nextValue: while true {
            skipWhitespace()
            guard pos < end else { throw failure("unexpected end of input", at: pos) }
            switch p[pos] {
            case Byte.openBrace:
                try checkDepth()
                pos += 1
                skipWhitespace()
                if pos < end && p[pos] == Byte.closeBrace {
                    pos += 1
                    values.push(emptyObject)
                } else {
                    frames.push(Frame(isObject: true, valueStart: values.count, keyStart: keys.count))
                    try parseKeyAndColon()
                    continue nextValue
                }
            case Byte.openBracket:
                try checkDepth()
                pos += 1
                skipWhitespace()
                if pos < end && p[pos] == Byte.closeBracket {
                    pos += 1
                    values.push(emptyArray)
                } else {
                    frames.push(Frame(isObject: false, valueStart: values.count, keyStart: keys.count))
                    continue nextValue
                }
            case Byte.quote:
                values.push(try parseStringValue())
            case Byte.minus, Byte.zero...Byte.nine:
                values.push(try parseNumber())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                values.push(trueValue)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                values.push(falseValue)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                values.push(nullValue)
            default:
                throw unexpected(at: pos)
            }

            // A value is complete: close every container that ends here.
            while frames.count > 0 {
                let frame = frames.top
                skipWhitespace()
                guard pos < end else { throw failure("unexpected end of input", at: pos) }
                let c = p[pos]
                if c == Byte.comma {
                    pos += 1
                    if frame.isObject { try parseKeyAndColon() }
                    continue nextValue
                }
                if frame.isObject {
                    guard c == Byte.closeBrace else { throw unexpected(at: pos, ", expected ',' or '}'") }
                    pos += 1
                    frames.forgetTop(1)
                    closeObject(frame)
                } else {
                    guard c == Byte.closeBracket else { throw unexpected(at: pos, ", expected ',' or ']'") }
                    pos += 1
                    frames.forgetTop(1)
                    values.push(.array(values.popArray(from: frame.valueStart)))
                }
            }
            return
        }
    }

    @inline(__always)
    func checkDepth() throws(JSONParseError) {
        if frames.count >= maxDepth { throw failure("nesting deeper than \(maxDepth)", at: pos) }
    }

    @inline(__always)
    mutating func closeObject(_ frame: Frame) {
        let n = values.count - frame.valueStart
        let valueBase = values.base + frame.valueStart
        let keyBase = keys.base + frame.keyStart
        var members = [JSON.Member]()
        members.reserveCapacity(n)
        for i in 0..<n { members.append(JSON.Member((keyBase + i).move(), (valueBase + i).move())) }
        values.forgetTop(n)
        keys.forgetTop(n)
        values.push(.object(members))
    }

    @inline(__always)
    mutating func parseKeyAndColon() throws(JSONParseError) {
        skipWhitespace()
        guard pos < end, p[pos] == Byte.quote else { throw unexpected(at: pos, ", expected a string key") }
        keys.push(try parseKey())
        skipWhitespace()
        guard pos < end, p[pos] == Byte.colon else { throw unexpected(at: pos, ", expected ':'") }
        pos += 1
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let n = literal.utf8CodeUnitCount
        let text = literal.utf8Start
        for i in 0..<n {
            guard pos + i < end else { throw failure("unexpected end of input", at: pos + i) }
            guard p[pos + i] == text[i] else { throw unexpected(at: pos + i, " in literal") }
        }
        pos += n
    }

    @inline(__always)
    func isDigit(_ i: Int) -> Bool {
        i < end && p[i] &- Byte.zero < 10
    }

    @inline(__always)
    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = pos
        var i = pos
        if p[i] == Byte.minus { i += 1 }
        guard i < end else { throw failure("unexpected end of input in number", at: i) }
        let first = p[i]
        if first == Byte.zero {
            i += 1
            if isDigit(i) { throw failure("leading zero in number", at: i - 1) }
        } else if first > Byte.zero && first <= Byte.nine {
            i += 1
            while isDigit(i) { i += 1 }
        } else {
            throw unexpected(at: i, ", expected a digit")
        }
        if i < end && p[i] == Byte.dot {
            i += 1
            guard isDigit(i) else { throw unexpected(at: i, ", expected a digit after '.'") }
            while isDigit(i) { i += 1 }
        }
        if i < end && (p[i] | 0x20) == UInt8(ascii: "e") {
            i += 1
            if i < end && (p[i] == Byte.plus || p[i] == Byte.minus) { i += 1 }
            guard isDigit(i) else { throw unexpected(at: i, ", expected a digit in exponent") }
            while isDigit(i) { i += 1 }
        }
        pos = i
        let n = i - start
        // Short numbers (counts, flags, small codes) repeat; longer ones (ids, measurements)
        // rarely do, and caching those would only churn the table.
        if cachesShortText && n <= 4 {
            let key = shortText(start, n, tag: n + 64)
            let slot = valueCache.slot(key)
            if let hit = valueCache.element(key, slot: slot) { return hit }
            let value = JSON.number(text(start, n))
            valueCache.store(value, key, slot: slot)
            return value
        }
        return .number(text(start, n))
    }

    @inline(__always)
    func text(_ start: Int, _ count: Int) -> String {
        return String(decoding: UnsafeBufferPointer(start: p + start, count: count), as: UTF8.self)
    }

    /// The `count` (at most `ShortText.maxCount`) bytes at `start`.
    @inline(__always)
    func shortText(_ start: Int, _ count: Int, tag: Int) -> ShortText {
        @inline(__always) func mask(_ word: UInt64, _ index: Int) -> UInt64 {
            // Bytes of word `index` that belong to the text; shifting by 64 gives 0, so 8 bytes keep all.
            let kept = UInt64(min(max(count - index * 8, 0), 8))
            return word & ((1 << (kept * 8)) &- 1)
        }
        var text = ShortText(tag: tag)
        if start + 32 <= end {
            let raw = UnsafeRawPointer(p + start)
            text.w0 = mask(UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)), 0)
            if count > 8 { text.w1 = mask(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)), 1) }
            if count > 16 { text.w2 = mask(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 16, as: UInt64.self)), 2) }
            if count > 24 { text.w3 = mask(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 24, as: UInt64.self)), 3) }
            return text
        }
        for k in 0..<count {
            let byte = UInt64(p[start + k]) << (UInt64(k & 7) * 8)
            switch k >> 3 {
            case 0: text.w0 |= byte
            case 1: text.w1 |= byte
            case 2: text.w2 |= byte
            default: text.w3 |= byte
            }
        }
        return text
    }

    /// Index of the first byte at or after `start` that a string cannot copy as is:
    /// `"`, `\`, a control character, or a non-ASCII byte (which needs validating);
    /// the compactor's scan, sixteen bytes a step.
    @inline(__always)
    func scanPlain(from start: Int) -> Int {
        JSONCompactor.scanPlain(p, from: start, end: end)
    }

    /// `pos` is on the opening quote; leaves `pos` after the closing one.
    @inline(__always)
    mutating func parseStringValue() throws(JSONParseError) -> JSON {
        let start = pos + 1
        let stop = scanPlain(from: start)
        guard stop < end, p[stop] == Byte.quote else { return .string(try parseString(resumingAt: stop)) }
        pos = stop + 1
        let n = stop - start
        // Values longer than this (URLs, dates, ids) are mostly unique: caching them only churns.
        guard cachesShortText && n <= 16 else { return .string(text(start, n)) }
        let key = shortText(start, n, tag: n)
        let slot = valueCache.slot(key)
        if let hit = valueCache.element(key, slot: slot) { return hit }
        let value = JSON.string(text(start, n))
        valueCache.store(value, key, slot: slot)
        return value
    }

    /// Like `parseStringValue`, for a member name.
    @inline(__always)
    mutating func parseKey() throws(JSONParseError) -> String {
        let start = pos + 1
        let stop = scanPlain(from: start)
        guard stop < end, p[stop] == Byte.quote else { return try parseString(resumingAt: stop) }
        pos = stop + 1
        let n = stop - start
        guard cachesShortText && n <= ShortText.maxCount else { return text(start, n) }
        let short = shortText(start, n, tag: n)
        let slot = keyCache.slot(short)
        if let hit = keyCache.element(short, slot: slot) { return hit }
        let key = text(start, n)
        keyCache.store(key, short, slot: slot)
        return key
    }

    /// The general case: `pos` is on the opening quote and every byte before `resume`
    /// is known to be plain ASCII.
    mutating func parseString(resumingAt resume: Int) throws(JSONParseError) -> String {
        let open = pos
        var i = resume
        var segment = pos + 1
        var escaped = false
        while true {
            i = scanPlain(from: i)
            guard i < end else { throw failure("unterminated string", at: open) }
            let c = p[i]
            if c == Byte.quote {
                let result: String
                if escaped {
                    scratch.append(contentsOf: UnsafeBufferPointer(start: p + segment, count: i - segment))
                    result = String(decoding: scratch, as: UTF8.self)
                } else {
                    result = String(decoding: UnsafeBufferPointer(start: p + segment, count: i - segment), as: UTF8.self)
                }
                pos = i + 1
                return result
            } else if c == Byte.backslash {
                if !escaped {
                    escaped = true
                    scratch.removeAll(keepingCapacity: true)
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: p + segment, count: i - segment))
                i = try decodeEscape(at: i)
                segment = i
            } else if c < 0x20 {
                throw failure("unescaped control character in string", at: i)
            } else {
                i = try validateUTF8Sequence(at: i)
            }
        }
    }

    /// Checks the multi-byte UTF-8 sequence starting at `i` (RFC 3629 table, shared with the
    /// compactor) and returns the index after it.
    func validateUTF8Sequence(at i: Int) throws(JSONParseError) -> Int {
        let next = JSONCompactor.validateUTF8Sequence(p, at: i, end: end)
        guard next >= 0 else { throw failure("invalid UTF-8 in string", at: i) }
        return next
    }

    /// Decodes the escape at `i` (on the backslash) into `scratch`; returns the index after it.
    mutating func decodeEscape(at i: Int) throws(JSONParseError) -> Int {
        guard i + 1 < end else { throw failure("unterminated string", at: i) }
        let decoded: UInt8
        switch p[i + 1] {
        case Byte.quote: decoded = Byte.quote
        case Byte.backslash: decoded = Byte.backslash
        case Byte.slash: decoded = Byte.slash
        case UInt8(ascii: "b"): decoded = 0x08
        case UInt8(ascii: "f"): decoded = 0x0C
        case UInt8(ascii: "n"): decoded = 0x0A
        case UInt8(ascii: "r"): decoded = 0x0D
        case UInt8(ascii: "t"): decoded = 0x09
        case UInt8(ascii: "u"):
            var scalar = try hex4(at: i + 2)
            var next = i + 6
            if scalar >= 0xDC00 && scalar <= 0xDFFF {
                throw failure("lone low surrogate in \\u escape", at: i)
            }
            if scalar >= 0xD800 && scalar <= 0xDBFF {
                guard next + 1 < end, p[next] == Byte.backslash, p[next + 1] == UInt8(ascii: "u") else {
                    throw failure("lone high surrogate in \\u escape", at: i)
                }
                let low = try hex4(at: next + 2)
                guard low >= 0xDC00 && low <= 0xDFFF else {
                    throw failure("lone high surrogate in \\u escape", at: i)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                next += 6
            }
            appendUTF8(scalar)
            return next
        default:
            throw failure("invalid escape \\\(describeEscape(p[i + 1]))", at: i)
        }
        scratch.append(decoded)
        return i + 2
    }

    func describeEscape(_ byte: UInt8) -> String {
        byte >= 0x21 && byte <= 0x7E ? String(Character(Unicode.Scalar(byte))) : "(byte \(byte))"
    }

    func hex4(at i: Int) throws(JSONParseError) -> UInt32 {
        guard i + 4 <= end else { throw failure("unterminated string", at: i) }
        let value = JSONCompactor.hex4(p, at: i, end: end)
        guard value >= 0 else {
            let bad = (i..<(i + 4)).first { !isHexDigit(p[$0]) } ?? i
            throw failure("invalid hex digit in \\u escape", at: bad)
        }
        return UInt32(value)
    }

    func isHexDigit(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "f"))
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        JSONCompactor.appendUTF8(scalar, into: &scratch)
    }
}
