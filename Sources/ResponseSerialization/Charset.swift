import Foundation
import HTTP1

/// A character set known by its IANA name, with the Foundation encoding that
/// decodes it. `name` is the canonical (preferred MIME) name in lower case, the
/// one recorded in logs and in `stringSerializationFailed(encoding:)`.
public struct Charset: Sendable, Hashable, CustomStringConvertible {
    /// The canonical IANA name, lower case (`utf-8`).
    public let name: String
    /// The Foundation encoding that decodes it.
    public let encoding: String.Encoding

    init(name: String, encoding: String.Encoding) { self.name = name; self.encoding = encoding }

    /// The canonical name.
    public var description: String { name }

    /// UTF-8.
    public static let utf8 = Charset(name: "utf-8", encoding: .utf8)
    /// ISO-8859-1 (Latin-1), HTTP's historical default: it decodes every byte.
    public static let isoLatin1 = Charset(name: "iso-8859-1", encoding: .isoLatin1)
    /// US-ASCII.
    public static let usASCII = Charset(name: "us-ascii", encoding: .ascii)
    /// Windows-1252 (Western European).
    public static let windows1252 = Charset(name: "windows-1252", encoding: .windowsCP1252)
    /// UTF-16, its byte order taken from a byte order mark.
    public static let utf16 = Charset(name: "utf-16", encoding: .utf16)
    /// UTF-16, little-endian.
    public static let utf16LE = Charset(name: "utf-16le", encoding: .utf16LittleEndian)
    /// UTF-16, big-endian.
    public static let utf16BE = Charset(name: "utf-16be", encoding: .utf16BigEndian)
    /// UTF-32, its byte order taken from a byte order mark.
    public static let utf32 = Charset(name: "utf-32", encoding: .utf32)
    /// UTF-32, little-endian.
    public static let utf32LE = Charset(name: "utf-32le", encoding: .utf32LittleEndian)
    /// UTF-32, big-endian.
    public static let utf32BE = Charset(name: "utf-32be", encoding: .utf32BigEndian)
    /// ISO-8859-2 (Central European).
    public static let isoLatin2 = Charset(name: "iso-8859-2", encoding: .isoLatin2)
    /// Windows-1250 (Central European).
    public static let windows1250 = Charset(name: "windows-1250", encoding: .windowsCP1250)
    /// Windows-1251 (Cyrillic).
    public static let windows1251 = Charset(name: "windows-1251", encoding: .windowsCP1251)
    /// Windows-1253 (Greek).
    public static let windows1253 = Charset(name: "windows-1253", encoding: .windowsCP1253)
    /// Windows-1254 (Turkish).
    public static let windows1254 = Charset(name: "windows-1254", encoding: .windowsCP1254)
    /// Shift_JIS.
    public static let shiftJIS = Charset(name: "shift_jis", encoding: .shiftJIS)
    /// EUC-JP.
    public static let eucJP = Charset(name: "euc-jp", encoding: .japaneseEUC)
    /// ISO-2022-JP.
    public static let iso2022JP = Charset(name: "iso-2022-jp", encoding: .iso2022JP)
    /// Mac OS Roman.
    public static let macintosh = Charset(name: "macintosh", encoding: .macOSRoman)

    /// Every label accepted, lower case: the IANA name, its registered aliases,
    /// and the spellings seen in the wild (`utf8`, `cp1252`, `sjis`).
    public static let labels: [String: Charset] = {
        let table: [(Charset, [String])] = [
            (.utf8, ["utf-8", "utf8", "csutf8", "unicode-1-1-utf-8"]),
            (.isoLatin1, ["iso-8859-1", "iso_8859-1:1987", "iso-ir-100", "iso_8859-1", "latin1", "l1",
                          "ibm819", "cp819", "csisolatin1", "iso8859-1", "iso88591", "latin-1"]),
            (.usASCII, ["us-ascii", "iso-ir-6", "ansi_x3.4-1968", "ansi_x3.4-1986", "iso_646.irv:1991",
                        "iso646-us", "us", "ibm367", "cp367", "csascii", "ascii"]),
            (.windows1252, ["windows-1252", "cp1252", "cswindows1252", "x-cp1252"]),
            (.utf16, ["utf-16", "utf16", "csutf16"]),
            (.utf16LE, ["utf-16le", "utf16le", "csutf16le"]),
            (.utf16BE, ["utf-16be", "utf16be", "csutf16be"]),
            (.utf32, ["utf-32", "utf32", "csutf32"]),
            (.utf32LE, ["utf-32le", "utf32le", "csutf32le"]),
            (.utf32BE, ["utf-32be", "utf32be", "csutf32be"]),
            (.isoLatin2, ["iso-8859-2", "iso_8859-2:1987", "iso-ir-101", "iso_8859-2", "latin2", "l2",
                          "csisolatin2", "iso8859-2", "iso88592"]),
            (.windows1250, ["windows-1250", "cp1250", "cswindows1250", "x-cp1250"]),
            (.windows1251, ["windows-1251", "cp1251", "cswindows1251", "x-cp1251"]),
            (.windows1253, ["windows-1253", "cp1253", "cswindows1253", "x-cp1253"]),
            (.windows1254, ["windows-1254", "cp1254", "cswindows1254", "x-cp1254"]),
            (.shiftJIS, ["shift_jis", "shift-jis", "ms_kanji", "csshiftjis", "sjis", "x-sjis"]),
            (.eucJP, ["euc-jp", "extended_unix_code_packed_format_for_japanese", "cseucpkdfmtjapanese",
                      "eucjp", "x-euc-jp"]),
            (.iso2022JP, ["iso-2022-jp", "csiso2022jp"]),
            (.macintosh, ["macintosh", "mac", "csmacintosh", "x-mac-roman", "macroman"]),
        ]
        var labels: [String: Charset] = [:]
        for (charset, names) in table { for name in names { labels[name] = charset } }
        return labels
    }()

