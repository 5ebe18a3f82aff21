import Foundation
import HTTP1

/// One dispatched server-sent event.
public struct ServerSentEvent: Sendable, Equatable {
    /// The last event ID in effect when the event was dispatched (nil when none was ever set or it was reset).
    public var id: String?
    public var event: String
    public var data: String
    /// A `retry` field (milliseconds) received since the previous dispatch.
    public var retry: Int?

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

public enum EventStream {
    /// Parses a `text/event-stream` body by the WHATWG HTML "event stream
    /// interpretation": UTF-8 (one leading BOM dropped), lines end at CRLF, LF
    /// or CR, `:` lines are comments, a blank line dispatches, an event with no
    /// data is not dispatched, and an event not closed by a blank line before
    /// the end of the stream is discarded.
    public static func parse(_ data: Data) -> [ServerSentEvent] {
        var text = String(decoding: data, as: UTF8.self)
        if text.unicodeScalars.first == "\u{FEFF}" { text.unicodeScalars.removeFirst() }

        var events: [ServerSentEvent] = []
        var dataBuffer = ""
        var hasData = false
        var eventType = ""
        var lastEventID = ""
        var pendingRetry: Int?

        func process(line: Substring.UnicodeScalarView) {
            if line.isEmpty {
                if hasData {
                    events.append(ServerSentEvent(id: lastEventID.isEmpty ? nil : lastEventID,
                                                  event: eventType.isEmpty ? "message" : eventType,
                                                  data: dataBuffer, retry: pendingRetry))
                    pendingRetry = nil
                }
                dataBuffer = ""; hasData = false; eventType = ""
                return
            }
            if line.first == ":" { return }
            let field: String
            var value: Substring.UnicodeScalarView
            if let colon = line.firstIndex(of: ":") {
                field = String(String.UnicodeScalarView(line[line.startIndex..<colon]))
                value = line[line.index(after: colon)...]
                if value.first == " " { value.removeFirst() }
            } else {
                field = String(String.UnicodeScalarView(line))
                value = Substring.UnicodeScalarView()
            }
            let valueText = String(String.UnicodeScalarView(value))
            switch field {
            case "event":
                eventType = valueText
            case "data":
                if hasData { dataBuffer += "\n" }
                dataBuffer += valueText
                hasData = true
            case "id":
                if !valueText.unicodeScalars.contains("\u{0}") { lastEventID = valueText }
            case "retry":
                if !valueText.isEmpty, valueText.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }),
                   let milliseconds = Int(valueText) {
                    pendingRetry = milliseconds
                }
            default:
                break
            }
        }

        let scalars = Substring(text).unicodeScalars
        var lineStart = scalars.startIndex
        var i = scalars.startIndex
        while i < scalars.endIndex {
            let c = scalars[i]
            if c == "\n" || c == "\r" {
                process(line: scalars[lineStart..<i])
                var next = scalars.index(after: i)
                if c == "\r", next < scalars.endIndex, scalars[next] == "\n" { next = scalars.index(after: next) }
                i = next
                lineStart = next
            } else {
                i = scalars.index(after: i)
            }
        }
        // Whatever follows the last line end is an unfinished line of an unfinished event: dropped.
        return events
    }
}

extension DataResponseSerializerProtocol where Self == DataResponseSerializer<JSON> {
    /// `text/event-stream` → a JSON array of events (`ServerSentEvent.json`).
    /// Nil data fails with `inputDataNil`; an empty body is an empty array.
    /// Refuses a truncated body, whose last event would be cut.
    public static func eventStream(emptyResponseCodes: Set<Int> = EmptyResponsePolicy.defaultCodes,
                                   emptyRequestMethods: Set<String> = EmptyResponsePolicy.defaultMethods) -> DataResponseSerializer<JSON> {
        let policy = EmptyResponsePolicy(codes: emptyResponseCodes, methods: emptyRequestMethods)
        return DataResponseSerializer { request, response, data, error in
            if let error { return .failure(error) }
            if policy.returnsEmptyValue(request: request, response: response, data: data) { return .success(.array([])) }
            guard let data else { return .failure(serializationFailure(.inputDataNil)) }
            return .success(.array(EventStream.parse(data).map(\.json)))
        }
    }
}
