import XCTest
@testable import ResponseSerialization

/// `ProtobufRawDecoder` on wire bytes written by hand from the protobuf encoding spec, and
/// `GRPCMessages` on length-prefixed bodies.
final class ProtobufRawDecoderTests: XCTestCase {
    private func text(_ bytes: [UInt8], maxDepth: Int = ProtobufRawDecoder.defaultMaxDepth,
                      file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            var out: [UInt8] = []
            JSONWriter.write(try ProtobufRawDecoder.decode(bytes, maxDepth: maxDepth), into: &out)
            return String(decoding: out, as: UTF8.self)
        } catch {
            XCTFail("refused: \(error)", file: file, line: line)
            return ""
        }
    }

    private func refusal(_ bytes: [UInt8], maxDepth: Int = ProtobufRawDecoder.defaultMaxDepth) -> ProtobufError? {
        do { _ = try ProtobufRawDecoder.decode(bytes, maxDepth: maxDepth); return nil } catch { return error }
    }

    func testEachWireTypeAsProtocDecodeRawReadsIt() {
        XCTAssertEqual(text([0x08, 0x96, 0x01]), #"{"1":150}"#)
        XCTAssertEqual(text([0x12, 0x07] + Array("testing".utf8)), #"{"2":"testing"}"#)
        XCTAssertEqual(text([0x1A, 0x03, 0x08, 0x96, 0x01]), #"{"3":{"1":150}}"#, "a nested message")
        XCTAssertEqual(text([0x08, 0x01, 0x08, 0x02, 0x10, 0x00]), #"{"1":1,"1":2,"2":0}"#, "repeated fields stay members")
        XCTAssertEqual(text([0x0D, 0x00, 0x00, 0x80, 0x3F]), #"{"1":{"fixed32":1065353216,"float":1.0}}"#)
        XCTAssertEqual(text([0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F]), #"{"1":{"fixed64":4609434218613702656,"double":1.5}}"#)
        XCTAssertEqual(text([0x0D, 0x00, 0x00, 0xC0, 0x7F]), #"{"1":{"fixed32":2143289344,"float":"NaN"}}"#)
        XCTAssertEqual(text([0x0B, 0x10, 0x01, 0x0C, 0x18, 0x02]), #"{"1":{"2":1},"3":2}"#, "a group")
        XCTAssertEqual(text([]), "{}")
    }

    func testVarintsAreExact() {
        // -1 as int64: ten bytes, all 64 bits set.
        XCTAssertEqual(text([0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x01]), #"{"1":18446744073709551615}"#)
        XCTAssertEqual(text([0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), #"{"1":9223372036854775808}"#)
    }

    func testLengthDelimitedIsTextThenMessageThenTextThenBytes() {
        XCTAssertEqual(text([0x22, 0x02, 0xFF, 0xFE]), #"{"4":{"base64":"//4="}}"#)
        XCTAssertEqual(text([0x22, 0x00]), #"{"4":""}"#)
        // "hi" would parse as a message (field 13, varint 'i'): printable text wins.
        XCTAssertEqual(text([0x22, 0x02] + Array("hi".utf8)), #"{"4":"hi"}"#)
        // Text with a control byte that is not a message: still text.
        XCTAssertEqual(text([0x22, 0x02, 0x01, 0x41]), #"{"4":"\u0001A"}"#)
    }

    func testMalformedInputIsRefusedAtItsOffset() {
        XCTAssertEqual(refusal([0x08]), ProtobufError(offset: 1, message: "varint cut short"))
        XCTAssertEqual(refusal([0x12, 0x05, 0x61]), ProtobufError(offset: 1, message: "length 5 past the end"))
        XCTAssertEqual(refusal([0x0F]), ProtobufError(offset: 0, message: "wire type 7 does not exist"))
        XCTAssertEqual(refusal([0x00, 0x01]), ProtobufError(offset: 0, message: "field number 0 out of range"))
        XCTAssertEqual(refusal([0x0C]), ProtobufError(offset: 0, message: "end group 1 without its start"))
        XCTAssertEqual(refusal([0x0B, 0x08, 0x01]), ProtobufError(offset: 3, message: "group 1 not ended"))
        XCTAssertEqual(refusal([0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x02]),
                       ProtobufError(offset: 1, message: "varint longer than 64 bits"))
        XCTAssertEqual(refusal([0x09, 1, 2, 3]), ProtobufError(offset: 1, message: "fixed64 cut short"))
    }

    func testNestingIsBounded() {
        var nested: [UInt8] = [0x08, 0x01]
        for _ in 0..<10 { nested = [0x0B] + nested + [0x0C] }   // groups: always read as nesting
        XCTAssertNotNil(refusal(nested, maxDepth: 5))
        XCTAssertNil(refusal(nested, maxDepth: 11))
        // A length-delimited field too deep to be a message is kept as bytes, not refused.
        var messages: [UInt8] = [0x08, 0x01]
        for _ in 0..<10 { messages = [0x0A, UInt8(messages.count)] + messages }
        XCTAssertNil(refusal(messages, maxDepth: 3))
    }

    func testGRPCBodiesSplitIntoMessages() throws {
        let body: [UInt8] = [0, 0, 0, 0, 3, 0x08, 0x96, 0x01] + [1, 0, 0, 0, 2, 0xAA, 0xBB] + [0, 0, 0, 0, 0]
        let split = try GRPCMessages.split(body)
        XCTAssertEqual(split.messages, [GRPCMessages.Message(offset: 0, compressed: false, payload: 5..<8),
                                        GRPCMessages.Message(offset: 8, compressed: true, payload: 13..<15),
                                        GRPCMessages.Message(offset: 15, compressed: false, payload: 20..<20)])
        XCTAssertNil(split.cutShort)
        let cut = try GRPCMessages.split(Array(body.prefix(14)))
        XCTAssertEqual(cut.messages.count, 1)
        XCTAssertEqual(cut.cutShort?.offset, 8)
        XCTAssertEqual(cut.cutShort?.declaredLength, 2)
        XCTAssertEqual(try GRPCMessages.split(Array(body.prefix(10))).cutShort?.declaredLength, nil, "a prefix cut short")
        XCTAssertThrowsError(try GRPCMessages.split([2, 0, 0, 0, 0])) { error in
            XCTAssertEqual(error as? GRPCFramingError, GRPCFramingError(offset: 0, message: "compressed flag 2 is neither 0 nor 1"))
        }
    }

    /// `grpc-encoding` is undone within one budget for the whole body: many small bombs
    /// weigh as one, the message that passes it is cut, and those after it stay compressed.
    func testCompressedMessagesShareOneDecodeBudget() throws {
        // About 100 KiB of JSON each (`+json` messages), a few hundred bytes compressed.
        let bomb = ContentDecoderFixtures.deflate(Array(("[" + String(repeating: "0,", count: 51_199) + "0]").utf8), .gzip)
        var body: [UInt8] = []
        for _ in 0..<20 {
            body += [1] + withUnsafeBytes(of: UInt32(bomb.count).bigEndian, Array.init) + bomb
        }
        let split = try GRPCMessages.split(body)
        let value = GRPCValue.make(body, split, encoding: "gzip", isJSON: true, maxDecodedBytes: 1 << 20, maxDepth: 8)
        guard case .object(let members) = value, case .array(let messages)? = members.first(where: { $0.key == "messages" })?.value else {
            return XCTFail("\(value)")
        }
        XCTAssertEqual(messages.count, 20)
        let errors = messages.map { message -> String? in
            guard case .object(let fields) = message, case .string(let error)? = fields.first(where: { $0.key == "error" })?.value else { return nil }
            return error
        }
        XCTAssertEqual(errors.prefix(10).compactMap { $0 }, [], "ten messages of 100 KiB fit in 1 MiB")
        XCTAssertEqual(errors.dropFirst(10).compactMap { $0 }.count, 10, "the eleventh is cut, and the rest are left compressed")
        XCTAssertTrue(errors[10]?.contains("the body's messages inflate past the decode limit") ?? false, "\(errors[10] ?? "nil")")
    }
}
