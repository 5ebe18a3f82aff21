import Foundation

/// Case-insensitive substring search.
///
/// An ASCII needle folds ASCII letters only and compares byte by byte without copying the text
/// (`strasse` does not find `Straße`). A needle with any non-ASCII character is compared with
/// Foundation's case-insensitive search, which applies Unicode case folding to both sides
/// (`GRÜSSE` finds `Grüße`, `ÉCOLE` finds `école`).
struct TextSearch: Sendable {
    let needle: [UInt8]
    let ascii: Bool
    let original: String

    init(_ text: String) {
        original = text
        ascii = text.utf8.allSatisfy { $0 < 0x80 }
        needle = Array(text.lowercased().utf8)
    }

    func found(in text: String) -> Bool {
        guard ascii else { return text.range(of: original, options: [.caseInsensitive]) != nil }
        guard !needle.isEmpty else { return true }
        var copy = text
        return copy.withUTF8 { hay in TextSearch.find(needle, in: hay) }
    }

    static func find(_ needle: [UInt8], in hay: UnsafeBufferPointer<UInt8>) -> Bool {
        guard hay.count >= needle.count else { return false }
        let first = needle[0]
        var i = 0
        let last = hay.count - needle.count
        while i <= last {
            if lower(hay[i]) == first {
                var j = 1
                while j < needle.count, lower(hay[i + j]) == needle[j] { j += 1 }
                if j == needle.count { return true }
            }
            i += 1
        }
        return false
    }

    @inline(__always) static func lower(_ b: UInt8) -> UInt8 { b >= 65 && b <= 90 ? b | 0x20 : b }
}
