import Foundation

/// Message, enum and service types from a `FileDescriptorSet` (what `protoc
/// --include_imports --descriptor_set_out` writes), and protobuf messages decoded with them
/// into protobuf's canonical JSON mapping: members named by each field's `json_name`
/// (lowerCamelCase), 64-bit integers as strings, `bytes` as base64, enums by value name (a
/// number unknown to the enum stays a number), repeated fields as arrays (packed or not),
/// maps as objects keyed by the key's text, nested messages as objects, float and double
/// NaN/Infinity as strings. Fields the schema does not know are left out, as the JSON
/// mapping does. Well-known types (Timestamp, Duration, wrappers, Struct, Any, …) take their
/// own JSON forms (`ProtobufWellKnownTypes.swift`) when the set includes their files.
public struct ProtobufSchema: Sendable, Equatable {
    enum FieldType: Int, Sendable {
        case double = 1, float, int64, uint64, int32, fixed64, fixed32, bool, string, group, message, bytes
        case uint32, enumeration, sfixed32, sfixed64, sint32, sint64
    }

    struct Field: Sendable {
        var name: String
        var jsonName: String
        var number: Int
        var type: FieldType
        /// Message or enum type, fully qualified without the leading dot.
        var typeName: String
        var repeated: Bool
    }

    struct Message: Sendable {
        /// In declaration order, which is the order of the JSON members.
        var fields: [Field] = []
        var isMapEntry = false
    }

    private(set) var messages: [String: Message] = [:]
    private(set) var enums: [String: [Int: String]] = [:]
    /// `/package.Service/Method` → input and output message types.
    private(set) var methods: [String: (input: String, output: String)] = [:]
    /// The set as read: what two schemas are compared by.
    private let source: [UInt8]

    /// Schemas read from the same bytes.
    /// - Parameters:
    ///   - a: One schema.
    ///   - b: The other.
    public static func == (a: ProtobufSchema, b: ProtobufSchema) -> Bool { a.source == b.source }

    /// Reads a serialized `FileDescriptorSet`.
    /// - Parameter descriptorSet: The file's bytes.
    public init(descriptorSet: [UInt8]) throws(ProtobufError) {
        source = descriptorSet
        var files = WireFields(descriptorSet)
        while let (number, value) = try files.next() {
            guard number == 1, case .bytes(let file) = value else { continue }
            try readFile(file)
        }
        guard !messages.isEmpty || !methods.isEmpty else {
            throw ProtobufError(offset: 0, message: "no message type in the descriptor set")
        }
    }

    /// Whether `name` (`package.Message`) is a message type of the set.
    /// - Parameter name: The fully qualified name, without a leading dot.
    public func hasMessage(_ name: String) -> Bool { messages[name] != nil }

    /// The input and output types of the RPC at `path` (`/package.Service/Method`).
    /// - Parameter path: The request's path, query excluded.
    public func method(path: String) -> (input: String, output: String)? { methods[path] }

    /// Decodes `bytes` as a `message`.
    /// - Parameters:
    ///   - bytes: One serialized message.
    ///   - message: Its type, fully qualified without a leading dot.
    ///   - maxDepth: Messages nested deeper than this fail.
    public func decode(_ bytes: [UInt8], message: String, maxDepth: Int = ProtobufRawDecoder.defaultMaxDepth) throws(ProtobufError) -> JSON {
        try decode(bytes[...], type: message, depth: 0, maxDepth: maxDepth, base: 0)
    }

    // MARK: reading the descriptors

    private mutating func readFile(_ file: ArraySlice<UInt8>) throws(ProtobufError) {
        var package = ""
        var bodies: [ArraySlice<UInt8>] = [], enumBodies: [ArraySlice<UInt8>] = [], services: [ArraySlice<UInt8>] = []
        var fields = WireFields(file)
        while let (number, value) = try fields.next() {
            guard case .bytes(let b) = value else { continue }
            switch number {
            case 2: package = String(decoding: b, as: UTF8.self)
            case 4: bodies.append(b)
            case 5: enumBodies.append(b)
            case 6: services.append(b)
            default: break
            }
        }
        let scope = package.isEmpty ? "" : package + "."
        for b in bodies { try readMessage(b, scope: scope) }
        for b in enumBodies { try readEnum(b, scope: scope) }
        for b in services { try readService(b, scope: scope) }
    }

