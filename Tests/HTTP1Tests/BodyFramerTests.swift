import XCTest
@testable import HTTP1

/// The incremental body framer, fed whole, split at every byte, and one byte at a time.
final class BodyFramerTests: XCTestCase {
    private let chunkedBody = "4;name=value;flag\r\nWiki\r\n5 ; q=\"a b\"\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nExpires: never\r\nX-Sum:  abc \r\n\r\n"
    private let chunkedPayload = "Wikipedia in\r\n\r\nchunks."

    // MARK: - Chunked

    func testChunkedWithExtensionsAndTrailers() {
        let run = runFramer(.chunked, chunkedBody)
        XCTAssertNil(run.error)
        XCTAssertTrue(run.complete)
        XCTAssertEqual(run.consumed, chunkedBody.utf8.count)
        XCTAssertEqual(String(decoding: run.payload, as: UTF8.self), chunkedPayload)
    }

    /// The trailer section is kept, fields in order, values trimmed, however it is split.
    func testTrailersAreKeptWholeAndSplit() {
        let expected = [HTTPHeaders.Field(name: "Expires", value: "never"), HTTPHeaders.Field(name: "X-Sum", value: "abc")]
        XCTAssertEqual(runFramer(.chunked, chunkedBody).trailers?.fields, expected)
        let bytes = Wire.bytes(chunkedBody)
        XCTAssertEqual(runFramer(.chunked, bytes.map { [$0] }).trailers?.fields, expected, "one byte at a time")
        XCTAssertNil(runFramer(.chunked, "3\r\nabc\r\n0\r\n\r\n").trailers, "no section, no trailers")
        XCTAssertNil(runFramer(.chunked, "3\r\nabc\r\n0\r\nX: 1\r\n").trailers, "not before the body is complete")
        XCTAssertEqual(runFramer(.chunked, "0\r\nEmpty:\r\n\r\n").trailers?.fields, [HTTPHeaders.Field(name: "Empty", value: "")])
    }

    func testChunkedStopsAtEndAndLeavesNextMessage() {
        let next = "GET /next HTTP/1.1\r\nHost: h\r\n\r\n"
        let run = runFramer(.chunked, chunkedBody + next)
        XCTAssertTrue(run.complete)
        XCTAssertEqual(run.consumed, chunkedBody.utf8.count)
    }

    func testChunkedSplitAtEveryPosition() {
        let bytes = Wire.bytes(chunkedBody)
        for split in 0...bytes.count {
            let run = runFramer(.chunked, [Array(bytes[..<split]), Array(bytes[split...])])
            XCTAssertNil(run.error, "split \(split)")
            XCTAssertTrue(run.complete, "split \(split)")
            XCTAssertEqual(run.consumed, bytes.count, "split \(split)")
            XCTAssertEqual(String(decoding: run.payload, as: UTF8.self), chunkedPayload, "split \(split)")
        }
    }

    func testChunkedSplitAtEveryPairOfPositions() {
        let bytes = Wire.bytes("3;a=b\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n")
        let expected = "abc0123456789abcdef"
        for i in 0...bytes.count {
            for j in i...bytes.count {
                let run = runFramer(.chunked, [Array(bytes[..<i]), Array(bytes[i..<j]), Array(bytes[j...])])
                XCTAssertTrue(run.complete, "splits \(i) \(j)")
                XCTAssertEqual(String(decoding: run.payload, as: UTF8.self), expected, "splits \(i) \(j)")
            }
        }
    }

    func testChunkedOneByteAtATime() {
        let bytes = Wire.bytes(chunkedBody)
        var framer = BodyFramer(.chunked)
        var payload: [UInt8] = []
        for (i, byte) in bytes.enumerated() {
            XCTAssertFalse(framer.isComplete, "complete early at \(i)")
            let n = try? [byte].withUnsafeBytes { buffer throws(HTTPParseError) -> Int in
                try framer.consume(buffer) { payload.append(contentsOf: $0) }
            }
            XCTAssertEqual(n, 1, "byte \(i)")
        }
        XCTAssertTrue(framer.isComplete)
        XCTAssertEqual(String(decoding: payload, as: UTF8.self), chunkedPayload)
        XCTAssertEqual(framer.payloadBytes, UInt64(chunkedPayload.utf8.count))
    }