    /// The charset for an IANA name or alias, ignoring case and surrounding white
    /// space; nil for a name not in the table.
    /// - Parameter ianaName: A name or alias such as `UTF-8`, `latin1` or `cp1252`.
    public init?(ianaName: String) {
        let key = ianaName.trimmingCharacters(in: .whitespaces).lowercased()
        guard let known = Charset.labels[key] else { return nil }
        self = known
    }

    /// The `charset` parameter of a Content-Type value (quotes removed), or nil.
    /// - Parameter contentType: A Content-Type field value such as `text/html; charset="utf-8"`.
    public static func charsetParameter(ofContentType contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            guard let eq = parameter.firstIndex(of: "=") else { continue }
            let key = parameter[..<eq].trimmingCharacters(in: .whitespaces)
            guard key.caseInsensitiveCompare("charset") == .orderedSame else { continue }
            var value = parameter[parameter.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                value = String(value.dropFirst().dropLast())
            }
            return value.isEmpty ? nil : value
        }
        return nil
    }

    /// The encoding a string serializer uses: the explicit one, else the
    /// response's Content-Type charset when known, else ISO-8859-1 (HTTP's
    /// historical default, which decodes every byte). Public so the log can
    /// record the encoding actually used.
    /// - Parameters:
    ///   - explicit: The charset a caller or rule names; nil to use the response's.
    ///   - response: The response whose Content-Type may name one.
    public static func forResponse(explicit: Charset?, response: HTTPResponseHead?) -> Charset {
        if let explicit { return explicit }
        if let contentType = response?.headers.first(name: "Content-Type"),
           let name = charsetParameter(ofContentType: contentType),
           let known = Charset(ianaName: name) {
            return known
        }
        return .isoLatin1
    }

    /// The text of `data`, or nil when the bytes are not valid in this charset.
    /// - Parameter data: The bytes to decode.
    public func decode(_ data: Data) -> String? {
        if encoding == .isoLatin1 { return Charset.decodeLatin1(data) }
        return String(data: data, encoding: encoding)
    }

    /// The text of a body cut at a byte limit: `decode`, else the same without the bytes
    /// the cut left of a character (an incomplete UTF-8 sequence, an odd byte or a lone
    /// leading surrogate in UTF-16, a partial UTF-32 unit, half a Shift_JIS or EUC-JP pair).
    /// Bytes invalid before those still fail; single-byte charsets have nothing to drop.
    /// - Parameter data: A body cut at a byte limit.
    public func decodePrefix(_ data: Data) -> String? {
        if let whole = decode(data) { return whole }
        for cut in partialCharacterLengths(data) where cut > 0 && cut <= data.count {
            if let prefix = decode(data.dropLast(cut)) { return prefix }
        }
        return nil
    }

    /// How many trailing bytes may be a character the cut split, the likelier first.
    private func partialCharacterLengths(_ data: Data) -> [Int] {
        switch encoding {
        case .utf8: [Charset.incompleteUTF8Tail(data)]
        case .utf16, .utf16LittleEndian, .utf16BigEndian: [data.count % 2, data.count % 2 + 2]
        case .utf32, .utf32LittleEndian, .utf32BigEndian: [data.count % 4]
        case .shiftJIS, .japaneseEUC, .iso2022JP: [1, 2]
        default: []
        }
    }

    /// The length of the UTF-8 sequence at the end of `data` when it lacks bytes, else 0.
    static func incompleteUTF8Tail(_ data: Data) -> Int {
        var have = 0
        for byte in data.reversed().prefix(3) {
            have += 1
            if byte & 0xC0 == 0x80 { continue }  // a continuation byte: the lead is further back
            let need = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
            return need > have ? have : 0
        }
        return 0
    }

    /// Every byte is the code point of the same value, so this never fails.
    /// Transcoded to UTF-8 bytes first: appending scalars one by one grows and
    /// re-validates the string per character, far slower than one decode of the bytes.
    static func decodeLatin1(_ data: Data) -> String {
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) -> String in
            if !input.contains(where: { $0 >= 0x80 }) { return String(decoding: input, as: UTF8.self) }
            var utf8: [UInt8] = []
            utf8.reserveCapacity(input.count + input.count / 2)
            for byte in input {
                if byte < 0x80 {
                    utf8.append(byte)
                } else {
                    utf8.append(0xC0 | (byte >> 6))
                    utf8.append(0x80 | (byte & 0x3F))
                }
            }
            return String(decoding: utf8, as: UTF8.self)
        }
    }
}
