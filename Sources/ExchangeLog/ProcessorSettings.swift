/// What the processor needs from the config.
public struct ProcessorSettings: Sendable {
    public static let defaultDecodeLimit = 8 * 1024 * 1024

    public var rules: [Rule]
    /// Header names whose values are logged as `"[redacted]"` (lower-cased).
    public var redactHeaders: Set<String>
    /// JSON member names whose values are logged as `"[redacted]"` at any depth (lower-cased).
    public var redactJSONKeys: Set<String>
    /// At most this many bytes are produced when undoing a Content-Encoding.
    public var decodeLimit: Int
    /// `capture.maxBodyBytes`: what a WebSocket message keeps of its payload (the engine
    /// cuts bodies itself; messages are reassembled here).
    public var messageKeepBytes: Int

    public init(rules: [Rule] = [], redactHeaders: Set<String> = [], redactJSONKeys: Set<String> = [],
                decodeLimit: Int = ProcessorSettings.defaultDecodeLimit, messageKeepBytes: Int = 1_048_576) {
        self.messageKeepBytes = messageKeepBytes
        self.rules = rules
        self.redactHeaders = Set(redactHeaders.map { $0.lowercased() })
        self.redactJSONKeys = Set(redactJSONKeys.map { $0.lowercased() })
        self.decodeLimit = decodeLimit
    }
}
