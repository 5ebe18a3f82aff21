import HTTP1

/// Every limit and timeout the engine enforces, named after its config key
/// (see README and ../shared/spec/interfaces.md). Times are seconds.
public struct EngineConfiguration: Sendable, Equatable {
    /// `listen`: addresses to accept clients on.
    public var listen: [String] = ["127.0.0.1:8080"]
    /// Event loops (threads); 0 = one per core.
    public var loops: Int = 0
    /// `access.allow`: client ranges that may use the proxy.
    public var allow: [AddressRange] = [AddressRange("127.0.0.1/8")!, AddressRange("::1/128")!]
    /// `limits.maxHeaderBytes`: a request head larger than this gets 431; a response head, 502.
    public var maxHeaderBytes: Int = 65536
    /// `limits.maxConnections`: clients beyond this are refused (closed at accept).
    public var maxConnections: Int = 4096
    /// `limits.clientIdleTimeout`: an idle keep-alive client, or one that has not sent a
    /// whole head within this time (slow headers), is dropped (408 when bytes were sent).
    public var clientIdleTimeout: Double = 60
    /// `limits.drainTimeout`: on SIGTERM, in-flight exchanges get this long to finish.
    public var drainTimeout: Double = 10
    /// `limits.tunnelIdleTimeout`: a CONNECT or WebSocket tunnel with no bytes either way is closed.
    public var tunnelIdleTimeout: Double = 300
    /// `upstream.connectTimeout`: DNS + TCP connect to the origin; past it, 504.
    public var connectTimeout: Double = 10
    /// `upstream.idleTimeout`: an unused pooled origin connection is closed after this.
    public var upstreamIdleTimeout: Double = 60
    /// `upstream.readTimeout`: the origin sends nothing for this long while an answer is due → 504
    /// (or the client's transfer is cut when the head was already forwarded).
    public var upstreamReadTimeout: Double = 60
    /// `capture.maxBodyBytes`: bytes of each body copied for decoding; the rest only streams.
    public var captureMaxBodyBytes: Int = 1_048_576
    /// `capture.requestBodies`: copy request bodies too.
    public var captureRequestBodies: Bool = true
    /// Output buffered for a slow reader before the other side stops being read (backpressure).
    public var highWaterBytes: Int = 256 * 1024

    public init() {}
}

/// What the engine hands off for each finished exchange. Values only: safe to
/// move to the serialization pool.
public struct CapturedBody: Sendable, Equatable {
    /// The first `captureMaxBodyBytes` of the payload (chunk framing removed).
    public var bytes: [UInt8] = []
    /// The whole payload size seen on the wire.
    public var totalBytes: UInt64 = 0
    public var truncated: Bool { UInt64(bytes.count) < totalBytes }
    public init(bytes: [UInt8] = [], totalBytes: UInt64 = 0) { self.bytes = bytes; self.totalBytes = totalBytes }
}

/// A transport failure, named as in the log record's `error` field.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String
    public init(_ code: String, _ message: String) { self.code = code; self.message = message }
    public var description: String { "\(code): \(message)" }
}

/// Clock points of one exchange, seconds since 1970, all derived from one
/// monotonic reading so their differences are never negative.
public struct ExchangeClock: Sendable, Equatable {
    public var requestStart: Double = 0
    public var dnsDone: Double?
    public var connected: Double?
    public var requestSent: Double?
    public var firstResponseByte: Double?
    public var lastResponseByte: Double?
    public var connectStart: Double?
    public init() {}
}



public struct CapturedExchange: Sendable {
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
    public var clock: ExchangeClock
    public var connectionReused: Bool
    public var upstreamAddress: String?
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
    /// "client", "upstream", "timeout", "shutdown" or "error".
    public var closedBy: String
    public var error: TransportError?
    /// For websockets: the upgrade exchange.
    public var upgrade: CapturedExchange?
}

public enum CapturedEvent: Sendable {
    case http(CapturedExchange)
    case tunnel(CapturedTunnel)
}

/// Receives finished exchanges on an event-loop thread: it must not block.
public protocol ExchangeSink: Sendable {
    func accept(_ event: CapturedEvent)
}
