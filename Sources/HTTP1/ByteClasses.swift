/// Character classes of RFC 9110/9112 as bit tests, so the parsers never
/// allocate or consult a lazily initialised table per byte.
@usableFromInline
enum ByteClass {
    @usableFromInline static let cr: UInt8 = 13
    @usableFromInline static let lf: UInt8 = 10
    @usableFromInline static let sp: UInt8 = 32
    @usableFromInline static let htab: UInt8 = 9

    // Bits for "!#$%&'*+-.^_`|~", DIGIT and ALPHA (tchar, RFC 9110 §5.6.2).
    @usableFromInline static let tcharLow: UInt64 = 0x03ff_6cfa_0000_0000
    @usableFromInline static let tcharHigh: UInt64 = 0x57ff_ffff_c7ff_fffe

    @inlinable @inline(__always)
    static func isToken(_ c: UInt8) -> Bool {
        if c < 64 { return (tcharLow >> UInt64(c)) & 1 == 1 }
        if c < 128 { return (tcharHigh >> UInt64(c &- 64)) & 1 == 1 }
        return false
    }

    // Bits for ALPHA, DIGIT and "-._~%!$&'()*+,;=:[]": a uri-host with optional port.
    @usableFromInline static let hostLow: UInt64 = 0x2fff_7ff2_0000_0000
    @usableFromInline static let hostHigh: UInt64 = 0x47ff_fffe_afff_fffe

    @inlinable @inline(__always)
    static func isHostFieldByte(_ c: UInt8) -> Bool {
        if c < 64 { return (hostLow >> UInt64(c)) & 1 == 1 }
        if c < 128 { return (hostHigh >> UInt64(c &- 64)) & 1 == 1 }
        return false
    }

    /// field-vchar / SP / HTAB: anything but CTLs (except HTAB) and DEL; obs-text allowed.
    @inlinable @inline(__always)
    static func isFieldValue(_ c: UInt8) -> Bool {
        c == htab || (c >= 0x20 && c != 0x7f)
    }

    /// Visible ASCII: what a request-target may contain (no whitespace, CTL,
    /// DEL or raw non-ASCII, so the target we forward is the target we received).
    @inlinable @inline(__always)
    static func isTargetByte(_ c: UInt8) -> Bool {
        c > 0x20 && c < 0x7f
    }

    @inlinable @inline(__always)
    static func isDigit(_ c: UInt8) -> Bool { c &- 48 < 10 }

    @inlinable @inline(__always)
    static func isOWS(_ c: UInt8) -> Bool { c == sp || c == htab }

    /// The value of a hex digit, or nil.
    @inlinable @inline(__always)
    static func hexValue(_ c: UInt8) -> UInt64? {
        switch c {
        case 48...57: return UInt64(c - 48)
        case 65...70: return UInt64(c - 55)
        case 97...102: return UInt64(c - 87)
        default: return nil
        }
    }
}

/// Word-at-a-time searches (SWAR), because finding line ends and validating
/// field values is most of the cost of parsing a head.
@usableFromInline
enum ByteSearch {
    @usableFromInline static let ones: UInt64 = 0x0101_0101_0101_0101
    @usableFromInline static let highs: UInt64 = 0x8080_8080_8080_8080

    /// Index of the first `target` in `bytes[from..<end]`, or nil.
    @inlinable
    static func firstIndex(of target: UInt8, in bytes: UnsafeRawBufferPointer, from: Int, to end: Int) -> Int? {
        var i = from
        let pattern = UInt64(target) &* ones
        while i + 8 <= end {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) ^ pattern
            // The lowest flagged byte is exact: false positives only sit above a true zero byte.
            let found = (word &- ones) & ~word & highs
            if found != 0 { return i + found.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end {
            if bytes[i] == target { return i }
            i += 1
        }
        return nil
    }

    /// Index of the first byte in `bytes[from..<end]` that is a CTL (< 0x20) or DEL, or `end`.
    @inlinable
    static func firstControl(in bytes: UnsafeRawBufferPointer, from: Int, to end: Int) -> Int {
        var i = from
        let del = 0x7f &* ones
        while i + 8 <= end {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let below = (word &- 0x20 &* ones) & ~word & highs
            let d = word ^ del
            let isDel = (d &- ones) & ~d & highs
            let found = below | isDel
            if found != 0 { return i + found.trailingZeroBitCount >> 3 }
            i += 8
        }
        while i < end {
            let c = bytes[i]
            if c < 0x20 || c == 0x7f { return i }
            i += 1
        }
        return end
    }
}

/// Decimal digits written in place: the Host field's port on the loop and the log
/// record's integers and durations in the workers (no interpolation, no stack copy).
package enum DecimalText {
    /// The digits of `value` at `p` (room for 20); returns how many.
    @inlinable @inline(__always)
    package static func write(_ value: UInt64, to p: UnsafeMutablePointer<UInt8>) -> Int {
        // Most durations' whole seconds: one digit, no division.
        if value < 10 { p[0] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value); return 1 }
        var n = 1
        var rest = value / 10
        while rest > 0 { n += 1; rest /= 10 }
        rest = value
        var i = n
        repeat {
            i -= 1
            p[i] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest > 0
        return n
    }
}
