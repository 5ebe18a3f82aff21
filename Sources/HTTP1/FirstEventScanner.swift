/// Finds where the first event of a `text/event-stream` body ends (the blank line that
/// dispatches a block holding a `data` field, per the WHATWG event-stream rules), over the
/// body's bytes as they arrive, so the engine can stamp the time of the first event: the
/// time to first token streaming APIs are measured by. Pure; a few bytes of state.
/// Lines end with LF, CR or CRLF; a block of comments only (`: keep-alive`) or without
/// `data` dispatches nothing, so it does not count.
public struct FirstEventScanner: Sendable {
    /// Bytes of the body looked at so far.
    public private(set) var scanned = 0
    public private(set) var found = false
    private var atLineStart = true
    private var lastWasCR = false
    private var blockHasData = false
    /// The current line's first bytes, to tell a `data` field (`data` or `data:…`).
    private var fieldPrefix: UInt32 = 0
    private var fieldLength = 0

    public init() {}

    /// Whether a response with these headers is a plain event stream, whose body can be
    /// scanned as it comes: `Content-Type` `text/event-stream` (any case, parameters allowed)
    /// and no `Content-Encoding` but `identity`. Runs on the event loop for every response,
    /// so it compares bytes and allocates nothing.
    public static func applies(to headers: HTTPHeaders) -> Bool {
        let isEventStream = headers.withFirstValue(name: "Content-Type") { value -> Bool in
            guard let value else { return false }
            return mediaType(value, is: "text/event-stream")
        }
        guard isEventStream else { return false }
        return headers.withFirstValue(name: "Content-Encoding") { value -> Bool in
            guard let value else { return true }
            return mediaType(value, is: "identity")
        }
    }

    /// `value` is `token` (ASCII case-insensitive) around optional whitespace, optionally
    /// followed by `;` and parameters.
    static func mediaType(_ value: UnsafeBufferPointer<UInt8>, is token: StaticString) -> Bool {
        var i = 0
        while i < value.count, value[i] == 0x20 || value[i] == 0x09 { i += 1 }
        let t = UnsafeBufferPointer(start: token.utf8Start, count: token.utf8CodeUnitCount)
        guard value.count - i >= t.count else { return false }
        for k in 0..<t.count where asciiLower(value[i + k]) != t[k] { return false }
        i += t.count
        while i < value.count, value[i] == 0x20 || value[i] == 0x09 { i += 1 }
        return i == value.count || value[i] == 0x3B
    }

    /// Scans `bytes`, the body's next bytes; true once the first event has ended.
    public mutating func scan(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard !found else { return true }
        for b in bytes {
            scanned += 1
            if b == 0x0A && lastWasCR { lastWasCR = false; continue }  // the LF of a CRLF
            lastWasCR = b == 0x0D
            if b == 0x0A || b == 0x0D {
                if atLineStart {
                    if blockHasData { found = true; return true }
                    blockHasData = false
                } else {
                    if fieldLength >= 4 && fieldPrefix == Self.data && (fieldLength == 4 || sawColonAfterData) {
                        blockHasData = true
                    }
                    atLineStart = true
                }
                fieldPrefix = 0; fieldLength = 0; sawColonAfterData = false
                continue
            }
            atLineStart = false
            if fieldLength < 4 {
                fieldPrefix = fieldPrefix << 8 | UInt32(b)
            } else if fieldLength == 4 {
                sawColonAfterData = b == UInt8(ascii: ":")
            }
            fieldLength += 1
        }
        return false
    }

    /// After `data`, the fifth byte of the line is the colon (`data:…`), not more of a name.
    private var sawColonAfterData = false
    private static let data: UInt32 = 0x6461_7461  // "data"
}
