import Foundation
import HTTP1
import XCTest
@testable import ResponseSerialization

final class CharsetTests: XCTestCase {
    func testNamesAndAliasesMapToEncodingsAndCanonicalNames() {
        let table: [(String, String.Encoding, String)] = [
            ("utf-8", .utf8, "utf-8"), ("UTF8", .utf8, "utf-8"),
            ("iso-8859-1", .isoLatin1, "iso-8859-1"), ("Latin1", .isoLatin1, "iso-8859-1"), ("l1", .isoLatin1, "iso-8859-1"),
            ("ISO_8859-1", .isoLatin1, "iso-8859-1"), ("cp819", .isoLatin1, "iso-8859-1"), ("ISO_8859-1:1987", .isoLatin1, "iso-8859-1"),
            ("us-ascii", .ascii, "us-ascii"), ("ASCII", .ascii, "us-ascii"),
            ("windows-1252", .windowsCP1252, "windows-1252"), ("cp1252", .windowsCP1252, "windows-1252"),
            ("utf-16", .utf16, "utf-16"), ("utf-16le", .utf16LittleEndian, "utf-16le"), ("UTF-16BE", .utf16BigEndian, "utf-16be"),
            ("utf-32", .utf32, "utf-32"), ("utf-32le", .utf32LittleEndian, "utf-32le"), ("utf-32be", .utf32BigEndian, "utf-32be"),
            ("iso-8859-2", .isoLatin2, "iso-8859-2"), ("latin2", .isoLatin2, "iso-8859-2"),
            ("windows-1250", .windowsCP1250, "windows-1250"), ("windows-1251", .windowsCP1251, "windows-1251"),
            ("cp1251", .windowsCP1251, "windows-1251"), ("windows-1253", .windowsCP1253, "windows-1253"),
            ("windows-1254", .windowsCP1254, "windows-1254"),
            ("Shift_JIS", .shiftJIS, "shift_jis"), ("sjis", .shiftJIS, "shift_jis"),
            ("EUC-JP", .japaneseEUC, "euc-jp"), ("iso-2022-jp", .iso2022JP, "iso-2022-jp"),
            ("macintosh", .macOSRoman, "macintosh"), (" utf-8 ", .utf8, "utf-8"),
        ]
        for (label, encoding, canonical) in table {
            let charset = Charset(ianaName: label)
            XCTAssertEqual(charset?.encoding, encoding, label)
            XCTAssertEqual(charset?.name, canonical, label)
        }
    }

    func testUnknownNamesAreNilAndFallBackToLatin1() {
        XCTAssertNil(Charset(ianaName: "x-unknown-charset"))
        XCTAssertNil(Charset(ianaName: ""))
        let response = httpResponse(200, contentType: "text/plain; charset=x-klingon")
        XCTAssertEqual(Charset.forResponse(explicit: nil, response: response), .isoLatin1)
        XCTAssertEqual(Charset.forResponse(explicit: nil, response: nil), .isoLatin1)
        XCTAssertEqual(Charset.forResponse(explicit: nil, response: httpResponse(200, contentType: "text/plain")), .isoLatin1)
    }

    func testExplicitBeatsContentTypeBeatsFallback() {
        let response = httpResponse(200, contentType: "text/html; Charset=\"Windows-1252\"; q=1")
        XCTAssertEqual(Charset.forResponse(explicit: nil, response: response), .windows1252)
        XCTAssertEqual(Charset.forResponse(explicit: .utf8, response: response), .utf8)
    }

    func testCharsetParameterParsing() {
        XCTAssertEqual(Charset.charsetParameter(ofContentType: "text/plain; format=flowed; charset=utf-8"), "utf-8")
        XCTAssertEqual(Charset.charsetParameter(ofContentType: "text/plain;charset=\"latin1\""), "latin1")
        XCTAssertNil(Charset.charsetParameter(ofContentType: "text/plain"))
        XCTAssertNil(Charset.charsetParameter(ofContentType: "text/plain; charset="))
    }

    func testLatin1DecodesEveryByteToTheSameCodePoint() {
        let all = Data((0...255).map { UInt8($0) })
        let text = Charset.isoLatin1.decode(all)
        XCTAssertEqual(text.map { $0.unicodeScalars.map(\.value) }, (0...255).map { UInt32($0) })
    }

    func testUTF16AndUTF32WithByteOrderMark() {
        let serializer = DataResponseSerializer<String>.string()
        let utf16LE = Data([0xFF, 0xFE, 0x68, 0x00, 0xE9, 0x00])          // BOM + "hé" little-endian
        let utf16BE = Data([0xFE, 0xFF, 0x00, 0x68, 0x00, 0xE9])          // BOM + "hé" big-endian
        let utf32LE = Data([0xFF, 0xFE, 0x00, 0x00, 0x68, 0, 0, 0, 0xE9, 0, 0, 0])
        let utf32BE = Data([0x00, 0x00, 0xFE, 0xFF, 0, 0, 0, 0x68, 0, 0, 0, 0xE9])
        for (data, charset) in [(utf16LE, "utf-16"), (utf16BE, "utf-16"), (utf32LE, "utf-32"), (utf32BE, "utf-32")] {
            let response = httpResponse(200, contentType: "text/plain; charset=\(charset)")
            XCTAssertEqual(try serializer.serializeResponse(getRequest(), response, data, nil).get(), "hé", "\(charset) \(Array(data))")
        }
    }

    func testExplicitEndianWithoutBOM() {
        XCTAssertEqual(Charset.utf16LE.decode(Data([0x68, 0x00, 0xE9, 0x00])), "hé")
        XCTAssertEqual(Charset.utf16BE.decode(Data([0x00, 0x68, 0x00, 0xE9])), "hé")
        XCTAssertEqual(Charset.utf32BE.decode(Data([0, 0, 0, 0x68])), "h")
        XCTAssertEqual(Charset.utf32LE.decode(Data([0x68, 0, 0, 0])), "h")
    }

    func testSingleByteCharsets() {
        XCTAssertEqual(Charset.windows1252.decode(Data([0x80])), "€")
        XCTAssertEqual(Charset.isoLatin2.decode(Data([0xB1])), "ą")
        XCTAssertEqual(Charset.windows1251.decode(Data([0xC0])), "А")
        XCTAssertEqual(Charset.windows1253.decode(Data([0xC1])), "Α")
        XCTAssertEqual(Charset.windows1254.decode(Data([0xD0])), "Ğ")
        XCTAssertEqual(Charset.shiftJIS.decode(Data([0x82, 0xA0])), "あ")
        XCTAssertNil(Charset.usASCII.decode(Data([0x80])))
    }

    func testInvalidUTF8IsRejected() {
        XCTAssertNil(Charset.utf8.decode(Data([0xE9])))
        XCTAssertNil(Charset.utf8.decode(Data([0xC0, 0x80])))            // overlong NUL
        XCTAssertNil(Charset.utf8.decode(Data([0xED, 0xA0, 0x80])))      // surrogate
        XCTAssertEqual(Charset.utf8.decode(Data("ok ✓".utf8)), "ok ✓")
    }
}
