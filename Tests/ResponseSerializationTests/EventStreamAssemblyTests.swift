import Foundation
import XCTest
@testable import ResponseSerialization

final class EventStreamAssemblyTests: XCTestCase {
    private static let resources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Resources")

    private func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: Self.resources.appendingPathComponent(name))
    }

    private func value(_ body: Data, assemble: String?, maxEvents: Int? = nil) throws -> JSON {
        let pointer = try assemble.map { try JSONPointer($0) }
        return try DataResponseSerializer<JSON>.eventStream(assemble: pointer, maxEvents: maxEvents)
            .serializeResponse(getRequest(), httpResponse(200), body, nil).get()
    }

    func testOpenAIChatCompletionChunksAreAssembled() throws {
        let stream = try fixture("openai-chat-stream.txt")
        let value = try value(stream, assemble: "/choices/0/delta/content")
        XCTAssertEqual(value.value(at: try JSONPointer("/assembled")), .string("Hello, world! ☃ \"quoted\"\n"))
        XCTAssertEqual(value.value(at: try JSONPointer("/eventCount")), .number("6"))
        // Every event is still there, the closing [DONE] too.
        guard case .array(let events)? = value.value(at: try JSONPointer("/events")) else { return XCTFail("\(value)") }
        XCTAssertEqual(events, EventStream.parse(stream).map(\.json))
        XCTAssertEqual(events.last?.value(at: try JSONPointer("/data")), .string("[DONE]"))
        guard case .object(let members) = value else { return XCTFail("\(value)") }
        XCTAssertEqual(members.map(\.key), ["assembled", "eventCount", "events"])
    }

    func testAnthropicMessageDeltasAreAssembled() throws {
        let value = try value(try fixture("anthropic-messages-stream.txt"), assemble: "/delta/text")
        // message_start, ping, message_delta (a delta without text) add nothing.
        XCTAssertEqual(value.value(at: try JSONPointer("/assembled")), .string("Hello, world! ☃"))
        XCTAssertEqual(value.value(at: try JSONPointer("/eventCount")), .number("9"))
        XCTAssertEqual(value.value(at: try JSONPointer("/events/3/event")), .string("content_block_delta"))
    }

    func testMaxEventsKeepsTheFirstEventsButAssemblesThemAll() throws {
        let stream = try fixture("anthropic-messages-stream.txt")
        let value = try value(stream, assemble: "/delta/text", maxEvents: 2)
        XCTAssertEqual(value.value(at: try JSONPointer("/assembled")), .string("Hello, world! ☃"))
        XCTAssertEqual(value.value(at: try JSONPointer("/eventCount")), .number("9"))
        XCTAssertEqual(value.value(at: try JSONPointer("/events")), .array(Array(EventStream.parse(stream).map(\.json).prefix(2))))

        // maxEvents alone: the count and the events, no assembled text.
        let bounded = try self.value(stream, assemble: nil, maxEvents: 0)
        XCTAssertEqual(bounded, .object([JSON.Member("eventCount", .number("9")), JSON.Member("events", .array([]))]))
        // Above the number of events: all of them.
        XCTAssertEqual(try self.value(stream, assemble: nil, maxEvents: 100).value(at: try JSONPointer("/events")),
                       .array(EventStream.parse(stream).map(\.json)))
    }

    func testWithoutOptionsTheValueIsTheArrayOfEvents() throws {
        let stream = try fixture("openai-chat-stream.txt")
        XCTAssertEqual(try value(stream, assemble: nil), .array(EventStream.parse(stream).map(\.json)))
        XCTAssertEqual(try DataResponseSerializer<JSON>.eventStream().serializeResponse(getRequest(), httpResponse(204), Data(), nil).get(),
                       .array([]))
    }

    func testPiecesThatAreNotStringsOrNotJSONAddNothing() throws {
        let stream = bytes("data: {\"t\":\"a\"}\n\ndata: {\"t\":5}\n\ndata: {\"t\":null}\n\ndata: not json\n\n"
                           + "data: [\"t\"]\n\ndata: {\"t\":\"b\"\ndata: }\n\ndata: {\"u\":\"x\"}\n\ndata: {\"t\":\"c\"} trailing\n\n")
        // The sixth event's data is two lines that together are `{"t":"b"\n}`.
        XCTAssertEqual(try value(stream, assemble: "/t").value(at: try JSONPointer("/assembled")), .string("ab"))
        XCTAssertEqual(try value(stream, assemble: "").value(at: try JSONPointer("/assembled")), .string(""))
        XCTAssertEqual(try value(bytes("data: \"whole\"\n\n"), assemble: "").value(at: try JSONPointer("/assembled")), .string(""))
    }

    func testAnEmptyAllowedResponseHasTheObjectShape() throws {
        let empty = try DataResponseSerializer<JSON>.eventStream(assemble: try JSONPointer("/t"))
            .serializeResponse(getRequest("HEAD"), httpResponse(200), Data(), nil).get()
        XCTAssertEqual(empty, .object([JSON.Member("assembled", .string("")), JSON.Member("eventCount", .number("0")),
                                       JSON.Member("events", .array([]))]))
    }
}
