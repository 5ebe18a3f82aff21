import Foundation
import XCTest
@testable import ResponseSerialization

final class EventStreamSerializerTests: XCTestCase {
    private func events(_ text: String) throws -> JSON {
        try DataResponseSerializer<JSON>.eventStream().serializeResponse(getRequest(), httpResponse(200), bytes(text), nil).get()
    }

    func testEventsWithIdTypeMultilineDataAndRetry() throws {
        let stream = ": comment\nretry: 3000\nid: 1\nevent: update\ndata: first\ndata:second\n\ndata: plain\n\n"
        XCTAssertEqual(try events(stream), .array([
            .object([JSON.Member("id", .string("1")), JSON.Member("event", .string("update")),
                     JSON.Member("data", .string("first\nsecond")), JSON.Member("retry", .number("3000"))]),
            .object([JSON.Member("id", .string("1")), JSON.Member("event", .string("message")),
                     JSON.Member("data", .string("plain"))]),
        ]))
    }

    func testCRLFAndCRLineEnds() throws {
        let expected: JSON = .array([
            .object([JSON.Member("event", .string("message")), JSON.Member("data", .string("a"))]),
            .object([JSON.Member("event", .string("message")), JSON.Member("data", .string("b"))]),
        ])
        XCTAssertEqual(try events("data: a\r\n\r\ndata: b\r\n\r\n"), expected)
        XCTAssertEqual(try events("data: a\r\rdata: b\r\r"), expected)
    }

    func testEventWithoutDataIsNotDispatchedAndUnfinishedEventIsDropped() throws {
        XCTAssertEqual(try events("event: ping\n\nid: 7\n\ndata: x\n\ndata: unfinished\n"), .array([
            .object([JSON.Member("id", .string("7")), JSON.Member("event", .string("message")), JSON.Member("data", .string("x"))]),
        ]))
    }

    func testFieldRules() throws {
        // Only one space after the colon is removed; a field with no colon has an empty value;
        // a non-numeric retry and unknown fields are ignored; an empty id resets it.
        let stream = "id: 5\n\ndata:  two spaces\nretry: 10s\nfoo: bar\ndata\n\nid\ndata: z\n\n"
        XCTAssertEqual(try events(stream), .array([
            .object([JSON.Member("id", .string("5")), JSON.Member("event", .string("message")),
                     JSON.Member("data", .string(" two spaces\n"))]),
            .object([JSON.Member("event", .string("message")), JSON.Member("data", .string("z"))]),
        ]))
    }

    func testLeadingBOMIsDropped() throws {
        XCTAssertEqual(try events("\u{FEFF}data: a\n\n"), .array([
            .object([JSON.Member("event", .string("message")), JSON.Member("data", .string("a"))]),
        ]))
    }

    func testNilFailsAndEmptyIsEmptyArray() {
        let serializer = DataResponseSerializer<JSON>.eventStream()
        XCTAssertEqual(try serializer.serializeResponse(getRequest(), httpResponse(200), Data(), nil).get(), .array([]))
        let result = serializer.serializeResponse(getRequest(), httpResponse(200), nil, nil)
        guard case .inputDataNil? = serializationReason(result) else { return XCTFail("\(result)") }
    }
}