    private mutating func readMessage(_ body: ArraySlice<UInt8>, scope: String) throws(ProtobufError) {
        var name = "", message = Message()
        var nested: [ArraySlice<UInt8>] = [], nestedEnums: [ArraySlice<UInt8>] = []
        var fields = WireFields(body)
        while let (number, value) = try fields.next() {
            switch (number, value) {
            case (1, .bytes(let b)): name = String(decoding: b, as: UTF8.self)
            case (2, .bytes(let b)): if let field = try Self.readField(b) { message.fields.append(field) }
            case (3, .bytes(let b)): nested.append(b)
            case (4, .bytes(let b)): nestedEnums.append(b)
            case (7, .bytes(let options)):
                var o = WireFields(options)
                while let (n, v) = try o.next() { if n == 7, case .varint(let flag) = v { message.isMapEntry = flag != 0 } }
            default: break
            }
        }
        let full = scope + name
        messages[full] = message
        for b in nested { try readMessage(b, scope: full + ".") }
        for b in nestedEnums { try readEnum(b, scope: full + ".") }
    }

    private static func readField(_ body: ArraySlice<UInt8>) throws(ProtobufError) -> Field? {
        var name = "", jsonName: String?, number = 0, type: FieldType?, typeName = "", repeated = false
        var fields = WireFields(body)
        while let (n, value) = try fields.next() {
            switch (n, value) {
            case (1, .bytes(let b)): name = String(decoding: b, as: UTF8.self)
            case (3, .varint(let v)): number = Int(truncatingIfNeeded: v)
            case (4, .varint(let v)): repeated = v == 3
            case (5, .varint(let v)): type = FieldType(rawValue: Int(truncatingIfNeeded: v))
            case (6, .bytes(let b)): typeName = String(decoding: b.drop { $0 == UInt8(ascii: ".") }, as: UTF8.self)
            case (10, .bytes(let b)): jsonName = String(decoding: b, as: UTF8.self)
            default: break
            }
        }
        guard let type, number > 0 else { return nil }
        return Field(name: name, jsonName: jsonName ?? lowerCamel(name), number: number, type: type,
                     typeName: typeName, repeated: repeated)
    }

    private mutating func readEnum(_ body: ArraySlice<UInt8>, scope: String) throws(ProtobufError) {
        var name = "", values: [Int: String] = [:]
        var fields = WireFields(body)
        while let (n, value) = try fields.next() {
            switch (n, value) {
            case (1, .bytes(let b)): name = String(decoding: b, as: UTF8.self)
            case (2, .bytes(let b)):
                var valueName = "", number = 0
                var v = WireFields(b)
                while let (vn, vv) = try v.next() {
                    if vn == 1, case .bytes(let s) = vv { valueName = String(decoding: s, as: UTF8.self) }
                    if vn == 2, case .varint(let x) = vv { number = Int(Int32(truncatingIfNeeded: x)) }
                }
                if values[number] == nil { values[number] = valueName }   // the first alias names it
            default: break
            }
        }
        enums[scope + name] = values
    }

    private mutating func readService(_ body: ArraySlice<UInt8>, scope: String) throws(ProtobufError) {
        var name = "", rpcs: [(String, String, String)] = []
        var fields = WireFields(body)
        while let (n, value) = try fields.next() {
            switch (n, value) {
            case (1, .bytes(let b)): name = String(decoding: b, as: UTF8.self)
            case (2, .bytes(let b)):
                var method = "", input = "", output = ""
                var m = WireFields(b)
                while let (mn, mv) = try m.next() {
                    guard case .bytes(let s) = mv else { continue }
                    let text = String(decoding: s.drop { $0 == UInt8(ascii: ".") }, as: UTF8.self)
                    switch mn { case 1: method = text; case 2: input = text; case 3: output = text; default: break }
                }
                rpcs.append((method, input, output))
            default: break
            }
        }
        for (method, input, output) in rpcs { methods["/\(scope)\(name)/\(method)"] = (input, output) }
    }

    /// protoc's default `json_name`: underscores dropped, the letter after each upper-cased.
    static func lowerCamel(_ name: String) -> String {
        var out = "", upper = false
        for c in name {
            if c == "_" { upper = true; continue }
            out.append(upper ? Character(c.uppercased()) : c)
            upper = false
        }
        return out
    }

