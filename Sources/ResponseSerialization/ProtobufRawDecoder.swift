import Foundation

/// One protobuf message read without its schema, as `protoc --decode_raw` reads it, into
/// the `JSON` a record logs. The wire format names only field numbers and wire types, so:
///
/// - The message is an object whose member names are the field numbers (`"1"`, `"15"`), in
///   wire order; a repeated field is a member per occurrence (duplicate names kept), since
///   without the schema one occurrence cannot be told from a one-element list.
/// - varint (wire type 0): the exact unsigned 64-bit value as a JSON number (a negative
///   `int32`/`int64` shows as its two's complement, a `sint` as its zigzag form, as
///   `protoc --decode_raw` prints them).
/// - fixed64 (1): `{"fixed64":N,"double":D}`; fixed32 (5): `{"fixed32":N,"float":F}` —
///   the unsigned integer exactly, and the bits read as an IEEE float in its shortest text
///   (`"NaN"`, `"Infinity"`, `"-Infinity"` as strings, as in protobuf's JSON mapping).
/// - length-delimited (2): printable UTF-8 text is a string; otherwise bytes that parse
///   whole as a message (at least one field) are that message; otherwise valid UTF-8 is a
///   string; otherwise `{"base64":"…"}`. Empty is `""`. (Text first, unlike protoc, because
///   short text often happens to parse as a message too.)
/// - groups (3 … 4, deprecated): an object of the group's fields.
///
/// Malformed input (a varint past 10 bytes, a length past the end, wire type 6 or 7, field
/// number 0, an unmatched end group) fails with the byte offset, as `MsgPackError` does.
/// Messages and groups nest at most `maxDepth` deep.
public enum ProtobufRawDecoder {
    /// The nesting limit when none is given: protobuf's own parsers stop at 100; records
    /// need less, and a schema-less guess at nesting should not recurse far.
    public static let defaultMaxDepth = 64

    /// Decodes `bytes` as one message.
    /// - Parameters:
    ///   - bytes: The message's bytes (a gRPC message's payload, an `application/x-protobuf` body).
    ///   - maxDepth: Messages and groups nested deeper than this fail.
    public static func decode(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = defaultMaxDepth) throws(ProtobufError) -> JSON {
        var reader = ProtobufReader(bytes: bytes, maxDepth: maxDepth)
        return try reader.message(depth: 0, endGroup: nil)
    }

    /// `decode` for a byte array.
    /// - Parameters:
    ///   - bytes: The message's bytes.
    ///   - maxDepth: Messages and groups nested deeper than this fail.
    public static func decode(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(ProtobufError) -> JSON {
        let result: Result<JSON, ProtobufError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ProtobufError) -> JSON in try decode(raw, maxDepth: maxDepth) }
        }
        return try result.get()
    }
}

/// Why bytes are not a protobuf message: what and where (byte offset into the message).
public struct ProtobufError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the field, length or varint at fault.
    public var offset: Int
    /// What is wrong.
    public var message: String
    /// - Parameters:
    ///   - offset: Byte offset of the problem.
    ///   - message: What is wrong.
    public init(offset: Int, message: String) { self.offset = offset; self.message = message }
    /// The message and the offset: "varint cut short at byte offset 7".
    public var description: String { "\(message) at byte offset \(offset)" }
}

struct ProtobufReader {
    let bytes: UnsafeRawBufferPointer
    let maxDepth: Int
    /// Offsets are relative to the outermost message, so errors point into the body.
    var offset = 0
    var end: Int

    init(bytes: UnsafeRawBufferPointer, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        end = bytes.count
    }

    mutating func varint() throws(ProtobufError) -> UInt64 {
        try ProtobufWire.varint(bytes, at: &offset, end: end, origin: 0)
    }

    mutating func fixed(_ width: Int) throws(ProtobufError) -> UInt64 {
        try ProtobufWire.fixed(width, bytes, at: &offset, end: end, origin: 0)
    }

