import Foundation
import XCTest
@testable import ResponseSerialization

/// `ProtobufSchema` against protoc itself: a descriptor set and messages it encodes from
/// text format (Resources/protobuf/shop.proto), decoded into protobuf's canonical JSON.
final class ProtobufSchemaTests: XCTestCase {
    static let proto = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/protobuf/shop.proto")

    private func protoc(_ arguments: [String], input: String? = nil) throws -> Data {
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

    private func schema() throws -> ProtobufSchema {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-pb-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let set = dir.appendingPathComponent("shop.pb").path
        _ = try protoc(["--include_imports", "--descriptor_set_out=\(set)", "shop.proto"])
        return try ProtobufSchema(descriptorSet: [UInt8](try Data(contentsOf: URL(fileURLWithPath: set))))
    }

    private func json(_ value: JSON) -> String {
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