    // MARK: decoding with the schema

    func decode(_ bytes: ArraySlice<UInt8>, type: String, depth: Int, maxDepth: Int, base: Int) throws(ProtobufError) -> JSON {
        guard depth < maxDepth else { throw ProtobufError(offset: base, message: "nested deeper than \(maxDepth)") }
        guard let message = messages[type] else { throw ProtobufError(offset: base, message: "no message type \(type) in the schema") }
        var values: [Int: [JSON]] = [:]
        var wire = WireFields(bytes)
        while let (number, value) = try wire.next() {
            guard let field = message.fields.first(where: { $0.number == number }) else { continue }
            let at = base + wire.lastOffset
            var decoded: [JSON]
            if case .bytes(let b) = value, field.repeated, field.type.isPackable {
                decoded = try unpack(b, field, at: at)
            } else {
                decoded = [try scalar(value, field, depth: depth, maxDepth: maxDepth, at: at)]
            }
            if field.repeated { values[number, default: []].append(contentsOf: decoded) } else { values[number] = Array(decoded.suffix(1)) }
        }
        var members: [JSON.Member] = []
        for field in message.fields {
            guard let found = values[field.number] else { continue }
            if field.repeated, field.type == .message, let entry = messages[field.typeName], entry.isMapEntry {
                members.append(JSON.Member(field.jsonName, .object(found.compactMap(Self.mapMember))))
            } else if field.repeated {
                members.append(JSON.Member(field.jsonName, .array(found)))
            } else if let last = found.last {
                members.append(JSON.Member(field.jsonName, last))
            }
        }
        return try wellKnown(type, members, depth: depth, maxDepth: maxDepth, at: base) ?? .object(members)
    }

    /// A map entry (`{"key":K,"value":V}` by its fields' json names) as one member.
    private static func mapMember(_ entry: JSON) -> JSON.Member? {
        guard case .object(let members) = entry else { return nil }
        let key = members.first { $0.key == "key" }?.value
        let value = members.first { $0.key == "value" }?.value ?? .null
        let text: String
        switch key {
        case .string(let s)?: text = s
        case .number(let n)?: text = n
        case .bool(let b)?: text = b ? "true" : "false"
        default: text = ""
        }
        return JSON.Member(text, value)
    }

    private func unpack(_ bytes: ArraySlice<UInt8>, _ field: Field, at: Int) throws(ProtobufError) -> [JSON] {
        var out: [JSON] = []
        var reader = WireFields(bytes)
        while !reader.atEnd {
            let value: WireValue
            switch field.type.wireType {
            case 0: value = .varint(try reader.varint())
            case 1: value = .fixed64(try reader.fixed(8))
            default: value = .fixed32(UInt32(truncatingIfNeeded: try reader.fixed(4)))
            }
            out.append(try scalar(value, field, depth: 0, maxDepth: 1, at: at))
        }
        return out
    }

    private func scalar(_ value: WireValue, _ field: Field, depth: Int, maxDepth: Int, at: Int) throws(ProtobufError) -> JSON {
        func mismatch() -> ProtobufError {
            ProtobufError(offset: at, message: "field \(field.name) (\(field.number)) is not in its declared wire type")
        }
        switch (field.type, value) {
        case (.int32, .varint(let v)): return .number(String(Int32(truncatingIfNeeded: v)))
        case (.enumeration, .varint(let v)):
            if field.typeName == Self.nullValueType { return .null }
            let n = Int(Int32(truncatingIfNeeded: v))
            if let name = enums[field.typeName]?[n] { return .string(name) }
            return .number(String(n))
        case (.int64, .varint(let v)): return .string(String(Int64(bitPattern: v)))
        case (.uint32, .varint(let v)): return .number(String(UInt32(truncatingIfNeeded: v)))
        case (.uint64, .varint(let v)): return .string(String(v))
        case (.sint32, .varint(let v)):
            let u = UInt32(truncatingIfNeeded: v)
            return .number(String(Int32(bitPattern: (u >> 1) ^ (0 &- (u & 1)))))
        case (.sint64, .varint(let v)): return .string(String(Int64(bitPattern: (v >> 1) ^ (0 &- (v & 1)))))
        case (.bool, .varint(let v)): return .bool(v != 0)
        case (.fixed64, .fixed64(let v)): return .string(String(v))
        case (.sfixed64, .fixed64(let v)): return .string(String(Int64(bitPattern: v)))
        case (.double, .fixed64(let v)): return ProtobufReader.float(Double(bitPattern: v))
        case (.fixed32, .fixed32(let v)): return .number(String(v))
        case (.sfixed32, .fixed32(let v)): return .number(String(Int32(bitPattern: v)))
        case (.float, .fixed32(let v)): return ProtobufReader.float(Float(bitPattern: v))
        case (.string, .bytes(let b)): return .string(String(decoding: b, as: UTF8.self))
        case (.bytes, .bytes(let b)): return .string(Data(b).base64EncodedString())
        case (.message, .bytes(let b)):
            return try decode(b, type: field.typeName, depth: depth + 1, maxDepth: maxDepth, base: at)
        default:
            throw mismatch()
        }
    }
}

