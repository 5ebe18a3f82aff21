import Foundation

/// One MessagePack value (the msgpack.org specification, 2017 edition) as the `JSON` a
/// record logs. The mapping, chosen so that every value has valid JSON and nothing is lost
/// silently:
///
/// - nil, true, false: `null`, `true`, `false`.
/// - Integers of every width, signed and unsigned: a JSON number whose text is the exact
///   decimal value (`18446744073709551615`, `-9223372036854775808`), never a rounded double.
/// - float 32 and float 64: the shortest decimal text that reads back as the same float of
///   that width (float 32 `0.1` is `0.1`, not `0.10000000149011612`). NaN, +∞ and −∞ have no
///   JSON number: they are the strings `"NaN"`, `"Infinity"` and `"-Infinity"`, as in the
///   Protocol Buffers JSON mapping.
/// - str: a JSON string. It must be UTF-8; other bytes fail the value (use bin for bytes).
/// - bin: `{"base64":"…"}` (standard alphabet, padded).
/// - array: a JSON array.
/// - map: a JSON object, members in the order sent, duplicate keys kept. A key that is not
///   a str is written as its own compact JSON text: the integer key `1` is the member `"1"`,
///   `true` is `"true"`, nil is `"null"`, a bin key `"{\"base64\":\"AQI=\"}"`. Inside such a
///   key, a map's keys must be str, nil, bool or numbers: a key of a key is text escaped
///   twice, and deeper it would grow exponentially, so deeper nesting fails the value.
/// - timestamp (extension type -1, all three widths): an RFC 3339 string in UTC
///   (`MsgPackTimestamp`).
/// - any other extension: `{"ext":N,"base64":"…"}`, N its type code (-128...127).
///
/// One value fills the body: bytes after it fail, as does a value cut short. Containers
/// nest at most `maxDepth` deep (a scalar is depth 0, `[]` depth 1), so a hostile body
/// cannot exhaust the stack of the recursive descent.
public enum MsgPackDecoder {
    /// The nesting limit when a rule sets none, the JSON parser's.
    public static let defaultMaxDepth = 512

