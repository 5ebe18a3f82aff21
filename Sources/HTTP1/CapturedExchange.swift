// What the proxy engine records of each exchange: plain values, so the
// serialization pool and the log can use them without touching sockets.

/// What the engine hands off for each finished exchange. Values only: safe to
/// move to the serialization pool.
public struct CapturedBody: Sendable, Equatable {
    /// The first `captureMaxBodyBytes` of the payload (chunk framing removed).
    public var bytes: [UInt8] = []
    /// The whole payload size seen on the wire.
    public var totalBytes: UInt64 = 0
    /// The transfer stopped before the body's framing said it was complete (a reset, a
    /// timeout, a client gone, shutdown): `bytes` may hold all that came, yet not all there is.
    public var cutShort = false
    /// A chunked body's trailer section, as received (nil when there was none).
    public var trailers: HTTPHeaders?
    /// What was kept is less than the whole body: the capture limit or a cut transfer.
    public var truncated: Bool { cutShort || UInt64(bytes.count) < totalBytes }
    public init(bytes: [UInt8] = [], totalBytes: UInt64 = 0, cutShort: Bool = false) {
        self.bytes = bytes; self.totalBytes = totalBytes; self.cutShort = cutShort
    }
}

/// Clock points of one exchange, seconds since 1970, all derived from one
/// monotonic reading so their differences are never negative.
public struct ExchangeClock: Sendable, Equatable {
    public var requestStart: Double = 0
    public var dnsDone: Double?
    public var connected: Double?
    /// The TLS handshake with the origin finished (intercepted HTTPS only).
    public var tlsDone: Double?
    public var requestSent: Double?
    public var firstResponseByte: Double?
    public var lastResponseByte: Double?
    public var connectStart: Double?
    /// The response is a `text/event-stream` (not content-encoded): the record's timeline
    /// carries `firstEventTime`.
    public var eventStream = false
    /// The first event of an event stream ended (`FirstEventScanner`), if within the capture.
    public var firstEvent: Double?
    public init() {}
}



public struct CapturedExchange: Sendable {
    // `clock` is declared first so that the synthesized memberwise initializer, which the
    // public one below delegates to, has a signature of its own: see that initializer.
    public var clock: ExchangeClock
    public var client: String
    /// The absolute URL (`http://host:port/path?q`).
    public var url: String
    /// The request head as the client sent it.
    public var request: HTTPRequestHead
    public var requestBody: CapturedBody
    /// The response head as the origin sent it (nil when none arrived).
    public var response: HTTPResponseHead?
    public var responseBody: CapturedBody
    public var error: TransportError?
    public var connectionReused: Bool
    public var upstreamAddress: String?
    /// What was spoken to the origin: "HTTP/1.1" or "HTTP/2"; nil when no upstream was used.
    public var upstreamHTTPVersion: String? = nil
    /// The parent proxy it went through (`ParentProxy.via`, never credentials); nil for direct.
    public var via: String?
    /// Offline replay answered the request with the response of this record (`replayedFrom`);
    /// nothing went to the network.
    public var replayedFrom: String? = nil
}

extension CapturedExchange {
    /// Built on the event loop for every logged exchange. It delegates to the synthesized
    /// memberwise initializer, which the optimizer builds in place: an initializer assigning
    /// the fields one by one (in the struct, inlinable or not) leaves the finished value
    /// copied out and the original destroyed, a retain and a release of each of its
    /// references on the loop.
    public init(client: String, url: String, request: HTTPRequestHead, requestBody: CapturedBody = CapturedBody(),
                response: HTTPResponseHead?, responseBody: CapturedBody = CapturedBody(), error: TransportError? = nil,
                clock: ExchangeClock, connectionReused: Bool = false, upstreamAddress: String? = nil,
                upstreamHTTPVersion: String? = nil, via: String? = nil) {
        self.init(clock: clock, client: client, url: url, request: request, requestBody: requestBody,
                  response: response, responseBody: responseBody, error: error,
                  connectionReused: connectionReused, upstreamAddress: upstreamAddress,
                  upstreamHTTPVersion: upstreamHTTPVersion, via: via)
    }
}

public struct CapturedTunnel: Sendable {
    public enum Kind: String, Sendable { case connect = "tunnel", websocket }
    public var kind: Kind
    public var client: String
    public var target: String
    /// The status answered to the client (200 for CONNECT, 101 for an upgrade).
    public var status: Int
    public var bytesFromClient: UInt64
    public var bytesFromUpstream: UInt64
    public var start: Double
    public var end: Double
    /// What ended the tunnel; the raw value is the record's `closedBy`. A reset counts as
    /// its side closing: the side that closed first is recorded, and the reset goes in `error`.
    public enum ClosedBy: String, Sendable {
        /// The client closed (or reset) first, or both directions finished cleanly.
        case client
        /// The upstream closed (or reset) first.
        case upstream
        /// Neither side sent a byte within `limits.tunnelIdleTimeout`.
        case timeout
        /// The proxy stopped.
        case shutdown
        /// The upstream never connected.
        case error
    }

    public var closedBy: ClosedBy
    public var error: TransportError?
    /// For websockets: the upgrade exchange.
    public var upgrade: CapturedExchange?
    /// The parent proxy the tunnel went through (never credentials); nil for direct.
    public var via: String?

    public init(kind: Kind, client: String, target: String, status: Int, bytesFromClient: UInt64, bytesFromUpstream: UInt64,
                start: Double, end: Double, closedBy: ClosedBy, error: TransportError? = nil, upgrade: CapturedExchange? = nil,
                via: String? = nil) {
        self.kind = kind; self.client = client; self.target = target; self.status = status
        self.bytesFromClient = bytesFromClient; self.bytesFromUpstream = bytesFromUpstream
        self.start = start; self.end = end; self.closedBy = closedBy; self.error = error; self.upgrade = upgrade
        self.via = via
    }
}

public enum CapturedEvent: Sendable {
    case http(CapturedExchange)
    case tunnel(CapturedTunnel)
    /// Bytes of an upgraded connection, or its end, for the log to parse into message records.
    case webSocket(CapturedWebSocketPiece)
}