    func testChunkedPayloadCallbackSeesOnlyData() {
        var framer = BodyFramer(.chunked)
        var runs: [String] = []
        let bytes = Wire.bytes("2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n")
        _ = try? bytes.withUnsafeBytes { buffer throws(HTTPParseError) in
            try framer.consume(buffer) { runs.append(String(decoding: $0, as: UTF8.self)) }
        }
        XCTAssertEqual(runs, ["ab", "cde"])
    }

    func testLastChunkOnly() {
        let run = runFramer(.chunked, "0\r\n\r\n")
        XCTAssertTrue(run.complete)
        XCTAssertEqual(run.consumed, 5)
        XCTAssertTrue(run.payload.isEmpty)
    }

    func testHexSizesCaseInsensitiveAndLeadingZeros() {
        let run = runFramer(.chunked, "0000a\r\n0123456789\r\nA\r\n0123456789\r\n000\r\n\r\n")
        XCTAssertNil(run.error)
        XCTAssertTrue(run.complete)
        XCTAssertEqual(run.payload.count, 20)
    }

    func testIncompleteChunkedBodyIsTruncatedAtEOF() {
        var framer = BodyFramer(.chunked)
        let bytes = Wire.bytes("5\r\nab")
        _ = try? bytes.withUnsafeBytes { buffer throws(HTTPParseError) in try framer.consume(buffer) { _ in } }
        XCTAssertFalse(framer.isComplete)
        XCTAssertFalse(framer.finishAtEOF())
    }

    func testMissingFinalCRLFIsNotComplete() {
        let run = runFramer(.chunked, "0\r\n")
        XCTAssertNil(run.error)
        XCTAssertFalse(run.complete)
    }

    // MARK: - Chunked refusals

    private func assertChunkedRefused(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let run = runFramer(.chunked, text, file: file, line: line)
        XCTAssertEqual(run.error?.kind, .malformed, "accepted", file: file, line: line)
        XCTAssertEqual(run.error?.status, 400, file: file, line: line)
    }

    func testEmptyChunkSizeRefused() {
        assertChunkedRefused("\r\nabc\r\n0\r\n\r\n")
        assertChunkedRefused(";ext\r\n")
    }

    func testNonHexChunkSizeRefused() {
        assertChunkedRefused("g\r\n")
        assertChunkedRefused("5x\r\nabcde\r\n")
        assertChunkedRefused("-5\r\n")
        assertChunkedRefused("0x5\r\n")
        assertChunkedRefused("+5\r\n")
    }

    func testTooManyHexDigitsRefused() {
        assertChunkedRefused(String(repeating: "0", count: 17) + "1\r\n")
        assertChunkedRefused("10000000000000000\r\n")   // 2^64: overflows UInt64
    }

    func testSixteenHexDigitsAccepted() {
        let run = runFramer(.chunked, "FFFFFFFFFFFFFFFF\r\nabc")
        XCTAssertNil(run.error)
        XCTAssertEqual(run.payload.count, 3)
        XCTAssertFalse(run.complete)
    }

    func testChunkSizeLineNeedsCRLF() {
        assertChunkedRefused("5\nabcde\r\n0\r\n\r\n")
        assertChunkedRefused("5\rabcde\r\n0\r\n\r\n")
        assertChunkedRefused("5;a=b\nabcde\r\n")
    }

    func testWhitespaceWithoutExtensionRefused() {
        assertChunkedRefused("5 \r\nabcde\r\n0\r\n\r\n")
        assertChunkedRefused(" 5\r\nabcde\r\n0\r\n\r\n")
    }

    func testMissingCRLFAfterDataRefused() {
        assertChunkedRefused("3\r\nabcd\r\n0\r\n\r\n")
        assertChunkedRefused("3\r\nabc\n0\r\n\r\n")
        assertChunkedRefused("3\r\nabc\r0\r\n\r\n")
        assertChunkedRefused("3\r\nabc0\r\n\r\n")
    }

    func testControlCharacterInExtensionRefused() {
        assertChunkedRefused("5;a=\u{0}\r\nabcde\r\n")
        assertChunkedRefused("5;a=\u{1}\r\nabcde\r\n")
    }

    func testOversizedChunkLineRefused() {
        assertChunkedRefused("5;" + String(repeating: "a", count: BodyFramer.maxChunkLineBytes) + "\r\nabcde\r\n0\r\n\r\n")
    }

    func testLongExtensionWithinLimitAccepted() {
        let run = runFramer(.chunked, "5;" + String(repeating: "a", count: BodyFramer.maxChunkLineBytes - 2) + "\r\nabcde\r\n0\r\n\r\n")
        XCTAssertNil(run.error)
        XCTAssertTrue(run.complete)
    }

