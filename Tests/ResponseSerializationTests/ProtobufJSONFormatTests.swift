import Foundation
import XCTest
@testable import ResponseSerialization

/// Edge values of the canonical JSON mapping (timestamps at years 1 and 9999, negative
/// durations, Any of a well-known type, NaN and infinities, a json_name override) against
/// protoc, which encodes them from text format (Resources/protobuf/wkt_edges.proto), and
/// against protobuf's own Python `json_format.MessageToDict` run live on the same bytes.
final class ProtobufJSONFormatTests: XCTestCase {
    private static let event = #"""
    at { seconds: 1700000000 nanos: 120000000 }
    stamps { seconds: 0 } stamps { seconds: -62135596800 nanos: 1000 }
    stamps { seconds: 253402300799 nanos: 999999999 } stamps { seconds: -1 nanos: 500000 }
    waits { seconds: 1 nanos: 500000000 } waits { seconds: -3 nanos: -100 } waits { }
    waits { nanos: -250000000 } waits { seconds: 315576000000 nanos: 1000 }
    count { value: -5 } total { value: 9007199254740993 } unsigned_total { } label { value: "hi" }
    flag { value: true } raw { value: "\001\002\003" } score { value: 2.5 } ratio { value: 0.5 } small { value: 7 }
    attributes {
      fields { key: "a" value { number_value: 1 } }
      fields { key: "b" value { list_value { values { string_value: "x" } values { null_value: NULL_VALUE } values { bool_value: false } } } }
      fields { key: "c" value { struct_value { fields { key: "d" value { null_value: NULL_VALUE } } } } }
    }
    anything { string_value: "s" }
    items { values { number_value: 0 } values { struct_value { } } }
    empty { }
    mask { paths: "user.display_name" paths: "photo_url" }
    details { type_url: "type.googleapis.com/wktedge.v1.Note" value: "\n\003hey\020\001" }
    details { type_url: "type.googleapis.com/google.protobuf.Duration" value: "\010\002" }
    level: 5 extreme: -inf floats: [nan, inf, 1.25] id: -9 stamp: 18446744073709551615
    """#

    private func encode(_ text: String) throws -> [UInt8] {
        [UInt8](try ProtobufSchemaTests.protoc(["-I", ProtobufSchemaTests.wellKnownIncludes, "--encode=wktedge.v1.Event", "wkt_edges.proto"], input: text))
    }

    func testWellKnownTypesInTheirJSONForms() throws {
        let schema = try ProtobufSchema(descriptorSet: [UInt8](try ProtobufSchemaTests.descriptorSet("wkt_edges.proto")))
        let decoded = ProtobufSchemaTests.json(try schema.decode(try encode(Self.event), message: "wktedge.v1.Event"))
        XCTAssertEqual(decoded, #"{"at":"2023-11-14T22:13:20.120Z","#
            + #""stamps":["1970-01-01T00:00:00Z","0001-01-01T00:00:00.000001Z","9999-12-31T23:59:59.999999999Z","1969-12-31T23:59:59.000500Z"],"#
            + #""waits":["1.500s","-3.000000100s","0s","-0.250s","315576000000.000001s"],"#
            + #""count":-5,"total":"9007199254740993","unsignedTotal":"0","label":"hi","flag":true,"raw":"AQID","#
            + #""score":2.5,"ratio":0.5,"small":7,"attributes":{"a":1.0,"b":["x",null,false],"c":{"d":null}},"#
            + #""anything":"s","items":[0.0,{}],"empty":{},"mask":"user.displayName,photoUrl","#
            + #""details":[{"@type":"type.googleapis.com/wktedge.v1.Note","text":"hey","level":"LEVEL_HIGH"},"#
            + #"{"@type":"type.googleapis.com/google.protobuf.Duration","value":"2s"}],"#
            + #""level":5,"extreme":"-Infinity","floats":["NaN","Infinity",1.25],"eventID":"-9","stamp":"18446744073709551615"}"#)
    }

    /// The same bytes through protobuf's Python runtime (Debian's python3-protobuf): equal as
    /// JSON values (Python orders members by field number, numbers may print as 1 or 1.0).
    func testAgreesWithPythonJSONFormat() throws {
        let python = "/usr/bin/python3"
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: python)
        probe.arguments = ["-c", "import google.protobuf.json_format"]
        probe.standardError = Pipe()
        try probe.run()
        probe.waitUntilExit()
        guard probe.terminationStatus == 0 else { throw XCTSkip("python3-protobuf is not installed (make test-deps installs it)") }

        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-wkt-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let setData = try ProtobufSchemaTests.descriptorSet("wkt_edges.proto")
        let bytes = try encode(Self.event)
        try setData.write(to: dir.appendingPathComponent("set.pb"))
        try Data(bytes).write(to: dir.appendingPathComponent("event.bin"))
        let script = """
        import sys, json
        from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
        fds = descriptor_pb2.FileDescriptorSet.FromString(open(sys.argv[1], 'rb').read())
        pool = descriptor_pool.DescriptorPool()
        for f in fds.file: pool.Add(f)
        d = pool.FindMessageTypeByName('wktedge.v1.Event')
        cls = message_factory.GetMessageClass(d) if hasattr(message_factory, 'GetMessageClass') else message_factory.MessageFactory(pool).GetPrototype(d)
        m = cls.FromString(open(sys.argv[2], 'rb').read())
        print(json.dumps(json_format.MessageToDict(m, descriptor_pool=pool)))
        """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = ["-c", script, dir.appendingPathComponent("set.pb").path, dir.appendingPathComponent("event.bin").path]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let expected = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))

        let schema = try ProtobufSchema(descriptorSet: [UInt8](setData))
        let ours = Data(ProtobufSchemaTests.json(try schema.decode(bytes, message: "wktedge.v1.Event")).utf8)
        let a = try JSONSerialization.jsonObject(with: ours) as? NSDictionary
        let b = try JSONSerialization.jsonObject(with: expected) as? NSDictionary
        XCTAssertNotNil(a)
        XCTAssertEqual(a, b)
    }

    /// An Any whose type the set lacks keeps its payload as base64 (the Python runtime
    /// refuses it); a Timestamp outside years 1..9999 has no RFC 3339 form and stays the
    /// ordinary message it is (the Python runtime refuses it too).
    func testUnknownAnyAndTimestampOutOfRange() throws {
        let schema = try ProtobufSchema(descriptorSet: [UInt8](try ProtobufSchemaTests.descriptorSet("wkt_edges.proto")))
        let unknown = try encode(#"details { type_url: "type.example.com/other.Unknown" value: "\010\001" }"#)
        XCTAssertEqual(ProtobufSchemaTests.json(try schema.decode(unknown, message: "wktedge.v1.Event")),
                       #"{"details":[{"@type":"type.example.com/other.Unknown","value":"CAE="}]}"#)
        XCTAssertEqual(ProtobufSchemaTests.json(try schema.decode(try encode("at { seconds: 253402300800 }"), message: "wktedge.v1.Event")),
                       #"{"at":{"seconds":"253402300800"}}"#)
        XCTAssertEqual(ProtobufSchemaTests.json(try schema.decode(try encode("at { nanos: -1 }"), message: "wktedge.v1.Event")),
                       #"{"at":{"nanos":-1}}"#)
        XCTAssertEqual(ProtobufSchema.timestamp(seconds: 951_782_400, nanos: 0), "2000-02-29T00:00:00Z")
        XCTAssertEqual(ProtobufSchema.timestamp(seconds: -2_203_977_600, nanos: 0), "1900-02-28T00:00:00Z")
        XCTAssertEqual(ProtobufSchema.timestamp(seconds: -2_203_891_200, nanos: 0), "1900-03-01T00:00:00Z")
    }
}