extension ProtobufSchema.FieldType {
    /// Scalars whose repeated fields may be packed into one length-delimited field.
    var isPackable: Bool { ![.string, .bytes, .message, .group].contains(self) }
    /// The wire type of one packed element.
    var wireType: Int {
        switch self {
        case .double, .fixed64, .sfixed64: return 1
        case .float, .fixed32, .sfixed32: return 5
        default: return 0
        }
    }
}

enum WireValue {
    case varint(UInt64)
    case fixed64(UInt64)
    case fixed32(UInt32)
    case bytes(ArraySlice<UInt8>)
}

/// The fields of one message on the wire, in order (groups are skipped whole).
struct WireFields {
    private let bytes: ArraySlice<UInt8>
    private var index: Int
    /// Offset of the last field read, from the start of these bytes.
    private(set) var lastOffset = 0

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes; index = bytes.startIndex }
    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    var atEnd: Bool { index >= bytes.endIndex }
    private var offset: Int { index - bytes.startIndex }

    mutating func varint() throws(ProtobufError) -> UInt64 {
        try ProtobufWire.varint(bytes, at: &index, end: bytes.endIndex, origin: bytes.startIndex)
    }

    mutating func fixed(_ width: Int) throws(ProtobufError) -> UInt64 {
        try ProtobufWire.fixed(width, bytes, at: &index, end: bytes.endIndex, origin: bytes.startIndex)
    }

    mutating func next() throws(ProtobufError) -> (Int, WireValue)? {
        while !atEnd {
            lastOffset = offset
            let key = try varint()
            let number = Int(truncatingIfNeeded: key >> 3)
            guard number > 0 else { throw ProtobufError(offset: lastOffset, message: "field number 0 out of range") }
            switch key & 7 {
            case 0: return (number, .varint(try varint()))
            case 1: return (number, .fixed64(try fixed(8)))
            case 5: return (number, .fixed32(UInt32(truncatingIfNeeded: try fixed(4))))
            case 2:
                let lengthAt = offset
                let length = try varint()
                guard length <= UInt64(bytes.endIndex - index) else {
                    throw ProtobufError(offset: lengthAt, message: "length \(length) past the end")
                }
                let start = index
                index += Int(length)
                return (number, .bytes(bytes[start..<index]))
            case 3:
                try skipGroup(number)
            default:
                throw ProtobufError(offset: lastOffset, message: "wire type \(key & 7) does not exist")
            }
        }
        return nil
    }

    /// Past the end group of `number`, nested groups included.
    private mutating func skipGroup(_ number: Int) throws(ProtobufError) {
        while !atEnd {
            let at = offset
            let key = try varint()
            switch key & 7 {
            case 0: _ = try varint()
            case 1: _ = try fixed(8)
            case 5: _ = try fixed(4)
            case 2:
                let length = try varint()
                guard length <= UInt64(bytes.endIndex - index) else { throw ProtobufError(offset: at, message: "length \(length) past the end") }
                index += Int(length)
            case 3: try skipGroup(Int(truncatingIfNeeded: key >> 3))
            case 4:
                if Int(truncatingIfNeeded: key >> 3) == number { return }
                throw ProtobufError(offset: at, message: "end group \(key >> 3) without its start")
            default: throw ProtobufError(offset: at, message: "wire type \(key & 7) does not exist")
            }
        }
        throw ProtobufError(offset: offset, message: "group \(number) not ended")
    }
}
