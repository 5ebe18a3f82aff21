import CZstd
import Foundation
import XCTest
@testable import ResponseSerialization

final class ContentDecoderTests: XCTestCase {
    typealias Fixtures = ContentDecoderFixtures
    let text = ContentDecoderFixtures.sampleText
    let decoder = ContentDecoder(maxOutputBytes: 1 << 20)

    private func decodeError(_ input: [UInt8], _ coding: String?, inputTruncated: Bool = false,
                             file: StaticString = #filePath, line: UInt = #line) -> ContentDecodingError? {
        do {
            let result = try decoder.decode(input, contentEncoding: coding, inputTruncated: inputTruncated)
            XCTFail("decoded \(result.bytes.count) bytes, expected an error", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private func assertDecodes(_ input: [UInt8], _ coding: String?, to expected: [UInt8],
                               codings: [String], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(try decoder.decode(input, contentEncoding: coding),
                       DecodedContent(bytes: expected, truncated: false, codings: codings),
                       file: file, line: line)
    }

    // MARK: - Header parsing

    func testCodingsAreSplitTrimmedLowercasedAndEmptiesDropped() {
        XCTAssertEqual(ContentDecoder.codings(in: nil), [])
        XCTAssertEqual(ContentDecoder.codings(in: ""), [])
        XCTAssertEqual(ContentDecoder.codings(in: " GZip ,\tBR,, identity ,"), ["gzip", "br", "identity"])
    }

    // MARK: - Each coding

    func testNoCodingOrIdentityReturnsInputUnchanged() throws {
        for header in [nil, "", "identity", " Identity , ,identity"] {
            assertDecodes(text, header, to: text, codings: [])
        }
    }

    func testGzip() {
        assertDecodes(Fixtures.deflate(text, .gzip), "gzip", to: text, codings: ["gzip"])
    }

    func testXGzip() {
        assertDecodes(Fixtures.deflate(text, .gzip), "x-gzip", to: text, codings: ["x-gzip"])
    }

    func testDeflateZlibWrapped() {
        let encoded = Fixtures.deflate(text, .zlib)
        XCTAssertTrue(encoded.withUnsafeBufferPointer(ContentDecoder.startsWithZlibHeader))
        assertDecodes(encoded, "deflate", to: text, codings: ["deflate"])
    }

    func testDeflateRawFallback() {
        let encoded = Fixtures.deflate(text, .raw)
        XCTAssertFalse(encoded.withUnsafeBufferPointer(ContentDecoder.startsWithZlibHeader))
        assertDecodes(encoded, "deflate", to: text, codings: ["deflate"])
    }

    func testDeflateRawWhoseFirstBytesPassTheZlibHeaderCheck() {
        // Raw deflate made of stored blocks. The first block's header byte 0x78 and
        // its LEN low byte 0x01 read as the zlib header "78 01", so the zlib attempt
        // fails ("invalid stored block lengths") before any output and raw is retried.
        let first: [UInt8] = [0x78, 0x01, 0x00, 0xfe, 0xff, UInt8(ascii: "A")]
        let rest = Array("BCDEF".utf8)
        let final: [UInt8] = [0x01, UInt8(rest.count), 0x00, ~UInt8(rest.count), 0xff] + rest
        let encoded = first + final
        XCTAssertTrue(encoded.withUnsafeBufferPointer(ContentDecoder.startsWithZlibHeader))
        assertDecodes(encoded, "deflate", to: Array("ABCDEF".utf8), codings: ["deflate"])
    }

    func testBrotli() {
        assertDecodes(Fixtures.sampleTextBrotli, "br", to: text, codings: ["br"])
    }

    func testZstdWithContentSize() {
        let encoded = Fixtures.zstd(text)
        XCTAssertEqual(ZSTD_getFrameContentSize(encoded, encoded.count), UInt64(text.count))
        assertDecodes(encoded, "zstd", to: text, codings: ["zstd"])
    }

    func testZstdWithoutContentSize() {
        let encoded = Fixtures.zstd(text, contentSize: false)
        XCTAssertEqual(ZSTD_getFrameContentSize(encoded, encoded.count), UInt64.max, "CONTENTSIZE_UNKNOWN")
        assertDecodes(encoded, "zstd", to: text, codings: ["zstd"])
    }

    func testZstdMultipleFrames() {
        let first = Array(text[0..<1000]), second = Array(text[1000...])
        let encoded = Fixtures.zstd(first, contentSize: false) + Fixtures.zstd(second)
        assertDecodes(encoded, "zstd", to: text, codings: ["zstd"])
    }

    func testConcatenatedGzipMembers() {
        let encoded = Fixtures.deflate(Array(text[0..<10]), .gzip)
            + Fixtures.deflate([], .gzip)
            + Fixtures.deflate(Array(text[10...]), .gzip)
        assertDecodes(encoded, "gzip", to: text, codings: ["gzip"])
    }

    func testBytesAfterTheLastGzipMemberAreIgnored() {
        let encoded = Fixtures.deflate(text, .gzip) + [0, 0, 0, 0, 0x0a]
        assertDecodes(encoded, "gzip", to: text, codings: ["gzip"])
    }

    func testDataOverloadMatchesArray() throws {
        let encoded = Fixtures.deflate(text, .gzip)
        XCTAssertEqual(try decoder.decode(Data(encoded), contentEncoding: "gzip"),
                       try decoder.decode(encoded, contentEncoding: "gzip"))
        XCTAssertEqual(try decoder.decode(Data(encoded), contentEncoding: "gzip").bytes, text)
    }

    // MARK: - Stacking and spelling

    func testGzipThenBrotliIsUndoneBrotliFirst() {
        assertDecodes(Fixtures.sampleTextGzipThenBrotli, "gzip, br", to: text, codings: ["br", "gzip"])
    }

    func testDeflateThenGzipIsUndoneGzipFirst() {
        let encoded = Fixtures.deflate(Fixtures.deflate(text, .zlib), .gzip)
        assertDecodes(encoded, "deflate, gzip", to: text, codings: ["gzip", "deflate"])
    }

    func testThreeLayersWithIdentityBetween() {
        let encoded = Fixtures.zstd(Fixtures.deflate(Fixtures.deflate(text, .raw), .gzip))
        assertDecodes(encoded, "deflate, identity, gzip, zstd", to: text, codings: ["zstd", "gzip", "deflate"])
    }

    func testStackInTheWrongOrderIsCorrupt() {
        let encoded = Fixtures.deflate(Fixtures.deflate(text, .zlib), .gzip)
        // Undoing deflate first meets gzip's header, which raw deflate rejects.
        XCTAssertEqual(decodeError(encoded, "gzip, deflate")?.coding, "deflate")
    }

    func testCaseAndWhitespaceVariants() {
        let gzip = Fixtures.deflate(text, .gzip)
        for header in ["GZIP", " gzip ", "\tGzip\t", "X-GZip", "gzip,", ", gzip"] {
            XCTAssertEqual(try decoder.decode(gzip, contentEncoding: header).bytes, text, header)
        }
        assertDecodes(Fixtures.sampleTextGzipThenBrotli, "Gzip ,\tBR ", to: text, codings: ["br", "gzip"])
        assertDecodes(Fixtures.zstd(text), "ZStd", to: text, codings: ["zstd"])
    }

    // MARK: - Errors

    func testUnknownCodingIsUnsupported() {
        XCTAssertEqual(decodeError(text, "compress"), .unsupported("compress"))
        XCTAssertEqual(decodeError(text, "gzip, Snappy"), .unsupported("snappy"))
        let error = ContentDecodingError.unsupported("compress")
        XCTAssertEqual(error.coding, "compress")
        XCTAssertEqual(error.description, "unsupported content coding \"compress\"")
    }

    /// A HEAD or 304 answer labelled with a coding Tapwire lacks (`dcb`, `compress`) has
    /// no body to fail on.
    func testAnEmptyBodyDecodesUnderAnyCoding() throws {
        for header in ["compress", "dcb", "gzip, Snappy", "gzip"] {
            XCTAssertEqual(try decoder.decode([], contentEncoding: header).bytes, [], header)
            XCTAssertEqual(try decoder.decode(Data(), contentEncoding: header).bytes, [], header)
        }
    }

    /// Each coding is a full pass over up to the decode limit; a 60 KB header can list
    /// thousands. Five are undone, as curl does.
    func testMoreThanFiveStackedCodingsAreRefused() throws {
        var five = text
        for _ in 0..<5 { five = Fixtures.deflate(five, .gzip) }
        XCTAssertEqual(try decoder.decode(five, contentEncoding: "gzip, gzip, gzip, gzip, gzip").bytes, text)
        let six = Fixtures.deflate(five, .gzip)
        XCTAssertEqual(decodeError(six, Array(repeating: "gzip", count: 6).joined(separator: ",")),
                       .corrupt(coding: "gzip", message: "6 content codings stacked; at most 5 are undone"))
        XCTAssertEqual(decodeError(text, Array(repeating: "gzip", count: 12_000).joined(separator: ","))?.coding, "gzip")
    }

    func testCorruptGzip() {
        XCTAssertEqual(decodeError(Array("not gzip at all".utf8), "gzip"),
                       .corrupt(coding: "gzip", message: "incorrect header check"))
        var badChecksum = Fixtures.deflate(text, .gzip)
        badChecksum[badChecksum.count - 6] ^= 0xff  // inside the CRC-32 trailer
        XCTAssertEqual(decodeError(badChecksum, "x-gzip"),
                       .corrupt(coding: "x-gzip", message: "incorrect data check"))
    }

    func testCorruptDeflate() {
        var wrongAdler = Fixtures.deflate(text, .zlib)
        wrongAdler[wrongAdler.count - 1] ^= 0xff
        XCTAssertEqual(decodeError(wrongAdler, "deflate"),
                       .corrupt(coding: "deflate", message: "incorrect data check"))
        // 0xff: final block of reserved type 3.
        XCTAssertEqual(decodeError([0xff, 0x00, 0x00], "deflate"),
                       .corrupt(coding: "deflate", message: "invalid block type"))
    }

    func testCorruptBrotli() {
        guard case .corrupt(let coding, let message)? = decodeError(Fixtures.corruptBrotli, "br") else {
            return XCTFail("expected corrupt")
        }
        XCTAssertEqual(coding, "br")
        // BrotliDecoderErrorString's name for the failure, e.g. "DICTIONARY" on brotli 1.0.9.
        XCTAssertFalse(message.isEmpty)
        XCTAssertNotEqual(message, ContentDecodingError.unexpectedEndOfInput)
        XCTAssertNotNil(decodeError(Array("this is not brotli data at all".utf8), "br"))
    }

    func testCorruptZstd() {
        XCTAssertEqual(decodeError(Array("not zstd".utf8), "zstd"),
                       .corrupt(coding: "zstd", message: "Unknown frame descriptor"))
        var badChecksum = Fixtures.zstd(text)
        badChecksum[badChecksum.count - 1] ^= 0xff
        XCTAssertEqual(decodeError(badChecksum, "zstd"),
                       .corrupt(coding: "zstd", message: "Restored data doesn't match checksum"))
        XCTAssertEqual(decodeError(Fixtures.zstd(text) + [1, 2, 3, 4, 5], "zstd")?.coding, "zstd")
    }

    func testZstdWindowOverEightMebibytesIsRefused() throws {
        let zeros = [UInt8](repeating: 0, count: 16 << 20)
        let wide = Fixtures.zstd(zeros, contentSize: false, level: 1, windowLog: 24)
        XCTAssertEqual(decodeError(wide, "zstd"),
                       .corrupt(coding: "zstd", message: "Frame requires too much memory for decoding"))
        let allowed = Fixtures.zstd(zeros, contentSize: false, level: 1, windowLog: 23)
        let roomy = ContentDecoder(maxOutputBytes: 32 << 20)
        XCTAssertTrue(try roomy.decode(allowed, contentEncoding: "zstd").bytes == zeros)
    }

    func testCorruptDescription() {
        let error = ContentDecodingError.corrupt(coding: "gzip", message: "incorrect header check")
        XCTAssertEqual(error.coding, "gzip")
        XCTAssertEqual(error.message, "incorrect header check")
        XCTAssertEqual(error.description, "gzip content could not be decoded: incorrect header check")
    }

    // MARK: - Cut input

    private var encodedSamples: [(header: String, bytes: [UInt8])] {
        [("gzip", Fixtures.deflate(text, .gzip)),
         ("deflate", Fixtures.deflate(text, .zlib)),
         ("deflate", Fixtures.deflate(text, .raw)),
         ("br", Fixtures.sampleTextBrotli),
         ("zstd", Fixtures.zstd(text, contentSize: false)),
         ("gzip, br", Fixtures.sampleTextGzipThenBrotli)]
    }

    func testCutInputIsCorruptUnlessTheCallerSaysItWasCut() throws {
        for (header, encoded) in encodedSamples {
            let cut = Array(encoded[0..<(encoded.count * 2 / 3)])
            let error = decodeError(cut, header)
            XCTAssertEqual(error?.message, ContentDecodingError.unexpectedEndOfInput, header)
            XCTAssertEqual(error?.coding, ContentDecoder.codings(in: header).last, header)

            let prefix = try decoder.decode(cut, contentEncoding: header, inputTruncated: true)
            XCTAssertTrue(prefix.truncated, header)
            XCTAssertLessThan(prefix.bytes.count, text.count, header)
            XCTAssertEqual(prefix.bytes, Array(text[0..<prefix.bytes.count]), header)
        }
    }

    func testCutGzipKeepsTheDecodedPrefix() throws {
        let encoded = Fixtures.deflate(Fixtures.noise(200_000), .gzip)
        let result = try decoder.decode(Array(encoded[0..<100_000]), contentEncoding: "gzip", inputTruncated: true)
        XCTAssertTrue(result.truncated)
        XCTAssertGreaterThan(result.bytes.count, 90_000)
        XCTAssertEqual(result.bytes, Array(Fixtures.noise(200_000)[0..<result.bytes.count]))
    }

    func testCutInsideTheHeaderGivesAnEmptyPrefix() throws {
        let cut = Array(Fixtures.deflate(text, .gzip)[0..<5])
        XCTAssertEqual(try decoder.decode(cut, contentEncoding: "gzip", inputTruncated: true),
                       DecodedContent(bytes: [], truncated: true, codings: ["gzip"]))
        XCTAssertEqual(decodeError(cut, "gzip")?.message, ContentDecodingError.unexpectedEndOfInput)
    }

    func testCompleteStreamInCutInputIsStillMarkedTruncated() throws {
        let result = try decoder.decode(Fixtures.deflate(text, .gzip), contentEncoding: "gzip", inputTruncated: true)
        XCTAssertEqual(result.bytes, text)
        XCTAssertTrue(result.truncated)
        XCTAssertTrue(try decoder.decode(text, contentEncoding: nil, inputTruncated: true).truncated)
    }

    // MARK: - Empty bodies

    func testZeroLengthBodyWithACodingIsEmpty() throws {
        for header in ["gzip", "deflate", "br", "zstd", "gzip, br", "identity"] {
            let result = try decoder.decode([], contentEncoding: header)
            XCTAssertEqual(result.bytes, [], header)
            XCTAssertFalse(result.truncated, header)
        }
        XCTAssertEqual(try decoder.decode(Data(), contentEncoding: "br").codings, ["br"])
    }

    func testEncodedEmptyContentDecodesToEmpty() {
        assertDecodes(Fixtures.deflate([], .gzip), "gzip", to: [], codings: ["gzip"])
        assertDecodes(Fixtures.deflate([], .zlib), "deflate", to: [], codings: ["deflate"])
        assertDecodes(Fixtures.zstd([]), "zstd", to: [], codings: ["zstd"])
    }

    // MARK: - Output bound

    private func assertBounded(_ result: DecodedContent, limit: Int,
                               file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(result.truncated, file: file, line: line)
        XCTAssertEqual(result.bytes.count, limit, file: file, line: line)
        XCTAssertTrue(result.bytes.allSatisfy { $0 == 0 }, file: file, line: line)
        XCTAssertLessThanOrEqual(result.bytes.capacity, limit + ContentDecoder.outputChunkSize,
                                 "storage grew past the bound", file: file, line: line)
    }

    func testGibibyteGzipBombStopsAtTheLimit() throws {
        // 128 members of 8 MiB of zeros: 1 GiB decoded from about 1 MB.
        let member = Fixtures.zeros(8 << 20, .gzip)
        var bomb: [UInt8] = []
        bomb.reserveCapacity(member.count * 128)
        for _ in 0..<128 { bomb += member }
        XCTAssertLessThan(bomb.count, 2 << 20)
        let limit = 3 << 20 + 12_345
        assertBounded(try ContentDecoder(maxOutputBytes: limit).decode(bomb, contentEncoding: "gzip"), limit: limit)
    }

    func testSingleStreamBombsStopAtTheLimit() throws {
        let limit = 1 << 20
        let bounded = ContentDecoder(maxOutputBytes: limit)
        assertBounded(try bounded.decode(Fixtures.zeros(64 << 20, .gzip), contentEncoding: "gzip"), limit: limit)
        assertBounded(try bounded.decode(Fixtures.zeros(64 << 20, .raw), contentEncoding: "deflate"), limit: limit)
        assertBounded(try bounded.decode(Fixtures.zerosBrotli, contentEncoding: "br"), limit: limit)
        let zstdBomb = Fixtures.zstd([UInt8](repeating: 0, count: 64 << 20), contentSize: false)
        assertBounded(try bounded.decode(zstdBomb, contentEncoding: "zstd"), limit: limit)
    }

    func testBombInsideAStackIsBoundedAtEveryLayer() throws {
        // The inner gzip layer alone would inflate to 64 MiB.
        let stacked = Fixtures.zstd(Fixtures.zeros(64 << 20, .gzip))
        let limit = 100_000
        let result = try ContentDecoder(maxOutputBytes: limit).decode(stacked, contentEncoding: "gzip, zstd")
        assertBounded(result, limit: limit)
        XCTAssertEqual(result.codings, ["zstd", "gzip"])
    }

    func testOutputOfExactlyTheLimitIsNotTruncated() throws {
        let exact = ContentDecoder(maxOutputBytes: text.count)
        for (header, encoded) in encodedSamples {
            let result = try exact.decode(encoded, contentEncoding: header)
            XCTAssertEqual(result, DecodedContent(bytes: text, truncated: false,
                                                  codings: ContentDecoder.codings(in: header).reversed()), header)
        }
        XCTAssertFalse(try exact.decode(text, contentEncoding: nil).truncated)

        let oneShort = ContentDecoder(maxOutputBytes: text.count - 1)
        for (header, encoded) in encodedSamples {
            let result = try oneShort.decode(encoded, contentEncoding: header)
            XCTAssertTrue(result.truncated, header)
            XCTAssertEqual(result.bytes, Array(text.dropLast()), header)
        }
        XCTAssertEqual(try oneShort.decode(text, contentEncoding: "identity").bytes, Array(text.dropLast()))
    }

    func testZeroLimitKeepsNothing() throws {
        let none = ContentDecoder(maxOutputBytes: 0)
        XCTAssertEqual(try none.decode(Fixtures.deflate(text, .gzip), contentEncoding: "gzip"),
                       DecodedContent(bytes: [], truncated: true, codings: ["gzip"]))
        XCTAssertEqual(try none.decode(Fixtures.deflate([], .gzip), contentEncoding: "gzip").truncated, false)
        XCTAssertEqual(ContentDecoder(maxOutputBytes: -5).maxOutputBytes, 0)
    }

    // MARK: - Large input

    func testEightMebibyteBodies() throws {
        let large = Fixtures.noise(8 << 20)
        let roomy = ContentDecoder(maxOutputBytes: 16 << 20)
        for (header, encoded) in [("gzip", Fixtures.deflate(large, .gzip, level: 1)),
                                  ("deflate", Fixtures.deflate(large, .raw, level: 1)),
                                  ("zstd", Fixtures.zstd(large, contentSize: false, level: 1)),
                                  ("identity", large)] {
            XCTAssertGreaterThan(encoded.count, 8 << 20 - 1024, header)
            let result = try roomy.decode(encoded, contentEncoding: header)
            XCTAssertFalse(result.truncated, header)
            XCTAssertTrue(result.bytes == large, header)
        }
    }
}
