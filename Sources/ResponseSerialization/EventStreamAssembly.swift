/// What the `eventStream` serializer's `assemble` and `maxEvents` options make of the events:
/// the text a streamed completion was sent in pieces, and a bound on the events kept.
///
/// With either option the serializer's value is an object instead of the array of events:
/// `{"assembled":"…","eventCount":N,"events":[…]}`, where
/// - `assembled` (only with `assemble`): for every event, in order, whose `data` is JSON and
///   holds a string at the pointer, that string, concatenated; other events (`[DONE]`,
///   `ping`, `message_start`, a number at the pointer) add nothing. It covers all events,
///   those `maxEvents` leaves out too.
/// - `eventCount`: how many events the stream dispatched.
/// - `events`: the first `maxEvents` of them (all without `maxEvents`), as without options.
///
/// OpenAI's chat completions stream pieces at `/choices/0/delta/content`, Anthropic's
/// messages stream at `/delta/text`.
public struct EventStreamAssembly: Sendable, Equatable {
    /// Where each event's string piece is; nil: nothing is assembled.
    public var pointer: JSONPointer?
    /// How many events the value keeps; nil: all.
    public var maxEvents: Int?

    /// - Parameters:
    ///   - pointer: Default nil (no `assembled` text).
    ///   - maxEvents: Default nil (every event kept).
    public init(pointer: JSONPointer? = nil, maxEvents: Int? = nil) {
        self.pointer = pointer; self.maxEvents = maxEvents
    }

    /// Whether the value is the plain array of events (neither option set).
    public var isPlain: Bool { pointer == nil && maxEvents == nil }

    /// The serializer's value for `events`.
    /// - Parameter events: Every event the stream dispatched, in order.
    public func value(_ events: [ServerSentEvent]) -> JSON {
        let kept = maxEvents.map { events.prefix($0) } ?? events[...]
        if isPlain { return .array(kept.map(\.json)) }
        var members: [JSON.Member] = []
        if let pointer { members.append(JSON.Member("assembled", .string(EventStreamAssembly.assemble(events, at: pointer)))) }
        members.append(JSON.Member("eventCount", .number(String(events.count))))
        members.append(JSON.Member("events", .array(kept.map(\.json))))
        return .object(members)
    }

    /// The strings at `pointer` in the events' JSON data, concatenated.
    /// - Parameters:
    ///   - events: The events, in order.
    ///   - pointer: Where in each event's data the piece is.
    public static func assemble(_ events: [ServerSentEvent], at pointer: JSONPointer) -> String {
        var text = ""
        for event in events {
            // Only an object or array holds a pointer's target; `[DONE]` and other text is skipped.
            guard let first = event.data.utf8.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }),
                  first == UInt8(ascii: "{") || first == UInt8(ascii: "["),
                  let parsed = try? JSONParser.parse(event.data, allowFragments: false) else { continue }
            if case .string(let piece)? = parsed.value(at: pointer) { text += piece }
        }
        return text
    }
}
