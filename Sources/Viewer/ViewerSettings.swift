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
    /// `viewer.maxRequestBytes`: the largest request head, and the largest body, read (replay's
    /// form is a few bytes). Over it: 413 for a body, 431 for a head.
    public var maxRequestBytes = 64 * 1024
    /// `viewer.pollInterval`: seconds between looks at the active file for new records (the
    /// live list). Rows trail the log by up to this much plus the page's own cadence.
    public var pollInterval = 0.1
    /// `viewer.maxRowsPerLook`: rows one look at the file hands a live list at most (5,000 a
    /// second at the default interval, above the 2,000 exchanges a second a list must keep up
    /// with row by row). Past it the list gets the newest of them and a `gap` event, and fills
    /// in from the log (`/api/records`), so a list's cost stops growing with the exchange rate.
    public var maxRowsPerLook = 500
    /// `viewer.maxQueuedRows`: rows a live list holds while they wait to be sent (a paced stream
    /// between its events, a browser that stopped reading); past it the oldest are left out as
    /// a `gap`, which the page fills in from the log. At least `maxRowsPerLook`.
    public var maxQueuedRows = 20_000
    /// `viewer.maxBytesPerLook`: bytes of new records read per look at the file: a thread that
    /// could not run for a while catches up in steps, not by reading the backlog into memory at once.
    public var maxBytesPerLook = 8 << 20
    /// `viewer.heartbeatInterval`: seconds between keep-alive comments on an idle live stream
    /// (what lets a closed browser tab be noticed, and keeps intermediaries from timing it out).
    public var heartbeatInterval = 15.0

    public init() {}
}
