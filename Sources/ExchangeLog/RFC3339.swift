import ResponseSerialization
/// RFC 3339 UTC timestamps with microseconds (`2026-12-02T10:11:12.123456Z`), built from
/// integer arithmetic because a DateFormatter per record costs more than the record.
public enum RFC3339 {
    public static func format(secondsSince1970: Double) -> String {
        var buffer = [UInt8]()
        buffer.reserveCapacity(27)
        append(secondsSince1970: secondsSince1970, into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    /// Formats into 27 bytes on the stack and appends them at once: a record has four of
    /// these, and appending field by field cost more than the rest of the timeline.
    public static func append(secondsSince1970: Double, into buffer: inout [UInt8]) {
        withText(secondsSince1970: secondsSince1970) { buffer.append(contentsOf: $0) }
    }

    /// The 27 bytes of the timestamp, on the stack, handed to `body`.
    @inline(__always)
    static func withText(secondsSince1970: Double, _ body: (UnsafeBufferPointer<UInt8>) -> Void) {
        let (whole, micros) = split(secondsSince1970)
        var text: (UInt64, UInt64, UInt64, UInt32) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &text) { raw in
            writeSecond(whole, to: raw)
            writeFraction(micros, to: raw)
            guard let base = raw.baseAddress else { return }
            body(UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: 27))
        }
    }

    /// Whole seconds and microseconds as the text shows them: clamped to the years
    /// 0001...9999, rounded to the microsecond (carrying into the next second).
    @inline(__always)
    static func split(_ input: Double) -> (seconds: Int64, micros: Int) {
        let lowest = -62_135_596_800.0   // 0001-01-01T00:00:00Z
        let highest = 253_402_300_799.0  // 9999-12-31T23:59:59Z
        let clamped = input.isFinite ? min(max(input, lowest), highest) : 0
        // Floor and rounding without libm calls (four per record): the clamp keeps the value
        // exact in Int64, and the fraction is never negative.
        var seconds = Int64(clamped)
        if Double(seconds) > clamped { seconds -= 1 }
        var micros = Int((clamped - Double(seconds)) * 1_000_000 + 0.5)
        if micros >= 1_000_000 {
            micros -= 1_000_000
            seconds += 1
        }
        return (seconds, micros)
    }

    /// `YYYY-MM-DDTHH:MM:SS` (19 bytes) of whole `seconds` at the start of `raw`.
    static func writeSecond(_ seconds: Int64, to raw: UnsafeMutableRawBufferPointer) {
        let time = CivilTime(seconds: seconds)
        put(time.year, width: 4, at: 0, raw)
        raw[4] = UInt8(ascii: "-")
        put(time.month, width: 2, at: 5, raw)
        raw[7] = UInt8(ascii: "-")
        put(time.day, width: 2, at: 8, raw)
        raw[10] = UInt8(ascii: "T")
        put(time.hour, width: 2, at: 11, raw)
        raw[13] = UInt8(ascii: ":")
        put(time.minute, width: 2, at: 14, raw)
        raw[16] = UInt8(ascii: ":")
        put(time.second, width: 2, at: 17, raw)
    }

    /// `.uuuuuuZ` (8 bytes) at offset 19 of `raw`.
    @inline(__always)
    static func writeFraction(_ micros: Int, to raw: UnsafeMutableRawBufferPointer) {
        precondition(raw.count >= 27, "RFC3339.writeFraction: room for 27 bytes")
        raw[19] = UInt8(ascii: ".")
        if let base = raw.baseAddress { RecordEncoder.writeSixDigits(micros, to: base + 20) }
        raw[26] = UInt8(ascii: "Z")
    }

    @inline(__always)
    static func put(_ value: Int, width: Int, at offset: Int, _ raw: UnsafeMutableRawBufferPointer) {
        var remaining = value
        var index = offset + width
        while index > offset {
            index -= 1
            raw[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10)
            remaining /= 10
        }
    }

    /// `YYYYMMDDTHHMMSS` (UTC), the stamp in rotated file names.
    public static func basicStamp(secondsSince1970: Double) -> String {
        let time = CivilTime(secondsSince1970: secondsSince1970)
        var buffer = [UInt8]()
        buffer.reserveCapacity(15)
        appendDigits(time.year, width: 4, into: &buffer)
        appendDigits(time.month, width: 2, into: &buffer)
        appendDigits(time.day, width: 2, into: &buffer)
        buffer.append(UInt8(ascii: "T"))
        appendDigits(time.hour, width: 2, into: &buffer)
        appendDigits(time.minute, width: 2, into: &buffer)
        appendDigits(time.second, width: 2, into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    private static func appendDigits(_ value: Int, width: Int, into buffer: inout [UInt8]) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0)
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { raw in
            var index = width
            while index > 0 {
                index -= 1
                raw[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            buffer.append(contentsOf: raw.prefix(width))
        }
    }
}

/// A UTC calendar instant; years are clamped to 0001...9999 so every field fits its width.
struct CivilTime {
    var year: Int, month: Int, day: Int
    var hour: Int, minute: Int, second: Int, microsecond: Int

    init(secondsSince1970 input: Double) {
        let (seconds, micros) = RFC3339.split(input)
        self.init(seconds: seconds)
        microsecond = micros
    }

    /// A whole second (already clamped to the years 0001...9999 by `RFC3339.split`).
    init(seconds: Int64) {
        let micros = 0
        var days = seconds / 86400
        var secondOfDay = seconds % 86400
        if secondOfDay < 0 {
            secondOfDay += 86400
            days -= 1
        }
        let date = CivilDate(daysSince1970: days)
        self.year = min(max(Int(date.year), 1), 9999)
        self.month = Int(date.month)
        self.day = Int(date.day)
        self.hour = Int(secondOfDay / 3600)
        self.minute = Int(secondOfDay % 3600 / 60)
        self.second = Int(secondOfDay % 60)
        self.microsecond = micros
    }
}
