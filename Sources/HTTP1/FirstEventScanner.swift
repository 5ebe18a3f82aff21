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
