import Foundation
import HTTP1

/// One dispatched server-sent event.
public struct ServerSentEvent: Sendable, Equatable {
    /// The last event ID in effect when the event was dispatched (nil when none was ever set or it was reset).
    public var id: String?
    /// The `event` field in effect at dispatch; `message` when none was given.
    public var event: String
    /// The `data` lines joined with LF.
    public var data: String
    /// A `retry` field (milliseconds) received since the previous dispatch.
    public var retry: Int?

    /// - Parameters:
    ///   - id: Default nil (no event ID in effect).
    ///   - event: Default `message`, the type an event without `event:` has.
    ///   - data: The event's data.
    ///   - retry: Default nil (no `retry` field received).
    public init(id: String? = nil, event: String = "message", data: String, retry: Int? = nil) {
        self.id = id; self.event = event; self.data = data; self.retry = retry
    }

    /// `{"id"?, "event", "data", "retry"?}` in that order.
    public var json: JSON {
        var members: [JSON.Member] = []
        if let id { members.append(JSON.Member("id", .string(id))) }
        members.append(JSON.Member("event", .string(event)))
        members.append(JSON.Member("data", .string(data)))
        if let retry { members.append(JSON.Member("retry", .number(String(retry)))) }
        return .object(members)
    }
}

/// The `text/event-stream` format (WHATWG HTML, server-sent events).
public enum EventStream {
    /// Parses a `text/event-stream` body by the WHATWG HTML "event stream
    /// interpretation": UTF-8 (one leading BOM dropped), lines end at CRLF, LF
    /// or CR, `:` lines are comments, a blank line dispatches, an event with no
    /// data is not dispatched, and an event not closed by a blank line before
    /// the end of the stream is discarded.
    /// - Parameter data: The body, as received.
    public static func parse(_ data: Data) -> [ServerSentEvent] {
        // Works on UTF-8 bytes: CR, LF and ':' are ASCII and never occur inside a
        // multi-byte sequence, so lines and fields can be cut before decoding.
        data.withUnsafeBytes { (input: UnsafeRawBufferPointer) in
            var parser = EventStreamParser()
            var start = 0
            if input.count >= 3 && input[0] == 0xEF && input[1] == 0xBB && input[2] == 0xBF { start = 3 }
            var i = start
            while i < input.count {
                let c = input[i]
                if c == 0x0A || c == 0x0D {
                    parser.process(line: UnsafeRawBufferPointer(rebasing: input[start..<i]))
                    i += (c == 0x0D && i + 1 < input.count && input[i + 1] == 0x0A) ? 2 : 1
                    start = i
                } else {
                    i += 1
                }
            }
            // Whatever follows the last line end is an unfinished line of an unfinished event: dropped.
            return parser.events
        }
    }
}

private struct EventStreamParser {
    var events: [ServerSentEvent] = []
    var dataBuffer: [UInt8] = []
    var hasData = false
    var eventType = ""
    var lastEventID = ""
    var pendingRetry: Int?

    mutating func process(line: UnsafeRawBufferPointer) {
        if line.isEmpty {
            if hasData {
                events.append(ServerSentEvent(id: lastEventID.isEmpty ? nil : lastEventID,
                                              event: eventType.isEmpty ? "message" : eventType,
                                              data: String(decoding: dataBuffer, as: UTF8.self), retry: pendingRetry))
                pendingRetry = nil
            }
            dataBuffer.removeAll(keepingCapacity: true); hasData = false; eventType = ""
            return
        }
        if line[0] == UInt8(ascii: ":") { return }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let field = UnsafeRawBufferPointer(rebasing: line[0..<(colon ?? line.count)])
        var valueStart = colon.map { $0 + 1 } ?? line.count
        if valueStart < line.count && line[valueStart] == 0x20 { valueStart += 1 }
        let value = UnsafeRawBufferPointer(rebasing: line[valueStart..<line.count])

        if field.elementsEqual("data".utf8) {
            if hasData { dataBuffer.append(0x0A) }
            dataBuffer.append(contentsOf: value)
            hasData = true
        } else if field.elementsEqual("event".utf8) {
            eventType = String(decoding: value, as: UTF8.self)
        } else if field.elementsEqual("id".utf8) {
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        } else if field.elementsEqual("retry".utf8) {
            if !value.isEmpty, value.count <= 18, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
                pendingRetry = value.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            }
        }
    }
}

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// `text/event-stream` → a JSON array of events (`ServerSentEvent.json`), or with
    /// `assemble` or `maxEvents` the object `EventStreamAssembly` describes.
    /// Nil data fails with `inputDataNil`; an empty body is an empty array.
    /// Refuses a truncated body, whose last event would be cut.
    /// - Parameters:
    ///   - assemble: Where each event's JSON data holds a piece of the `assembled` text;
    ///     default nil (none).
    ///   - maxEvents: How many events the value keeps; default nil (all).
    ///   - emptyResponseCodes: Statuses whose empty body is an empty array, not a failure;
    ///     default 204, 205 and 304.
    ///   - emptyRequestMethods: Request methods whose empty response is an empty array;
    ///     default HEAD.
    public static func eventStream(assemble: JSONPointer? = nil, maxEvents: Int? = nil,
                                   emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                                   emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let assembly = EventStreamAssembly(pointer: assemble, maxEvents: maxEvents)
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            policy.result(request, response, data, error, emptyValue: assembly.value([]), requiresBytes: false) { data in
                .success(assembly.value(EventStream.parse(data)))
            }
        }
    }
}
