import XCTest
@testable import HTTP1

/// A head that arrives in many small reads must cost about what it costs in one read:
/// the parser resumes its scan instead of starting again at byte 0, so a client
/// trickling a large head cannot make the event loop's work quadratic.
final class ResumingHeadParserTests: XCTestCase {
    static let limit = 65536

    /// A head of exactly `size` bytes: a start-line, many short fields (many line
    /// ends, the search's slow case) and one field padded to the size.
    static func head(startLine: String, size: Int) -> [UInt8] {
        var text = startLine + "\r\nHost: example.com\r\n"
        var i = 0
        while text.utf8.count < size - 64 {
            text += "X-F\(i): v\(i)\r\n"
            i += 1
        }
        let padding = size - text.utf8.count - "X-Pad: \r\n\r\n".utf8.count
        text += "X-Pad: " + String(repeating: "p", count: padding) + "\r\n\r\n"
        precondition(text.utf8.count == size)
        return Array(text.utf8)
    }

    /// Feeds `bytes` as reads of `step` bytes to one parser; returns the parser and
    /// the head length it reported (nil if it never completed or refused).
    static func feed(_ bytes: [UInt8], step: Int, rescanEachRead: Bool = false,
                     _ parse: (inout HTTPHeadParser, UnsafeRawBufferPointer) throws(HTTPParseError) -> Int?) -> (HTTPHeadParser, Int?) {
        var parser = HTTPHeadParser()
        var end = 0
        while end < bytes.count {
            end = min(end + step, bytes.count)
            if rescanEachRead { parser.reset() }
            let length: Int? = bytes.withUnsafeBytes { whole in
                do throws(HTTPParseError) {
                    return try parse(&parser, UnsafeRawBufferPointer(rebasing: whole[0..<end]))
                } catch {
                    XCTFail("refused at \(end): \(error.reason)")
                    return nil
                }
            }
            if let length { return (parser, length) }
        }
        return (parser, nil)
    }

    static func request(_ parser: inout HTTPHeadParser, _ buffer: UnsafeRawBufferPointer) throws(HTTPParseError) -> Int? {
        guard case .complete(_, let length) = try parser.parseRequestHead(buffer, maxHeadBytes: limit) else { return nil }
        return length
    }

    static func response(_ parser: inout HTTPHeadParser, _ buffer: UnsafeRawBufferPointer) throws(HTTPParseError) -> Int? {
        guard case .complete(_, let length) = try parser.parseResponseHead(buffer, maxHeadBytes: limit) else { return nil }
        return length
    }

    func testRequestHeadInOneByteReadsExaminesAtMostTwiceWhatOneReadDoes() {
        assertOneByteReadsExamineAtMostTwice(startLine: "GET http://example.com/ HTTP/1.1", Self.request)
    }

    func testResponseHeadInOneByteReadsExaminesAtMostTwiceWhatOneReadDoes() {
        assertOneByteReadsExamineAtMostTwice(startLine: "HTTP/1.1 200 OK", Self.response)
    }

    private func assertOneByteReadsExamineAtMostTwice(
        startLine: String, _ parse: (inout HTTPHeadParser, UnsafeRawBufferPointer) throws(HTTPParseError) -> Int?,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let bytes = Self.head(startLine: startLine, size: Self.limit)
        let (whole, wholeLength) = Self.feed(bytes, step: bytes.count, parse)
        let (trickled, trickledLength) = Self.feed(bytes, step: 1, parse)
        XCTAssertEqual(wholeLength, bytes.count, file: file, line: line)
        XCTAssertEqual(trickledLength, bytes.count, file: file, line: line)
        // Each byte is looked at by the line search and again by the parse of the complete head.
        XCTAssertGreaterThanOrEqual(whole.bytesExamined, bytes.count, file: file, line: line)
        XCTAssertLessThanOrEqual(Double(trickled.bytesExamined) / Double(whole.bytesExamined), 2,
                                 "one-byte reads: \(trickled.bytesExamined) bytes examined, one read: \(whole.bytesExamined)",
                                 file: file, line: line)
    }

    /// The counter can fail the tests above: scanning from byte 0 at every read (what
    /// a parser without resumption does) counts hundreds of times more, even in
    /// 64-byte reads.
    func testRescanningFromTheStartEachReadIsCounted() {
        let bytes = Self.head(startLine: "GET http://example.com/ HTTP/1.1", size: Self.limit)
        let (whole, _) = Self.feed(bytes, step: bytes.count, Self.request)
        let (rescanning, length) = Self.feed(bytes, step: 64, rescanEachRead: true, Self.request)
        XCTAssertEqual(length, bytes.count)
        XCTAssertGreaterThan(Double(rescanning.bytesExamined) / Double(whole.bytesExamined), 100)
    }

    /// After a complete head the parser starts afresh, so the caller drops the head
    /// and goes on with the next one (pipelining, interim responses).
    func testParserGoesOnWithTheNextHeadAfterTheLengthIsDropped() throws {
        var input = Wire.bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        var parser = HTTPHeadParser()
        var statuses: [Int] = []
        var buffered: [UInt8] = []
        while !input.isEmpty || !buffered.isEmpty {
            if !input.isEmpty { buffered.append(input.removeFirst()) }
            let result = try withBytes(buffered) { buffer throws(HTTPParseError) in
                try parser.parseResponseHead(buffer, maxHeadBytes: 1024)
            }
            if case .complete(let head, let length) = result {
                statuses.append(head.status)
                buffered.removeFirst(length)
            } else if input.isEmpty {
                break
            }
        }
        XCTAssertEqual(statuses, [100, 200])
        XCTAssertTrue(buffered.isEmpty)
    }

    /// An error also leaves the parser fresh, and `reset()` forgets a partial scan.
    func testRefusalAndResetStartAfresh() throws {
        var parser = HTTPHeadParser()
        let bad = Wire.bytes("GET / HTTP/1.1\nHost: h\r\n\r\n")
        XCTAssertThrowsError(try withBytes(bad) { buffer throws(HTTPParseError) in
            try parser.parseRequestHead(buffer, maxHeadBytes: 1024)
        })
        let partial = Wire.bytes("GET /a HTTP/1.1\r\nHo")
        guard case .incomplete = try withBytes(partial, { buffer throws(HTTPParseError) in
            try parser.parseRequestHead(buffer, maxHeadBytes: 1024)
        }) else { return XCTFail("expected incomplete") }
        parser.reset()
        let other = Wire.bytes("GET /b HTTP/1.1\r\nHost: h\r\n\r\n")
        guard case .complete(let head, let length) = try withBytes(other, { buffer throws(HTTPParseError) in
            try parser.parseRequestHead(buffer, maxHeadBytes: 1024)
        }) else { return XCTFail("expected complete") }
        XCTAssertEqual(head.target, "/b")
        XCTAssertEqual(length, other.count)
    }
}
