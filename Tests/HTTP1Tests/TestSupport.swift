import XCTest
@testable import HTTP1

/// Byte-level entry points shared by the test files, so each assertion reads
/// as "these bytes give this head / this refusal".
enum Wire {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The one-shot parse of `bytes`; every call also feeds the same bytes to one
    /// resuming parser in reads of 1 and of 5 bytes and fails the test unless that
    /// gives the same outcome, so the whole suite (h11 differential and fuzz corpus
    /// included) checks that resuming changes no result.
    static func parseRequest(_ bytes: [UInt8], max: Int = 65536,
                             file: StaticString = #filePath, line: UInt = #line) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        try parseBothWays(bytes, file: file, line: line) { parser, buffer throws(HTTPParseError) in
            try parser.parseRequestHead(buffer, maxHeadBytes: max)
        }
    }

    static func parseResponse(_ bytes: [UInt8], max: Int = 65536,
                              file: StaticString = #filePath, line: UInt = #line) throws(HTTPParseError) -> HeadParseResult<HTTPResponseHead> {
        try parseBothWays(bytes, file: file, line: line) { parser, buffer throws(HTTPParseError) in
            try parser.parseResponseHead(buffer, maxHeadBytes: max)
        }
    }

    /// `parse` with a fresh parser on the whole input (the one-shot answer), then resumed in
    /// reads of 1 and of 5 bytes, which must give the same outcome.
    private static func parseBothWays<Head: Equatable & Sendable>(
        _ bytes: [UInt8], file: StaticString, line: UInt,
        _ parse: (inout HTTPHeadParser, UnsafeRawBufferPointer) throws(HTTPParseError) -> HeadParseResult<Head>
    ) throws(HTTPParseError) -> HeadParseResult<Head> {
        let oneShot: Outcome<Head> = outcome(bytes) { buffer throws(HTTPParseError) in
            var fresh = HTTPHeadParser()
            return try parse(&fresh, buffer)
        }
        for step in [1, 5] {
            let resumed: Outcome<Head> = fedInReads(bytes, step: step, parse)
            assertSameOutcome(oneShot, resumed, step: step, file: file, line: line)
        }
        return try oneShot.get()
    }

    typealias Outcome<Head: Sendable> = Result<HeadParseResult<Head>, HTTPParseError>

    static func outcome<Head>(_ bytes: [UInt8],
                              _ parse: (UnsafeRawBufferPointer) throws(HTTPParseError) -> HeadParseResult<Head>) -> Outcome<Head> {
        bytes.withUnsafeBytes { buffer in
            do throws(HTTPParseError) { return .success(try parse(buffer)) } catch { return .failure(error) }
        }
    }

    /// One parser given the input as it grows by `step` bytes a read, until it
    /// answers something other than `.incomplete` or the input is all there.
    static func fedInReads<Head>(_ bytes: [UInt8], step: Int,
                                 _ parse: (inout HTTPHeadParser, UnsafeRawBufferPointer) throws(HTTPParseError) -> HeadParseResult<Head>) -> Outcome<Head> {
        var parser = HTTPHeadParser()
        var end = 0
        while true {
            end = min(end + step, bytes.count)
            let result: Outcome<Head> = bytes.withUnsafeBytes { whole in
                let buffer = UnsafeRawBufferPointer(rebasing: whole[0..<end])
                do throws(HTTPParseError) { return .success(try parse(&parser, buffer)) } catch { return .failure(error) }
            }
            if case .success(.incomplete) = result, end < bytes.count { continue }
            return result
        }
    }

    static func assertSameOutcome<Head: Equatable>(_ oneShot: Outcome<Head>, _ resumed: Outcome<Head>, step: Int,
                                                   file: StaticString, line: UInt) {
        let same: Bool
        switch (oneShot, resumed) {
        case (.success(.incomplete), .success(.incomplete)): same = true
        case (.success(.complete(let a, let n)), .success(.complete(let b, let m))): same = a == b && n == m
        case (.failure(let a), .failure(let b)): same = a == b
        default: same = false
        }
        XCTAssertTrue(same, "read \(step) bytes at a time: \(resumed), one read: \(oneShot)", file: file, line: line)
    }
}

