/// The MessagePack timestamp extension (type -1) as RFC 3339 text in UTC:
/// `2026-12-04T20:24:27Z`, with the nanoseconds as a fraction when there are any,
/// trailing zeros dropped (`.5`, `.123456789`).
///
/// The three widths: 4 bytes (unsigned 32-bit seconds), 8 bytes (30-bit nanoseconds over
/// 34-bit unsigned seconds), 12 bytes (unsigned 32-bit nanoseconds, then signed 64-bit
/// seconds). A payload of another size, nanoseconds above 999,999,999 or an instant outside
/// the years 0000–9999 (RFC 3339's four-digit year) has no such text: `text(payload:)` is
/// nil and the decoder writes the extension's generic `{"ext":-1,"base64":…}` form.
public enum MsgPackTimestamp {
    /// The extension type code of a timestamp.
    public static let extensionType: Int8 = -1

    /// 0000-01-01T00:00:00Z and 10000-01-01T00:00:00Z in Unix seconds: the instants RFC 3339 can write.
    static let earliestSecond: Int64 = -62_167_219_200
    static let endSecond: Int64 = 253_402_300_800

    /// The RFC 3339 text of a timestamp payload, or nil when it is not one that has such text.
    /// - Parameter payload: The extension's data bytes.
    public static func text(payload: UnsafeRawBufferPointer) -> String? {
        let seconds: Int64, nanoseconds: UInt32
        switch payload.count {
        case 4:
            seconds = Int64(bigEndian(payload, 0, 4))
            nanoseconds = 0
        case 8:
            let word = bigEndian(payload, 0, 8)
            nanoseconds = UInt32(truncatingIfNeeded: word >> 34)
            seconds = Int64(word & 0x3_FFFF_FFFF)
        case 12:
            nanoseconds = UInt32(truncatingIfNeeded: bigEndian(payload, 0, 4))
            seconds = Int64(bitPattern: bigEndian(payload, 4, 8))
        default:
            return nil
        }
        return text(seconds: seconds, nanoseconds: nanoseconds)
    }

    /// `seconds` since 1970-01-01T00:00:00Z plus `nanoseconds`, as RFC 3339 text; nil when
    /// the nanoseconds are not below one second or the year is outside 0000–9999.
    /// - Parameters:
    ///   - seconds: Unix seconds (negative before 1970).
    ///   - nanoseconds: 0...999,999,999.
    public static func text(seconds: Int64, nanoseconds: UInt32) -> String? {
        guard nanoseconds < 1_000_000_000, seconds >= earliestSecond, seconds < endSecond else { return nil }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        var out: [UInt8] = []
        out.reserveCapacity(30)
        appendDigits(year, 4, &out); out.append(UInt8(ascii: "-"))
        appendDigits(month, 2, &out); out.append(UInt8(ascii: "-"))
        appendDigits(day, 2, &out); out.append(UInt8(ascii: "T"))
        appendDigits(Int(secondOfDay / 3600), 2, &out); out.append(UInt8(ascii: ":"))
        appendDigits(Int(secondOfDay / 60 % 60), 2, &out); out.append(UInt8(ascii: ":"))
        appendDigits(Int(secondOfDay % 60), 2, &out)
        if nanoseconds > 0 {
            var fraction = Int(nanoseconds), digits = 9
            while fraction % 10 == 0 { fraction /= 10; digits -= 1 }
            out.append(UInt8(ascii: "."))
            appendDigits(fraction, digits, &out)
        }
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The proleptic Gregorian date `days` after 1970-01-01. Counts in 400-year eras
    /// (146,097 days each) starting on a March 1st, so the leap day is the last day of
    /// its year and needs no special case.
    static func civilDate(daysSinceEpoch days: Int64) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468  // days since 0000-03-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097  // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365, from March 1st
        let monthFromMarch = (5 * dayOfYear + 2) / 153  // 0...11
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    private static func appendDigits(_ value: Int, _ width: Int, _ out: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<max(width, 1) { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(rest / divisor % 10))
            rest %= divisor
            divisor /= 10
        }
    }

    private static func bigEndian(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ count: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in start..<(start + count) { value = value << 8 | UInt64(bytes[i]) }
        return value
    }
}