    /// Fields until `end`, or until the end group of `endGroup`.
    mutating func message(depth: Int, endGroup: UInt64?) throws(ProtobufError) -> JSON {
        guard depth < maxDepth else { throw ProtobufError(offset: offset, message: "nested deeper than \(maxDepth)") }
        var members: [JSON.Member] = []
        while offset < end {
            let keyOffset = offset
            let key = try varint()
            let field = key >> 3
            let wireType = key & 7
            guard field > 0, field < 1 << 29 else {
                throw ProtobufError(offset: keyOffset, message: "field number \(field) out of range")
            }
            let name = String(field)
            switch wireType {
            case 0:
                members.append(JSON.Member(name, .number(String(try varint()))))
            case 1:
                let bits = try fixed(8)
                members.append(JSON.Member(name, .object([JSON.Member("fixed64", .number(String(bits))),
                                                           JSON.Member("double", Self.float(Double(bitPattern: bits)))])))
            case 5:
                let bits = try fixed(4)
                members.append(JSON.Member(name, .object([JSON.Member("fixed32", .number(String(bits))),
                                                           JSON.Member("float", Self.float(Float(bitPattern: UInt32(bits))))])))
            case 2:
                let lengthOffset = offset
                let length = try varint()
                guard length <= UInt64(end - offset) else {
                    throw ProtobufError(offset: lengthOffset, message: "length \(length) past the end")
                }
                let start = offset
                offset += Int(length)
                members.append(JSON.Member(name, lengthDelimited(start..<offset, depth: depth)))
            case 3:
                members.append(JSON.Member(name, try message(depth: depth + 1, endGroup: field)))
            case 4:
                guard endGroup == field else { throw ProtobufError(offset: keyOffset, message: "end group \(field) without its start") }
                return .object(members)
            default:
                throw ProtobufError(offset: keyOffset, message: "wire type \(wireType) does not exist")
            }
        }
        if let endGroup { throw ProtobufError(offset: offset, message: "group \(endGroup) not ended") }
        return .object(members)
    }

    /// Text, a nested message, text again, or bytes (see `ProtobufRawDecoder`).
    private func lengthDelimited(_ range: Range<Int>, depth: Int) -> JSON {
        if range.isEmpty { return .string("") }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
        let text = String(validating: slice, as: UTF8.self)
        if let text, Self.isPrintable(slice) { return .string(text) }
        var nested = self
        nested.offset = range.lowerBound
        nested.end = range.upperBound
        if let value = try? nested.message(depth: depth + 1, endGroup: nil), case .object(let fields) = value, !fields.isEmpty {
            return value
        }
        if let text { return .string(text) }
        return .object([JSON.Member("base64", .string(Data(slice).base64EncodedString()))])
    }

    /// No control characters but tab, line feed and carriage return.
    private static func isPrintable(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.allSatisfy { $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
    }

    static func float<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) -> JSON {
        if value.isNaN { return .string("NaN") }
        if value.isInfinite { return .string(value < 0 ? "-Infinity" : "Infinity") }
        return .number(value.description)
    }
}

/// The wire format's two primitive readers, shared by the schema-less and the schema
/// decoders. `origin` is the index error offsets count from.
enum ProtobufWire {
    static func varint<Bytes: Collection>(_ bytes: Bytes, at index: inout Int, end: Int, origin: Int) throws(ProtobufError) -> UInt64
    where Bytes.Element == UInt8, Bytes.Index == Int {
        let start = index
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < end else { throw ProtobufError(offset: start - origin, message: "varint cut short") }
            let byte = bytes[index]
            index += 1
            // The tenth byte holds bit 63 only.
            if shift == 63 && byte > 1 { throw ProtobufError(offset: start - origin, message: "varint longer than 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// A little-endian fixed32 (`width` 4) or fixed64 (8).
    static func fixed<Bytes: Collection>(_ width: Int, _ bytes: Bytes, at index: inout Int, end: Int, origin: Int) throws(ProtobufError) -> UInt64
    where Bytes.Element == UInt8, Bytes.Index == Int {
        guard end - index >= width else { throw ProtobufError(offset: index - origin, message: "fixed\(width * 8) cut short") }
        var value: UInt64 = 0
        for i in 0..<width { value |= UInt64(bytes[index + i]) << (8 * UInt64(i)) }
        index += width
        return value
    }
}
