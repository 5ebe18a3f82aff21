import Foundation
import XCTest
@testable import ResponseSerialization

final class MsgPackDecoderTests: XCTestCase {
    private static let casesScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/msgpack_cases.py")

    /// The cases the Python `msgpack` package packs, with the value each must decode to.
    private func referenceCases() throws -> [(name: String, bytes: [UInt8], expected: String)] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.casesScript.path]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // No skip: without the module (`make test-deps` installs it) this check must fail.
        XCTAssertEqual(process.terminationStatus, 0, "msgpack_cases.py failed: \(message)")
        var cases: [(String, [UInt8], String)] = []
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let object = try JSONParser.parse(Data(line))
            guard case .string(let name)? = object.value(at: try JSONPointer("/name")),
                  case .string(let hex)? = object.value(at: try JSONPointer("/hex")),
                  case .string(let json)? = object.value(at: try JSONPointer("/json")) else {
                XCTFail("bad case line"); continue
            }
            var bytes: [UInt8] = []
            var digits = hex.utf8.makeIterator()
            while let high = digits.next(), let low = digits.next() {
                bytes.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) ?? 0)
            }
            cases.append((name, bytes, json))
        }
        return cases
    }

    /// Equal values: the same structure, the same strings and keys, the same integer text;
    /// float text may differ in notation only (`1e+16`, `1e16`): the same double and the
    /// same number of significant digits, so both are the shortest form.
    private func assertSame(_ actual: JSON, _ expected: JSON, _ path: String, _ name: String,
                            file: StaticString = #filePath, line: UInt = #line) {
        switch (actual, expected) {
        case (.number(let a), .number(let e)):
            let isFloat = { (t: String) in t.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) }
            if isFloat(a) || isFloat(e) {
                let same = isFloat(a) && isFloat(e) && Double(a)?.bitPattern == Double(e)?.bitPattern
                    && significantDigits(a) == significantDigits(e)
                XCTAssert(same, "\(name) \(path): \(a) is not \(e)", file: file, line: line)
            } else {
                XCTAssertEqual(a, e, "\(name) \(path)", file: file, line: line)
            }
        case (.array(let a), .array(let e)):
            XCTAssertEqual(a.count, e.count, "\(name) \(path): count", file: file, line: line)
            for (i, (x, y)) in zip(a, e).enumerated() { assertSame(x, y, "\(path)/\(i)", name, file: file, line: line) }
        case (.object(let a), .object(let e)):
            XCTAssertEqual(a.map(\.key), e.map(\.key), "\(name) \(path): keys", file: file, line: line)
            for (x, y) in zip(a, e) { assertSame(x.value, y.value, "\(path)/\(x.key)", name, file: file, line: line) }
        default:
            XCTAssertEqual(actual, expected, "\(name) \(path)", file: file, line: line)
        }
    }

    private func significantDigits(_ text: String) -> String {
        let mantissa = text.split(whereSeparator: { $0 == "e" || $0 == "E" }).first ?? ""
        var digits = mantissa.filter(\.isNumber)
        while digits.first == "0" { digits.removeFirst() }
        while digits.last == "0" { digits.removeLast() }
        return String(digits)
    }

    func testEveryTypeMatchesTheReferencePacker() throws {
        let cases = try referenceCases()
        XCTAssertGreaterThan(cases.count, 100)
        for (name, bytes, expectedText) in cases {
            let expected = try JSONParser.parse(expectedText)
            do {
                let value = try MsgPackDecoder.decode(bytes)
                assertSame(value, expected, "", name)
                // The record's text is valid JSON that reads back as the same value.
                var written: [UInt8] = []
                JSONWriter.write(value, into: &written)
                XCTAssertEqual(try JSONParser.parse(written), value, name)
            } catch {
                XCTFail("\(name): \(error)")
            }
        }
    }

    func testExactTextOfIntegersAndFloats() throws {
        XCTAssertEqual(try MsgPackDecoder.decode([0xCF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]), .number("18446744073709551615"))
        XCTAssertEqual(try MsgPackDecoder.decode([0xD3, 0x80, 0, 0, 0, 0, 0, 0, 0]), .number("-9223372036854775808"))
        XCTAssertEqual(try MsgPackDecoder.decode([0xD0, 0x80]), .number("-128"))
        // float 32 0.1 is its own shortest text, not the double's 0.10000000149011612.
        XCTAssertEqual(try MsgPackDecoder.decode([0xCA, 0x3D, 0xCC, 0xCC, 0xCD]), .number("0.1"))
        XCTAssertEqual(try MsgPackDecoder.decode([0xCB, 0x3F, 0xB9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9A]), .number("0.1"))
        XCTAssertEqual(try MsgPackDecoder.decode([0xCB, 0x7F, 0xF8, 0, 0, 0, 0, 0, 1]), .string("NaN"))
        XCTAssertEqual(try MsgPackDecoder.decode([0xCA, 0xFF, 0x80, 0, 0]), .string("-Infinity"))
        // A float key is its number text; a nested key its compact JSON.
        XCTAssertEqual(try MsgPackDecoder.decode([0x82, 0xCB, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0, 0x01, 0x91, 0x90, 0x02]),
                       .object([JSON.Member("1.5", .number("1")), JSON.Member("[[]]", .number("2"))]))
    }

    private func failure(_ bytes: [UInt8], maxDepth: Int = MsgPackDecoder.defaultMaxDepth) -> MsgPackError? {
        do {
            _ = try MsgPackDecoder.decode(bytes, maxDepth: maxDepth)
            return nil
        } catch {
            return error
        }
    }

    func testInvalidInputNamesTheByteOffset() {
        let cases: [([UInt8], Int, String)] = [
            ([0xC1], 0, "0xc1 is never used"),
            ([0x93, 0x01, 0x02, 0xC1], 3, "0xc1 is never used"),
            ([], 0, "the input ends"),
            ([0x92, 0x01], 2, "a value is missing"),
            ([0xA5, 0x61, 0x62], 0, "str of 5 bytes needs 5 more bytes but the input ends after 2"),
            ([0x91, 0xCD, 0x01], 1, "unsigned integer needs 2 more bytes"),
            ([0xC4], 0, "bin length needs 1 more bytes"),
            ([0xC6, 0xFF, 0xFF, 0xFF, 0xFF, 0x00], 0, "bin of 4294967295 bytes"),
            ([0xD7, 0xFF, 0, 0], 0, "ext of 8 bytes"),
            ([0x01, 0x02, 0x03], 1, "2 bytes follow the value"),
            ([0x81, 0xA1, 0x61, 0xA2, 0xC3, 0x28], 3, "not valid UTF-8"),
            // A length is a claim, not an allocation: four billion elements, none present.
            ([0xDD, 0xFF, 0xFF, 0xFF, 0xFF], 5, "a value is missing"),
            ([0xDF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], 6, "a value is missing"),
        ]
        for (bytes, offset, message) in cases {
            guard let error = failure(bytes) else { XCTFail("\(bytes) accepted"); continue }
            XCTAssertEqual(error.offset, offset, "\(bytes): \(error)")
            XCTAssert(error.message.contains(message), "\(bytes): \(error.message)")
            XCTAssert(error.description.hasSuffix("at byte offset \(offset)"), error.description)
        }
    }

    func testNestingDepthLimit() throws {
        func nested(_ depth: Int, array: Bool) -> [UInt8] {
            // An array holding an array ..., or a map whose one value is the next map.
            (array ? Array(repeating: 0x91, count: depth) : (0..<depth).flatMap { _ in [0x81, 0x00] as [UInt8] }) + [0x00]
        }
        for array in [true, false] {
            let limit = MsgPackDecoder.defaultMaxDepth
            let step = array ? 1 : 2
            XCTAssertNoThrow(try MsgPackDecoder.decode(nested(limit, array: array)))
            let error = failure(nested(limit + 1, array: array))
            XCTAssertEqual(error?.offset, limit * step)
            XCTAssert(error?.message.contains("deeper than the limit of \(limit)") == true, "\(String(describing: error))")
            XCTAssertEqual(failure(nested(3, array: array), maxDepth: 2)?.offset, 2 * step)
            XCTAssertNoThrow(try MsgPackDecoder.decode(nested(3, array: array), maxDepth: 3))
        }
        // Far past the limit: refused at the limit, long before the stack is at risk.
        XCTAssertEqual(failure(Array(repeating: 0x91, count: 1_000_000))?.offset, MsgPackDecoder.defaultMaxDepth)
        // A map key is a level down too.
        XCTAssertEqual(failure([0x81, 0x91, 0x00, 0x00], maxDepth: 1)?.offset, 1)
    }

    /// A key's text escaped inside another key's text doubles its backslashes at every level;
    /// one level is allowed, a container key inside a key fails.
    func testKeysNestedInKeysAreBounded() throws {
        // {[{"a\"": 1}]: 2}: a key holding a map with a str key.
        XCTAssertEqual(try MsgPackDecoder.decode([0x81, 0x91, 0x81, 0xA2, 0x61, 0x22, 0x01, 0x02]),
                       .object([JSON.Member(#"[{"a\"":1}]"#, .number("2"))]))
        // {{1: 2}: 3}: scalar keys inside a key are fine.
        XCTAssertEqual(try MsgPackDecoder.decode([0x81, 0x81, 0x01, 0x02, 0x03]), .object([JSON.Member(#"{"1":2}"#, .number("3"))]))
        // {{[]: 1}: 2}, {{bin: 1}: 2}: a container key inside a key.
        XCTAssertEqual(failure([0x81, 0x81, 0x90, 0x01, 0x02])?.offset, 2)
        XCTAssertEqual(failure([0x81, 0x81, 0xC4, 0x00, 0x01, 0x02])?.message, "a map key inside a map key is an array, map, bin or ext")
        // Forty maps, each the key of the one before: the innermost map key inside a key is
        // refused as soon as it is read, before any key text is built.
        let hostile: [UInt8] = Array(repeating: 0x81, count: 40) + Array(repeating: 0xC0, count: 41)
        XCTAssertEqual(failure(hostile)?.offset, 39)
    }

    /// A rule may set `maxDepth` up to 1024 (`SerializerSpec.maxDepthLimit`): that deep a
    /// body decodes on a thread with a quarter of the 8 MiB a worker thread gets by default,
    /// in this debug build whose frames are larger than a release build's.
    /// Whether this process runs under the address or thread sanitizer (their runtimes define
    /// these symbols).
    static let underSanitizer: Bool = {
        let handle = dlopen(nil, RTLD_NOW)
        defer { if let handle { dlclose(handle) } }
        return dlsym(handle, "__tsan_init") != nil || dlsym(handle, "__asan_init") != nil
    }()

    func testTheLargestConfigurableDepthFitsASmallStack() {
        let depth = 1024
        let arrays: [UInt8] = Array(repeating: 0x91, count: depth) + [0x00]
        let maps: [UInt8] = (0..<depth).flatMap { _ in [0x81, 0xA0] as [UInt8] } + [0x00]
        let keys: [UInt8] = [0x81] + Array(repeating: 0x91, count: depth - 1) + [0x00, 0x00]
        let bodies = [arrays, maps, keys]
        let decoded = UnsafeMutableBufferPointer<Bool>.allocate(capacity: bodies.count)
        defer { decoded.deallocate() }
        decoded.initialize(repeating: false)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            for (i, body) in bodies.enumerated() {
                do {
                    _ = try MsgPackDecoder.decode(body, maxDepth: depth)
                    decoded[i] = true
                } catch {}
            }
            done.signal()
        }
        // Sanitizers widen every frame (TSan several times over): the margin is for the
        // product's frames, so an instrumented build gets a proportionally larger stack.
        thread.stackSize = (MsgPackDecoderTests.underSanitizer ? 8 : 2) << 20
        thread.start()
        done.wait()
        XCTAssertEqual(Array(decoded), [true, true, true])
    }

    func testTimestampCivilDates() {
        XCTAssertEqual(MsgPackTimestamp.text(seconds: 0, nanoseconds: 0), "1970-01-01T00:00:00Z")
        XCTAssertEqual(MsgPackTimestamp.text(seconds: 951_782_400, nanoseconds: 120_000_000), "2000-02-29T00:00:00.12Z")
        XCTAssertEqual(MsgPackTimestamp.text(seconds: -1, nanoseconds: 1), "1969-12-31T23:59:59.000000001Z")
        XCTAssertEqual(MsgPackTimestamp.text(seconds: -62_167_219_200, nanoseconds: 0), "0000-01-01T00:00:00Z")
        XCTAssertEqual(MsgPackTimestamp.text(seconds: 253_402_300_799, nanoseconds: 0), "9999-12-31T23:59:59Z")
        XCTAssertNil(MsgPackTimestamp.text(seconds: 253_402_300_800, nanoseconds: 0))
        XCTAssertNil(MsgPackTimestamp.text(seconds: 0, nanoseconds: 1_000_000_000))
        // Every day of eight centuries from 1600 against Foundation's Gregorian calendar (which
        // turns Julian before October 1582; RFC 3339 stays proleptic Gregorian).
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        for day in stride(from: Int64(-135_140), to: -135_140 + 2 * 146_097, by: 1) {
            let (y, m, d) = MsgPackTimestamp.civilDate(daysSinceEpoch: day)
            let parts = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: Double(day) * 86_400))
            if parts.year != y || parts.month != m || parts.day != d {
                XCTFail("day \(day): \(y)-\(m)-\(d), Foundation \(parts)"); break
            }
        }
    }

    func testSerializerChecksAndFailure() throws {
        let serializer = DataResponseSerializer<JSON>.msgpack()
        let ok = serializer.serializeResponse(getRequest(), httpResponse(200), Data([0x82, 0xA1, 0x61, 0x01, 0xA1, 0x62, 0xC2]), nil)
        XCTAssertEqual(try ok.get(), .object([JSON.Member("a", .number("1")), JSON.Member("b", .bool(false))]))

        let bad = serializer.serializeResponse(getRequest(), httpResponse(200), Data([0x92, 0x01, 0xC1]), nil)
        XCTAssertEqual(serializationReason(bad)?.name,
 "msgpackSerializationFailed")
        guard case .failure(let error) = bad else { return }
        let fields = ErrorLogFields(error)
        XCTAssertEqual(fields.error, "responseSerializationFailed")
        XCTAssertEqual(fields.message, "MessagePack could not be serialized because of error:\nbyte 0xc1 is never used in MessagePack at byte offset 2")
        XCTAssertEqual((error as? TapwireError)?.underlyingError as? MsgPackError, MsgPackError(offset: 2, message: "byte 0xc1 is never used in MessagePack"))

        // The JSON serializer's order: empty fails unless the response may be empty.
        XCTAssertEqual(serializationReason(serializer.serializeResponse(getRequest(), httpResponse(200), Data(), nil))?.name,
                       "inputDataNilOrZeroLength")
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(204), Data(), nil).get(), .null)
        XCTAssertFalse(serializer.acceptsTruncatedInput)
        let shallow = DataResponseSerializer<JSON>.msgpack(maxDepth: 1)
        XCTAssertEqual(serializationReason(shallow.serializeResponse(getRequest(), httpResponse(200), Data([0x91, 0x91, 0x00]), nil))?.name,
                       "msgpackSerializationFailed")
    }
}