/// The complete request head in `text`, failing the test otherwise.
func request(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> (head: HTTPRequestHead, length: Int)? {
    request(Wire.bytes(text), file: file, line: line)
}

func request(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> (head: HTTPRequestHead, length: Int)? {
    do {
        switch try Wire.parseRequest(bytes) {
        case .complete(let head, let length): return (head, length)
        case .incomplete: XCTFail("incomplete", file: file, line: line); return nil
        }
    } catch {
        XCTFail("refused: \(error.reason)", file: file, line: line); return nil
    }
}

func response(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> (head: HTTPResponseHead, length: Int)? {
    do {
        switch try Wire.parseResponse(Wire.bytes(text)) {
        case .complete(let head, let length): return (head, length)
        case .incomplete: XCTFail("incomplete", file: file, line: line); return nil
        }
    } catch {
        XCTFail("refused: \(error.reason)", file: file, line: line); return nil
    }
}

func assertRequestRefused(_ bytes: [UInt8], _ kind: HTTPParseError.Kind, status: Int, max: Int = 65536,
                          file: StaticString = #filePath, line: UInt = #line) {
    do {
        let result = try Wire.parseRequest(bytes, max: max)
        XCTFail("accepted: \(result)", file: file, line: line)
    } catch {
        XCTAssertEqual(error.kind, kind, error.reason, file: file, line: line)
        XCTAssertEqual(error.status, status, file: file, line: line)
    }
}

func assertRequestRefused(_ text: String, _ kind: HTTPParseError.Kind = .malformed, status: Int = 400, max: Int = 65536,
                          file: StaticString = #filePath, line: UInt = #line) {
    assertRequestRefused(Wire.bytes(text), kind, status: status, max: max, file: file, line: line)
}

func assertResponseRefused(_ text: String, _ kind: HTTPParseError.Kind = .malformed, max: Int = 65536,
                           file: StaticString = #filePath, line: UInt = #line) {
    do {
        let result = try Wire.parseResponse(Wire.bytes(text), max: max)
        XCTFail("accepted: \(result)", file: file, line: line)
    } catch {
        XCTAssertEqual(error.kind, kind, error.reason, file: file, line: line)
    }
}

func assertIncomplete(_ text: String, max: Int = 65536, file: StaticString = #filePath, line: UInt = #line) {
    do {
        guard case .incomplete = try Wire.parseRequest(Wire.bytes(text), max: max) else {
            return XCTFail("expected incomplete", file: file, line: line)
        }
    } catch {
        XCTFail("refused: \(error.reason)", file: file, line: line)
    }
}

/// `Array.withUnsafeBytes` with the parser's typed error kept.
func withBytes<R>(_ bytes: [UInt8],
                  _ body: (UnsafeRawBufferPointer) throws(HTTPParseError) -> R) throws(HTTPParseError) -> R {
    let result: Result<R, HTTPParseError> = bytes.withUnsafeBytes { buffer in
        do throws(HTTPParseError) { return .success(try body(buffer)) } catch { return .failure(error) }
    }
    return try result.get()
}

/// What a framer did over a sequence of reads.
struct FramerRun {
    var consumed = 0
    var payload: [UInt8] = []
    var complete = false
    var error: HTTPParseError?
    var trailers: HTTPHeaders?
}

/// Runs a framer over `chunks` in order, stopping at the first refusal.
func runFramer(_ framing: BodyFraming, _ chunks: [[UInt8]],
               file: StaticString = #filePath, line: UInt = #line) -> FramerRun {
    var framer = BodyFramer(framing)
    var run = FramerRun()
    for chunk in chunks {
        do throws(HTTPParseError) {
            let n = try withBytes(chunk) { buffer throws(HTTPParseError) -> Int in
                try framer.consume(buffer) { run.payload.append(contentsOf: $0) }
            }
            XCTAssertLessThanOrEqual(n, chunk.count, file: file, line: line)
            if n < chunk.count { XCTAssertTrue(framer.isComplete, "stopped early without completing", file: file, line: line) }
            run.consumed += n
        } catch {
            run.error = error
            break
        }
    }
    run.complete = framer.isComplete
    run.trailers = framer.trailers
    XCTAssertEqual(framer.payloadBytes, UInt64(run.payload.count), file: file, line: line)
    return run
}

func runFramer(_ framing: BodyFraming, _ text: String, file: StaticString = #filePath, line: UInt = #line) -> FramerRun {
    runFramer(framing, [Wire.bytes(text)], file: file, line: line)
}

/// Deterministic generator (SplitMix64), so a failing random input can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
