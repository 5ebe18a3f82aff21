/// Compact RFC 8259 output.
///
/// Escaping: `"` and `\`, the two-character forms `\b \f \n \r \t`, every other control
/// character as `\u00xx` (lower-case hex, as JavaScript's `JSON.stringify`). Everything
/// else, U+2028/U+2029 included, is written as raw UTF-8: RFC 8259 does not ask for more,
/// records are read by JSON parsers (not evaluated as JavaScript), and JSON Lines only
/// splits on `\n`, which is always escaped.
public enum JSONWriter {
    /// Appends the compact text of `value` (no insignificant white space; numbers
    /// as their source text; strings escaped per RFC 8259).
    /// - Parameters:
    ///   - value: The value to write.
    ///   - output: Where the text is appended.
    public static func write(_ value: JSON, into output: inout [UInt8]) {
        switch value {
        case .null:
            appendASCII("null", into: &output)
        case .bool(let flag):
            appendASCII(flag ? "true" : "false", into: &output)
        case .number(let text):
            appendRaw(text, into: &output)
        case .string(let text):
            appendQuoted(text, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                write(element, into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            var first = true
            for member in members {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                appendQuoted(member.key, into: &output)
                output.append(UInt8(ascii: ":"))
                write(member.value, into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `string` as a quoted JSON string. Record encoders use it for fields.
    /// - Parameters:
    ///   - string: Any text.
    ///   - output: Where the quoted string is appended.
    public static func appendQuoted(_ string: String, into output: inout [UInt8]) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { utf8 in
            appendQuoted(utf8: utf8, into: &output)
        }
        if done == nil {
            var copy = string
            copy.withUTF8 { appendQuoted(utf8: $0, into: &output) }
        }
    }

    /// Appends `utf8` (assumed valid UTF-8) as a quoted JSON string.
    /// - Parameters:
    ///   - utf8: Valid UTF-8 bytes.
    ///   - output: Where the quoted string is appended.
    public static func appendQuoted(utf8: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        guard let base = utf8.baseAddress else {
            output.append(UInt8(ascii: "\""))
            return
        }
        let end = utf8.count
        var runStart = 0
        var i = 0
        while true {
            i = firstEscapable(base, from: i, end: end)
            if i >= end { break }
            if i > runStart { output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: i - runStart)) }
            appendEscape(base[i], into: &output)
            i += 1
            runStart = i
        }
        if end > runStart { output.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: end - runStart)) }
        output.append(UInt8(ascii: "\""))
    }

    /// Index of the first byte at or after `start` that `appendQuoted` escapes (`end` when none);
    /// public for writers with their own buffers (the log's record buffer).
    /// - Parameters:
    ///   - p: The bytes.
    ///   - start: Where to start looking.
    ///   - end: One past the last byte to look at.
    @inline(__always)
    public static func firstEscapable(_ p: UnsafePointer<UInt8>, from start: Int, end: Int) -> Int {
        var i = start
        while i + 8 <= end {
            let special = escapeMask(UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)))
            if special != 0 { return i + special.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end {
            let c = p[i]
            if c == 0x22 || c == 0x5C || c < 0x20 { return i }
            i += 1
        }
        return end
    }

    /// The high bit of each byte of `w` (byte k in bits 8k...8k+7) that `appendQuoted` escapes
    /// (`"`, `\`, below 0x20). The lowest set bit is exact; a higher one can be a false
    /// positive only above a byte that is itself flagged (a borrow), so callers use the lowest.
    /// Inlinable: the record buffer runs it per 8 bytes from another module.
    /// - Parameter w: Eight bytes, the first in the lowest bits.
    @inlinable @inline(__always)
    public static func escapeMask(_ w: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quote = w ^ (ones &* 0x22)
        let backslash = w ^ (ones &* 0x5C)
        // Non-ASCII bytes have their high bit set in `w`, so `& ~w` keeps them out.
        var special = (w &- ones &* 0x20) & ~w
        special |= (quote &- ones) & ~quote
        special |= (backslash &- ones) & ~backslash
        return special & 0x8080_8080_8080_8080
    }

    /// How many bytes `byte` takes inside a quoted string: 1, or its escape's 2 or 6.
    /// - Parameter byte: One byte of UTF-8 text.
    @inlinable
    public static func escapedLength(_ byte: UInt8) -> Int {
        switch byte {
        case 0x22, 0x5C, 0x08, 0x0C, 0x0A, 0x0D, 0x09: return 2
        case 0..<0x20: return 6
        default: return 1
        }
    }

    /// Writes the escape `appendQuoted` uses for `byte` (2 or 6 bytes) at `p`; returns its length.
    /// - Parameters:
    ///   - byte: A byte `escapedLength` says takes more than one.
    ///   - p: Room for at least 6 bytes.
    public static func writeEscape(_ byte: UInt8, to p: UnsafeMutablePointer<UInt8>) -> Int {
        p[0] = 0x5C
        switch byte {
        case 0x22: p[1] = 0x22
        case 0x5C: p[1] = 0x5C
        case 0x08: p[1] = UInt8(ascii: "b")
        case 0x0C: p[1] = UInt8(ascii: "f")
        case 0x0A: p[1] = UInt8(ascii: "n")
        case 0x0D: p[1] = UInt8(ascii: "r")
        case 0x09: p[1] = UInt8(ascii: "t")
        default:
            let hex: StaticString = "0123456789abcdef"
            let digits = hex.utf8Start
            p[1] = UInt8(ascii: "u"); p[2] = 0x30; p[3] = 0x30
            p[4] = digits[Int(byte >> 4)]; p[5] = digits[Int(byte & 0xF)]
            return 6
        }
        return 2
    }

    static func appendEscape(_ byte: UInt8, into output: inout [UInt8]) {
        var escape: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &escape) { raw in
            guard let p = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return }
            let n = writeEscape(byte, to: p)
            output.append(contentsOf: UnsafeBufferPointer(start: p, count: n))
        }
    }

    @inline(__always)
    static func appendASCII(_ text: StaticString, into output: inout [UInt8]) {
        output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    static func appendRaw(_ text: String, into output: inout [UInt8]) {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { output.append(contentsOf: $0) }
        if done == nil { output.append(contentsOf: text.utf8) }
    }
}

extension JSON: CustomStringConvertible {
    /// The compact text, as `JSONWriter` writes it.
    public var compactText: String {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        JSONWriter.write(self, into: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// The compact JSON text.
    public var description: String { compactText }
}
