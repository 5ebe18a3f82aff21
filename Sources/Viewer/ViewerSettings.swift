/// The viewer's limits (config `viewer.*`, docs/configuration.md).
public struct ViewerSettings: Sendable, Equatable {
    /// `viewer.enabled`: whether `tapwire run` serves the viewer on its listen address.
    public var enabled = true
    /// `viewer.maxConnections`: connections served at once (each holds a thread; a live list
    /// holds one for as long as it is open). Over it: 503.
    public var maxConnections = 32
    /// `viewer.idleTimeout`: seconds a connection may stay silent while a request is expected
    /// or being read, and a write may wait.
    public var idleTimeout = 60.0
    /// The largest request head and body read (replay's form is a few bytes).
    public static let maxRequestBytes = 64 * 1024
    /// Seconds between looks at the active file for new records (the live list).
    public static let pollInterval = 0.1
    /// Rows one look at the file hands a live list at most (5,000 a second, above the
    /// 2,000 exchanges a second a list must keep up with row by row). Past it the list gets
    /// the newest of them and a `gap` event, and fills in from the log (`/api/records`), so
    /// a list's cost stops growing with the exchange rate.
    public static let maxRowsPerLook = 500
    /// Rows a live list may fall behind by before it is told to reload.
    public static let maxQueuedRows = 20_000
    /// Seconds between keep-alive comments on an idle live stream.
    public static let heartbeatInterval = 15.0

    public init() {}
}
