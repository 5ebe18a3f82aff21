import Foundation
import XCTest
@testable import ResponseSerialization

/// `ProtobufSchema` against protoc itself: a descriptor set and messages it encodes from
/// text format (Resources/protobuf/shop.proto), decoded into protobuf's canonical JSON.
final class ProtobufSchemaTests: XCTestCase {
    static let proto = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/protobuf/shop.proto")

    private func protoc(_ arguments: [String], input: String? = nil) throws -> Data { try Self.protoc(arguments, input: input) }

    static func protoc(_ arguments: [String], input: String? = nil) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["protoc", "-I", Self.proto.deletingLastPathComponent().path] + arguments
        let out = Pipe(), inp = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardInput = inp
        p.standardError = err
        do { try p.run() } catch { throw XCTSkip("protoc is not installed (make test-deps installs protobuf-compiler)") }
        if let input { inp.fileHandleForWriting.write(Data(input.utf8)) }
        try inp.fileHandleForWriting.close()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        if p.terminationStatus == 127 { throw XCTSkip("protoc is not installed (make test-deps installs protobuf-compiler)") }
        XCTAssertEqual(p.terminationStatus, 0, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        return data
    }

    /// Where protoc's own well-known type files are (Debian's libprotobuf-dev).
    static let wellKnownIncludes = "/usr/include"

    private func schema(_ file: String = "shop.proto") throws -> ProtobufSchema {
        try ProtobufSchema(descriptorSet: [UInt8](try Self.descriptorSet(file)))
    }

    /// The descriptor set protoc writes for `file` (under Resources/protobuf) and its imports.
    static func descriptorSet(_ file: String) throws -> Data {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-pb-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let set = dir.appendingPathComponent("set.pb").path
        _ = try protoc(["-I", Self.wellKnownIncludes, "--include_imports", "--descriptor_set_out=\(set)", file])
        return try Data(contentsOf: URL(fileURLWithPath: set))
    }

    private func json(_ value: JSON) -> String { Self.json(value) }

