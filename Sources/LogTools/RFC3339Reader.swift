/// RFC 3339 stamps as records write them (`2026-12-02T10:11:12.123456Z`, or with an offset), and
/// a bare date (`2026-12-02`, midnight UTC), to seconds since 1970.
enum RFC3339Reader {
    static func seconds(_ text: String) -> Double? {
        let c = Array(text.utf8)
        func digits(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= c.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard c[i] >= 48 && c[i] <= 57 else { return nil }
                v = v * 10 + Int(c[i] - 48)
            }
            return v
        }
        guard let year = digits(0, 4), c.count >= 10, c[4] == UInt8(ascii: "-"), let month = digits(5, 2),
              c[7] == UInt8(ascii: "-"), let day = digits(8, 2), (1...12).contains(month),
              (1...daysIn(month: month, year: year)).contains(day) else { return nil }
        var seconds = Double(daysSince1970(year: year, month: month, day: day)) * 86400
        if c.count == 10 { return seconds }
        guard c.count >= 20, c[10] == UInt8(ascii: "T") || c[10] == UInt8(ascii: "t") || c[10] == UInt8(ascii: " "),
              let hour = digits(11, 2), c[13] == UInt8(ascii: ":"), let minute = digits(14, 2), c[16] == UInt8(ascii: ":"),
              let second = digits(17, 2), hour < 24, minute < 60, second < 61 else { return nil }
        seconds += Double(hour * 3600 + minute * 60 + second)
        var i = 19
        if i < c.count, c[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            let start = i
            while i < c.count, c[i] >= 48 && c[i] <= 57 {
                seconds += Double(c[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        guard i < c.count else { return nil }
        if c[i] == UInt8(ascii: "Z") || c[i] == UInt8(ascii: "z") {
            return i + 1 == c.count ? seconds : nil
        }
        guard c[i] == UInt8(ascii: "+") || c[i] == UInt8(ascii: "-"), c.count == i + 6, let oh = digits(i + 1, 2),
              c[i + 3] == UInt8(ascii: ":"), let om = digits(i + 4, 2) else { return nil }
        let offset = Double(oh * 3600 + om * 60)
        return c[i] == UInt8(ascii: "+") ? seconds - offset : seconds + offset
    }

    /// The days of a month in the proleptic Gregorian calendar (February 29 in leap years only).
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }
}
