import Synchronization

/// Which side sent a WebSocket message: the record's `direction`.
public enum WebSocketDirection: String, Sendable {
    case client, server
}

/// One upgraded connection whose frames the log parses: shared by every piece the engine
/// hands over for it, so that the log's workers, whichever takes a piece, find the same
/// parsing state and handle the pieces in `sequence` order.
public final class WebSocketCapture: Sendable {
    /// The upgrade exchange (its request and 101 answer): rules match its host and path,
    /// and its `Sec-WebSocket-Extensions` says what was negotiated.
    public let upgrade: CapturedExchange
    /// The log's parsing state for this connection (this module knows no parser: the log
    /// keeps its own type here), locked while a worker handles a piece.
    public let state = Mutex<AnyObject?>(nil)
    private let parsing = Atomic<Bool>(true)
    /// Pieces the log refused (its decode queue full), noted by the event loop, which must
    /// never wait for `state`: a worker holds that while it parses and inflates a piece. The
    /// worker that next holds `state` takes them over (`takeRefused`).
    private let refused = Mutex<[UInt64]>([])

    public init(upgrade: CapturedExchange) {
        self.upgrade = upgrade
    }

    /// False once the log stopped parsing (a malformed frame, lost bytes): the engine then
    /// stops copying bytes for it and hands over only the end.
    public var isParsing: Bool { parsing.load(ordering: .relaxed) }
    public func stopParsing() { parsing.store(false, ordering: .relaxed) }

    /// The piece `sequence` was not queued: parsing stops at once (the engine copies no
    /// more bytes for it), and the log learns which piece it lost when it next holds `state`.
    public func noteRefused(_ sequence: UInt64) {
        refused.withLock { $0.append(sequence) }
        stopParsing()
    }

    /// The refused pieces noted since the last call.
    public func takeRefused() -> [UInt64] {
        refused.withLock { noted in
            defer { noted.removeAll() }
            return noted
        }
    }
}

/// A piece of an upgraded connection, in the order the engine saw it (`sequence` counts
/// from 0 per connection): bytes one side sent, or the end with the connection's record.
public struct CapturedWebSocketPiece: Sendable {
    public enum Content: Sendable {
        /// A copy of bytes relayed from `direction` (the original went on unchanged), read at `time`.
        case bytes(WebSocketDirection, [UInt8], time: Double)
        /// The connection closed: its `websocket` record.
        case end(CapturedTunnel)
    }

    public var capture: WebSocketCapture
    public var sequence: UInt64
    public var content: Content

    public init(capture: WebSocketCapture, sequence: UInt64, content: Content) {
        self.capture = capture; self.sequence = sequence; self.content = content
    }
}