    /// Decodes `bytes`, which must hold exactly one MessagePack value.
    /// - Parameters:
    ///   - bytes: The body.
    ///   - maxDepth: Containers nested deeper than this fail.
    public static func decode(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(MsgPackError) -> JSON {
        var reader = MsgPackReader(bytes: bytes, maxDepth: maxDepth)
        let value = try reader.value(depth: 0)
        if reader.offset < bytes.count {
            throw MsgPackError(offset: reader.offset, message: "\(bytes.count - reader.offset) bytes follow the value")
        }
        return value
    }

    /// `decode` for a byte array.
    /// - Parameters:
    ///   - bytes: The body.
    ///   - maxDepth: Containers nested deeper than this fail.
    public static func decode(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(MsgPackError) -> JSON {
        let result: Result<JSON, MsgPackError> = bytes.withUnsafeBytes { raw in
            Result { () throws(MsgPackError) -> JSON in try decode(raw, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// `decode` over `Data`, without copying it.
    /// - Parameters:
    ///   - data: The body.
    ///   - maxDepth: Containers nested deeper than this fail.
    public static func decode(_ data: Data, maxDepth: Int = defaultMaxDepth) throws(MsgPackError) -> JSON {
        let result: Result<JSON, MsgPackError> = data.withUnsafeBytes { raw in
            Result { () throws(MsgPackError) -> JSON in try decode(raw, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// A float's JSON: its shortest round-trip text (Swift's `description`, which for a
    /// finite value is always an RFC 8259 number: `1.0`, `-0.0`, `1e-05`, `1e+16`), or
    /// one of the three strings for the values JSON has no number for.
    static func json<F: BinaryFloatingPoint & CustomStringConvertible>(float: F) -> JSON {
        if float.isNaN { return .string("NaN") }
        if float.isInfinite { return .string(float < 0 ? "-Infinity" : "Infinity") }
        return .number(float.description)
    }
}

/// The decoder's cursor: `offset` only moves forward, and every read checks the bytes
/// left first, so a length field can never make it read outside `bytes`.
private struct MsgPackReader {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    var offset = 0
    /// How many map keys enclose the value being read (keys may be containers).
    var keysBeingRead = 0

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes; self.maxDepth = maxDepth
    }

    var remaining: Int { bytes.count - offset }

    /// The next `count` bytes; `start` (the value's first byte) is where a shortfall is reported.
    mutating func take(_ count: Int, _ what: String, start: Int) throws(MsgPackError) -> UnsafeRawBufferPointer {
        guard count <= remaining else {
            throw MsgPackError(offset: start, message: "\(what) needs \(count) more bytes but the input ends after \(remaining)")
        }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        offset += count
        return slice
    }

    /// A big-endian unsigned integer of `width` bytes (1, 2, 4 or 8).
    mutating func unsigned(_ width: Int, _ what: String, start: Int) throws(MsgPackError) -> UInt64 {
        let field = try take(width, what, start: start)
        var value: UInt64 = 0
        for byte in field { value = value << 8 | UInt64(byte) }
        return value
    }

    /// The recursion is value → array or map → value: these three keep small frames (every
    /// scalar is read in `scalar`, every key named in `memberName`, neither inlined), so the
    /// stack a level costs stays small even in a debug build.
    mutating func value(depth: Int) throws(MsgPackError) -> JSON {
        let start = offset
        guard offset < bytes.count else {
            throw MsgPackError(offset: start, message: "a value is missing: the input ends")
        }
        let tag = bytes[offset]
        offset += 1
        switch tag {
        case 0x80...0x8F:
            return try map(count: Int(tag & 0x0F), depth: depth, start: start)
        case 0x90...0x9F:
            return try array(count: Int(tag & 0x0F), depth: depth, start: start)
        case 0xDC, 0xDD:
            let count = try unsigned(tag == 0xDC ? 2 : 4, "an array length", start: start)
            return try array(count: Int(count), depth: depth, start: start)
        case 0xDE, 0xDF:
            let count = try unsigned(tag == 0xDE ? 2 : 4, "a map length", start: start)
            return try map(count: Int(count), depth: depth, start: start)
        default:
            return try scalar(tag: tag, start: start)
        }
    }

    /// Every value that is not an array or a map, its tag already read.
    @inline(never)
    mutating func scalar(tag: UInt8, start: Int) throws(MsgPackError) -> JSON {
        switch tag {
        case 0x00...0x7F:
            return .number(String(tag))
        case 0xA0...0xBF:
            return try string(length: Int(tag & 0x1F), start: start)
        case 0xC0:
            return .null
        case 0xC1:
            throw MsgPackError(offset: start, message: "byte 0xc1 is never used in MessagePack")
        case 0xC2:
            return .bool(false)
        case 0xC3:
            return .bool(true)
        case 0xC4, 0xC5, 0xC6:
            let length = try unsigned(1 << Int(tag - 0xC4), "a bin length", start: start)
            let payload = try take(Int(length), "a bin of \(length) bytes", start: start)
            return .object([JSON.Member("base64", .string(Data(payload).base64EncodedString()))])
        case 0xC7, 0xC8, 0xC9:
            let length = try unsigned(1 << Int(tag - 0xC7), "an ext length", start: start)
            return try ext(length: Int(length), start: start)
        case 0xCA:
            let bits = try unsigned(4, "a float 32", start: start)
            return MsgPackDecoder.json(float: Float(bitPattern: UInt32(truncatingIfNeeded: bits)))
        case 0xCB:
            let bits = try unsigned(8, "a float 64", start: start)
            return MsgPackDecoder.json(float: Double(bitPattern: bits))
        case 0xCC, 0xCD, 0xCE, 0xCF:
            let value = try unsigned(1 << Int(tag - 0xCC), "an unsigned integer", start: start)
            return .number(String(value))
        case 0xD0, 0xD1, 0xD2, 0xD3:
            let width = 1 << Int(tag - 0xD0)
            let raw = try unsigned(width, "a signed integer", start: start)
            // Sign-extend from `width` bytes: shift the sign bit to the top, then back arithmetically.
            let shift = UInt64(64 - 8 * width)
            return .number(String(Int64(bitPattern: raw << shift) >> shift))
        case 0xD4, 0xD5, 0xD6, 0xD7, 0xD8:
            return try ext(length: 1 << Int(tag - 0xD4), start: start)
        case 0xD9, 0xDA, 0xDB:
            let length = try unsigned(1 << Int(tag - 0xD9), "a str length", start: start)
            return try string(length: Int(length), start: start)
        case 0xE0...0xFF:  // negative fixint
            return .number(String(Int8(bitPattern: tag)))
        default:  // containers, read by `value`
            preconditionFailure("container tag \(tag) reached scalar")
        }
    }

    mutating func string(length: Int, start: Int) throws(MsgPackError) -> JSON {
        let payload = try take(length, "a str of \(length) bytes", start: start)
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw MsgPackError(offset: start, message: "a str of \(length) bytes is not valid UTF-8")
        }
        return .string(text)
    }

    mutating func ext(length: Int, start: Int) throws(MsgPackError) -> JSON {
        let type = Int8(bitPattern: UInt8(truncatingIfNeeded: try unsigned(1, "an ext type", start: start)))
        let payload = try take(length, "an ext of \(length) bytes", start: start)
        if type == MsgPackTimestamp.extensionType, let text = MsgPackTimestamp.text(payload: payload) {
            return .string(text)
        }
        return .object([JSON.Member("ext", .number(String(type))),
                        JSON.Member("base64", .string(Data(payload).base64EncodedString()))])
    }

    mutating func enter(depth: Int, start: Int) throws(MsgPackError) {
        guard depth < maxDepth else {
            throw MsgPackError(offset: start, message: "containers nest deeper than the limit of \(maxDepth)")
        }
    }

    mutating func array(count: Int, depth: Int, start: Int) throws(MsgPackError) -> JSON {
        try enter(depth: depth, start: start)
        var elements: [JSON] = []
        // A length field is only a claim: every element takes at least one byte.
        elements.reserveCapacity(min(count, remaining))
        for _ in 0..<count { elements.append(try value(depth: depth + 1)) }
        return .array(elements)
    }

    mutating func map(count: Int, depth: Int, start: Int) throws(MsgPackError) -> JSON {
        try enter(depth: depth, start: start)
        var members: [JSON.Member] = []
        members.reserveCapacity(min(count, remaining / 2))
        for _ in 0..<count {
            let keyStart = offset
            keysBeingRead += 1
            let key = try value(depth: depth + 1)
            keysBeingRead -= 1
            let name = try memberName(key, start: keyStart)
            members.append(JSON.Member(name, try value(depth: depth + 1)))
        }
        return .object(members)
    }

    /// A str key as it is; any other key as its compact JSON text.
    @inline(never)
    func memberName(_ key: JSON, start: Int) throws(MsgPackError) -> String {
        switch key {
        case .string(let text):
            return text
        case .array, .object:
            // Text in text is escaped again at every level (`"` → `\"` → `\\\"`): keys nested
            // in keys would make the text grow exponentially with the nesting.
            guard keysBeingRead == 0 else {
                throw MsgPackError(offset: start, message: "a map key inside a map key is an array, map, bin or ext")
            }
        case .null, .bool, .number:
            break
        }
        var text: [UInt8] = []
        JSONWriter.write(key, into: &text)
        return String(decoding: text, as: UTF8.self)
    }
}