    func testOversizedTrailersRefused() {
        let field = "X: " + String(repeating: "a", count: 1000) + "\r\n"
        assertChunkedRefused("0\r\n" + String(repeating: field, count: 70) + "\r\n")
    }

    func testBadTrailersRefused() {
        assertChunkedRefused("0\r\nX : v\r\n\r\n")
        assertChunkedRefused("0\r\n: v\r\n\r\n")
        assertChunkedRefused("0\r\nNoColon\r\n\r\n")
        assertChunkedRefused("0\r\nX: v\r\n folded\r\n\r\n")
        assertChunkedRefused("0\r\nX: v\n\r\n")
        assertChunkedRefused("0\r\nX: a\u{0}b\r\n\r\n")
        assertChunkedRefused("0\r\n\n")
        assertChunkedRefused("0\r\n\rX")
    }

    // MARK: - Content-Length, close-delimited, none

    func testContentLengthExact() {
        let run = runFramer(.contentLength(5), "helloGET /")
        XCTAssertTrue(run.complete)
        XCTAssertEqual(run.consumed, 5)
        XCTAssertEqual(String(decoding: run.payload, as: UTF8.self), "hello")
    }

    func testContentLengthAcrossReads() {
        let bytes = Wire.bytes("0123456789")
        for split in 0...bytes.count {
            let run = runFramer(.contentLength(10), [Array(bytes[..<split]), Array(bytes[split...]), Wire.bytes("extra")])
            XCTAssertTrue(run.complete)
            XCTAssertEqual(run.consumed, 10)
            XCTAssertEqual(run.payload, bytes)
        }
    }

    func testContentLengthTruncatedAtEOF() {
        var framer = BodyFramer(.contentLength(10))
        _ = try? Wire.bytes("abc").withUnsafeBytes { buffer throws(HTTPParseError) in try framer.consume(buffer) { _ in } }
        XCTAssertFalse(framer.isComplete)
        XCTAssertFalse(framer.finishAtEOF())
        XCTAssertEqual(framer.payloadBytes, 3)
    }

    func testContentLengthZeroIsCompleteImmediately() {
        var framer = BodyFramer(.contentLength(0))
        XCTAssertTrue(framer.isComplete)
        XCTAssertTrue(framer.finishAtEOF())
        let run = runFramer(.contentLength(0), "next")
        XCTAssertEqual(run.consumed, 0)
    }

    func testCloseDelimitedTakesEverythingUntilEOF() {
        var framer = BodyFramer(.closeDelimited)
        var payload: [UInt8] = []
        for part in ["HTTP/1.1 200 OK\r\n", "0\r\n\r\n", "more"] {
            let n = try? Wire.bytes(part).withUnsafeBytes { buffer throws(HTTPParseError) -> Int in
                try framer.consume(buffer) { payload.append(contentsOf: $0) }
            }
            XCTAssertEqual(n, part.utf8.count)
            XCTAssertFalse(framer.isComplete)
        }
        XCTAssertTrue(framer.finishAtEOF())
        XCTAssertTrue(framer.isComplete)
        XCTAssertEqual(String(decoding: payload, as: UTF8.self), "HTTP/1.1 200 OK\r\n0\r\n\r\nmore")
        XCTAssertEqual(framer.payloadBytes, 26)
    }

    func testNoneCompletesImmediatelyAndConsumesNothing() {
        var framer = BodyFramer(.none)
        XCTAssertTrue(framer.isComplete)
        let run = runFramer(.none, "GET / HTTP/1.1\r\n")
        XCTAssertEqual(run.consumed, 0)
        XCTAssertTrue(run.payload.isEmpty)
        XCTAssertTrue(framer.finishAtEOF())
    }

    func testCompleteFramerConsumesNothingMore() {
        var framer = BodyFramer(.chunked)
        _ = try? Wire.bytes("0\r\n\r\n").withUnsafeBytes { buffer throws(HTTPParseError) in try framer.consume(buffer) { _ in } }
        XCTAssertTrue(framer.isComplete)
        let n = try? Wire.bytes("1\r\na\r\n").withUnsafeBytes { buffer throws(HTTPParseError) -> Int in
            try framer.consume(buffer) { _ in XCTFail("payload after completion") }
        }
        XCTAssertEqual(n, 0)
    }
}
