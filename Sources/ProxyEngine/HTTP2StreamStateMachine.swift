/// The lifecycle of one HTTP/2 request stream as the proxy sees it, a pure value: the
/// request side (`headers` → `body` → `ended`), the response side (`none` → `started` →
/// `ended`), and whether the stream is still open. `HTTP2Stream` drives it.
///
/// Invariants: an exchange starts only once, for a stream whose head is whole; a response
/// is started at most once (so an error answer after a forwarded head becomes a reset);
/// once closed (by either side) nothing is sent on the stream again; a paused request
/// keeps its bytes counted against the client's window.
struct HTTP2StreamStateMachine: Equatable {
    enum Request: Equatable { case headers, body, ended }
    enum Response: Equatable { case none, started, ended }

    private(set) var request: Request = .headers
    private(set) var response: Response = .none
    private(set) var isOpen = true
    /// The exchange's upstream is slow: received bytes are not returned to the windows.
    private(set) var readingPaused = false
    /// The body is forwarded chunked (the client declared no Content-Length).
    var requestChunked = false

    var headersDone: Bool { request != .headers }
    var responseStarted: Bool { response != .none }
    var responseIsEnded: Bool { response == .ended }
    /// The answer is whole while the request body is still coming (the origin answered
    /// early, say 413): nothing will read the rest, so once the answer's last frame is out
    /// the stream is reset with NO_ERROR (RFC 9113 §8.1) rather than left with its window
    /// closed and the client waiting.
    var declinesRestOfRequest: Bool { isOpen && response == .ended && request != .ended }

    /// The request's head is whole: true when an exchange is to start (once, while open).
    mutating func headersComplete(endStream: Bool) -> Bool {
        guard isOpen, request == .headers else { return false }
        request = endStream ? .ended : .body
        return true
    }

    /// END_STREAM on the request: true when the body's end is news (chunked bodies then get
    /// their last chunk).
    mutating func requestEnded() -> Bool {
        guard request == .body else { return false }
        request = .ended
        return true
    }

    mutating func pauseReading() { readingPaused = true }
    mutating func resumeReading() { readingPaused = false }

    /// True when the response head may be sent now.
    mutating func startResponse() -> Bool {
        guard isOpen, response == .none else { return false }
        response = .started
        return true
    }

    /// The exchange's answer is whole (the data source reports its end once drained).
    mutating func responseEnded() {
        if response == .started { response = .ended }
    }

    /// The stream closed (nghttp2 reported it, the connection ended, or Tapwire resets it):
    /// true if it was open, so a reset is sent and an exchange in flight is failed only once.
    mutating func closed() -> Bool {
        defer { isOpen = false }
        return isOpen
    }
}
