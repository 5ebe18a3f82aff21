import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// Something to find in raw record bytes.
enum Needle {
    /// Bytes, ASCII letters compared without case when `caseInsensitive` (then the bytes are lower case).
    case literal([UInt8], caseInsensitive: Bool)
    /// A key (with its quotes) followed by `:` and a number for which the test holds; an
    /// occurrence followed by anything else does not count.
    case keyedNumber(key: [UInt8], (ExactNumber) -> Bool)

    /// A guess at how rarely the needle occurs: longer literals are rarer; a keyed number tests
    /// every record's key but few pass.
    var selectivity: Int {
        switch self {
        case .literal(let bytes, _): return bytes.count
        case .keyedNumber: return 6
        }
    }

    /// The offset of the first occurrence in base[from..<count], nil when none.
    func find(_ base: UnsafePointer<UInt8>, _ from: Int, _ count: Int) -> Int? {
        switch self {
        case .literal(let bytes, let caseInsensitive):
            return caseInsensitive ? Needle.findFolded(bytes, base, from, count) : Needle.findExact(bytes, base, from, count)
        case .keyedNumber(let key, let test):
            var at = from
            while let hit = Needle.findExact(key, base, at, count) {
                if Needle.numberAfterKey(base, hit + key.count, count).map(test) == true { return hit }
                at = hit + 1
            }
            return nil
        }
    }

    /// The number after `"key"` `:` (JSON whitespace allowed around the colon), when one follows.
    static func numberAfterKey(_ base: UnsafePointer<UInt8>, _ from: Int, _ count: Int) -> ExactNumber? {
        @inline(__always) func isSpace(_ b: UInt8) -> Bool { b == 32 || b == 9 || b == 13 || b == 10 }
        var i = from
        while i < count, isSpace(base[i]) { i += 1 }
        guard i < count, base[i] == UInt8(ascii: ":") else { return nil }
        i += 1
        while i < count, isSpace(base[i]) { i += 1 }
        let start = i
        while i < count, (base[i] >= 48 && base[i] <= 57) || base[i] == UInt8(ascii: "-") || base[i] == UInt8(ascii: ".")
                || base[i] == UInt8(ascii: "e") || base[i] == UInt8(ascii: "E") || base[i] == UInt8(ascii: "+") {
            i += 1
        }
        guard i > start else { return nil }
        return ExactNumber(UnsafeBufferPointer(start: base + start, count: i - start))
    }

    /// memchr for the needle's rarest byte, then memcmp around it (glibc's memmem is a GNU
    /// extension Swift's Glibc module does not show).
    static func findExact(_ needle: [UInt8], _ base: UnsafePointer<UInt8>, _ from: Int, _ count: Int) -> Int? {
        guard count - from >= needle.count, !needle.isEmpty else { return needle.isEmpty ? from : nil }
        let k = rarestIndex(needle)
        let rare = needle[k]
        var at = from + k
        let last = count - needle.count + k
        return needle.withUnsafeBufferPointer { n -> Int? in
            guard let nBase = n.baseAddress else { return nil }
            while at <= last {
                guard let hit = memchrOffset(base, rare, at, last + 1) else { return nil }
                let start = hit - k
                if memcmp(base + start, nBase, n.count) == 0 { return start }
                at = hit + 1
            }
            return nil
        }
    }

    /// Case-insensitive search for a lower-case ASCII needle: memchr for its rarest byte (both
    /// cases of a letter), then a check of the whole needle around it. The two cases are looked
    /// for window by window, so a case that never occurs costs one window per hit of the other,
    /// not a scan to the end of the text.
    static func findFolded(_ needle: [UInt8], _ base: UnsafePointer<UInt8>, _ from: Int, _ count: Int) -> Int? {
        guard count - from >= needle.count, !needle.isEmpty else { return needle.isEmpty ? from : nil }
        let k = rarestIndex(needle)
        let lowerByte = needle[k]
        let isLetter = lowerByte >= 97 && lowerByte <= 122
        let upperByte = lowerByte - 32
        let last = count - needle.count + k   // the last offset the rare byte can sit at
        var at = from + k
        while at <= last {
            let windowEnd = min(last + 1, at + 4096)
            let lower = memchrOffset(base, lowerByte, at, windowEnd)
            let upper = isLetter ? memchrOffset(base, upperByte, at, lower ?? windowEnd) : nil
            guard let hit = upper ?? lower else {
                at = windowEnd
                continue
            }
            let start = hit - k
            var j = 0
            while j < needle.count, TextSearch.lower(base[start + j]) == needle[j] { j += 1 }
            if j == needle.count { return start }
            at = hit + 1
        }
        return nil
    }

    @inline(__always)
    private static func memchrOffset(_ base: UnsafePointer<UInt8>, _ byte: UInt8, _ from: Int, _ end: Int) -> Int? {
        guard from < end, let hit = memchr(base + from, Int32(byte), end - from) else { return nil }
        return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
    }

    /// The index of the needle byte least likely in a record (rough English / JSON frequencies).
    static func rarestIndex(_ needle: [UInt8]) -> Int {
        var best = 0
        var bestScore = Int.max
        for (i, byte) in needle.enumerated() {
            let score = frequency(byte)
            if score < bestScore { best = i; bestScore = score }
        }
        return best
    }

    private static let letterFrequency: [UInt8: Int] = {
        let order = Array("zqjxkvbpygfwmucldrhsnioate".utf8)   // rarest first
        var table: [UInt8: Int] = [:]
        for (rank, byte) in order.enumerated() { table[byte] = 10 + rank * 10 }
        return table
    }()

    private static func frequency(_ byte: UInt8) -> Int {
        if let letter = letterFrequency[byte] { return letter }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: ","), UInt8(ascii: "{"), UInt8(ascii: "}"): return 400
        case 48...57: return 200
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "/"), UInt8(ascii: " "): return 150
        default: return 5
        }
    }
}
