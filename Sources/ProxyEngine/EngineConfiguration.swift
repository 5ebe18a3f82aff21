import HTTP1

/// Every limit and timeout the engine enforces, named after its config key
/// (see README). Times are seconds.
public struct EngineConfiguration: Sendable, Equatable {
    /// `listen`: addresses to accept clients on.
    public var listen: [String] = ["127.0.0.1:8080"]
    /// What each `listen` entry speaks, by index; an entry without one is `forward`.
    public var listenerModes: [ListenerMode] = []
    /// Listening sockets passed by systemd (`LISTEN_FDS`); when present, `listen` is not bound.
    public var inheritedListeners: [Int32] = []
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
    /// `capture.websocketMessages`: after a 101, copy each direction's bytes for the log to
    /// parse into message records; false relays them unread (the connection record stays).
    public var captureWebSocketMessages: Bool = true
    /// `log.loopNice`: nice steps the event loop threads take below the process's other
    /// threads once decoding falls behind (`ProxyEngine.lowerLoopPriority`), so that a
    /// saturated CPU goes first to decoding and writing the exchanges already accepted
    /// (Linux keeps a nice value per thread). 0 leaves them equal.
    public var loopNice: Int = 0
    /// `limits.highWaterBytes`: output buffered for a slow reader before the other side stops
    /// being read (backpressure).
    public var highWaterBytes: Int = 256 * 1024
    /// `upstream.maxIdlePerOrigin`: idle keep-alive connections kept per origin and loop, so one
    /// busy origin cannot hold every descriptor; 0 turns pooling off.
    public var maxIdlePerOrigin: Int = 64
    /// `upstream.maxConcurrentStreams`: exchanges one HTTP/2 origin connection carries at
    /// once (the origin's own SETTINGS_MAX_CONCURRENT_STREAMS bounds it too); past it, a new
    /// connection is opened.
    public var upstreamMaxConcurrentStreams: Int = 100

    /// `limits.http2MaxConcurrentStreams`: streams one HTTP/2 client may have open at once
    /// (SETTINGS_MAX_CONCURRENT_STREAMS); more are refused with REFUSED_STREAM.
    public var http2MaxConcurrentStreams: Int = 100
    /// `limits.http2ResetBurst` and `limits.http2ResetsPerSecond`: RST_STREAM frames an
    /// HTTP/2 client may send at once and per second after; past them (rapid reset) its
    /// connection is closed with GOAWAY ENHANCE_YOUR_CALM.
    public var http2ResetBurst: Int = 1000
    public var http2ResetsPerSecond: Int = 33
    /// `limits.http2SettingsPerSecond`: SETTINGS frames an HTTP/2 client may send per
    /// second (and at once); past it the connection is closed as a flood.
    public var http2SettingsPerSecond: Int = 100
    /// `limits.http2MaxContinuations`: CONTINUATION frames one header block may take;
    /// past it the connection is closed as a flood.
    public var http2MaxContinuations: Int = 8

    /// Bytes one read may take from a socket (libevent's default is 16 KiB). Larger
    /// reads mean fewer syscalls per streamed megabyte.
    static let maxSingleRead = 256 * 1024

    public init() {}

    /// The mode of `listen[index]`.
    public func mode(ofListener index: Int) -> ListenerMode {
        index < listenerModes.count ? listenerModes[index] : .forward
    }
}