    static func json(_ value: JSON) -> String {
        var out: [UInt8] = []
        JSONWriter.write(value, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func testEveryFieldTypeInCanonicalJSON() throws {
        let schema = try schema()
        let text = #"""
        item_id: "sku-1" price_cents: -1500 sizes: [38, 40] color: GREEN stock { key: "paris" value: 3 }
        blob: "\001\002" weight: 1.5 delta: -7 parent { item_id: "root" color: RED } big: 18446744073709551615
        on_sale: true tags: "a" tags: "b" ratio: 0.25 code: 4000000000 offset: -9
        """#
        let bytes = [UInt8](try protoc(["--encode=shop.v1.Item", "shop.proto"], input: text))
        XCTAssertEqual(json(try schema.decode(bytes, message: "shop.v1.Item")),
                       #"{"itemId":"sku-1","priceCents":"-1500","sizes":[38,40],"color":"GREEN","stock":{"paris":3},"#
                       + #""blob":"AQI=","weight":1.5,"delta":-7,"parent":{"itemId":"root","color":"RED"},"#
                       + #""big":"18446744073709551615","onSale":true,"tags":["a","b"],"ratio":0.25,"code":4000000000,"offset":"-9"}"#)
    }

    /// Each well-known type in its own JSON form; the expected text is what Python's
    /// `google.protobuf.json_format.MessageToDict` gives for the same bytes.
    func testWellKnownTypesTakeTheirCanonicalJSONForms() throws {
        guard FileManager.default.fileExists(atPath: Self.wellKnownIncludes + "/google/protobuf/any.proto") else {
            throw XCTSkip("no google/protobuf/*.proto (make test-deps installs libprotobuf-dev)")
        }
        let schema = try schema("wkt.proto")
        let text = #"""
        at { seconds: 1733371200 nanos: 123000000 }
        whole { seconds: -62135596800 }
        took { seconds: 1 nanos: 500000000 }
        back { seconds: -3 nanos: -250 }
        big { value: -9007199254740993 }
        label { value: "h\303\251" }
        flag { value: true }
        raw { value: "\001\002\003" }
        ratio { value: 0.5 }
        count { value: 7 }
        zero { }
        meta { fields { key: "a" value { number_value: 1.5 } } fields { key: "b" value { list_value { values { string_value: "x" } values { null_value: NULL_VALUE } values { bool_value: false } } } } fields { key: "c" value { struct_value { fields { key: "d" value { string_value: "e" } } } } } }
        anything { string_value: "text" }
        list { values { number_value: 2 } values { struct_value { } } }
        nothing { }
        mask { paths: "user.display_name" paths: "photo" }
        packed { [type.googleapis.com/wkt.v1.Inner] { name: "n" size: 5 } }
        packed_time { [type.googleapis.com/google.protobuf.Timestamp] { seconds: 0 nanos: 1000 } }
        times { seconds: 86400 } times { seconds: 951782400 nanos: 5 }
        micros { seconds: 1 nanos: 123456000 }
        """#
        let bytes = [UInt8](try protoc(["-I", Self.wellKnownIncludes, "--encode=wkt.v1.Everything", "wkt.proto"], input: text))
        XCTAssertEqual(json(try schema.decode(bytes, message: "wkt.v1.Everything")),
                       #"{"at":"2024-12-05T04:00:00.123Z","whole":"0001-01-01T00:00:00Z","took":"1.500s","back":"-3.000000250s","#
                       + #""big":"-9007199254740993","label":"hé","flag":true,"raw":"AQID","ratio":0.5,"count":7,"zero":0,"#
                       + #""meta":{"a":1.5,"b":["x",null,false],"c":{"d":"e"}},"anything":"text","list":[2.0,{}],"nothing":{},"#
                       + #""mask":"user.displayName,photo","packed":{"@type":"type.googleapis.com/wkt.v1.Inner","name":"n","size":"5"},"#
                       + #""packedTime":{"@type":"type.googleapis.com/google.protobuf.Timestamp","value":"1970-01-01T00:00:00.000001Z"},"#
                       + #""times":["1970-01-02T00:00:00Z","2000-02-29T00:00:00.000000005Z"],"micros":"1970-01-01T00:00:01.123456Z"}"#)
        // A packed type the set does not have keeps its bytes; out-of-range times stay as decoded.
        XCTAssertEqual(ProtobufSchema.timestamp(seconds: 253_402_300_800, nanos: 0), nil)
        XCTAssertEqual(ProtobufSchema.timestamp(seconds: -1, nanos: 999_000_000), "1969-12-31T23:59:59.999Z")
        XCTAssertEqual(ProtobufSchema.duration(seconds: 0, nanos: -500_000_000), "-0.500s")
        XCTAssertNil(ProtobufSchema.duration(seconds: 1, nanos: -1), "signs disagree")
        let unknownAny: [UInt8] = [0x8A, 0x01, 0x0A, 0x0A, 0x05] + Array("t/x.Y".utf8) + [0x12, 0x01, 0x07]
        XCTAssertEqual(json(try schema.decode(unknownAny, message: "wkt.v1.Everything")), #"{"packed":{"@type":"t/x.Y","value":"Bw=="}}"#)
    }

    func testMethodsUnknownFieldsAndEnumNumbers() throws {
        let schema = try schema()
        XCTAssertTrue(schema.method(path: "/shop.v1.Shop/GetItem")! == ("shop.v1.GetItemRequest", "shop.v1.Item"))
        XCTAssertNil(schema.method(path: "/shop.v1.Shop/Other"))
        XCTAssertTrue(schema.hasMessage("shop.v1.Item"))
        XCTAssertFalse(schema.hasMessage("Item"))
        // Field 99 is not in the schema (left out); color 7 is no value of Color (a number).
        let bytes: [UInt8] = [0x0A, 0x01, 0x78, 0xF8, 0x06, 0x01, 0x20, 0x07]
        XCTAssertEqual(json(try schema.decode(bytes, message: "shop.v1.Item")), #"{"itemId":"x","color":7}"#)
        XCTAssertThrowsError(try schema.decode([0x12, 0x01, 0x41], message: "shop.v1.Item"), "a string where an int64 is declared")
        XCTAssertThrowsError(try schema.decode([], message: "shop.v1.Nothing"))
        XCTAssertThrowsError(try ProtobufSchema(descriptorSet: [0x0A, 0x05, 0x01]))
    }
}
