import XCTest
@testable import HTTP1

/// Byte-level entry points shared by the test files, so each assertion reads
/// as "these bytes give this head / this refusal".
enum Wire {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static func parseRequest(_ bytes: [UInt8], max: Int = 65536) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        var result: Result<HeadParseResult<HTTPRequestHead>, HTTPParseError> = .success(.incomplete)
        bytes.withUnsafeBytes { buffer in
            do throws(HTTPParseError) { result = .success(try HTTPHeadParser.parseRequestHead(buffer, maxHeadBytes: max)) }
            catch { result = .failure(error) }
        }
        return try result.get()
    }

    static func parseResponse(_ bytes: [UInt8], max: Int = 65536) throws(HTTPParseError) -> HeadParseResult<HTTPResponseHead> {
        var result: Result<HeadParseResult<HTTPResponseHead>, HTTPParseError> = .success(.incomplete)
        bytes.withUnsafeBytes { buffer in
            do throws(HTTPParseError) { result = .success(try HTTPHeadParser.parseResponseHead(buffer, maxHeadBytes: max)) }
            catch { result = .failure(error) }
        }
        return try result.get()
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
