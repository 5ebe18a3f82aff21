import HTTP1

/// Receives finished exchanges on an event-loop thread: it must not block.
///
/// Class-bound: the loops go through `engine.sink` twice per exchange (`isBehind`, `accept`),
/// and an existential of any type would be copied each time through its value witnesses;
/// a class reference is a retain.
public protocol ExchangeSink: AnyObject, Sendable {
    /// `consuming`: the event moves into the sink's queue instead of being copied there
    /// (a retain and later a release of every string and array in it, on the loop).
    func accept(_ event: consuming CapturedEvent)
    /// True while the sink wants no new exchange started (`log.whenBehind: wait` and its
    /// queue full): clients' next requests are held unread until the caught-up handler runs.
    /// Read on the loops before every exchange, so it must be cheap (an atomic load).
    var isBehind: Bool { get }
    /// Registers the handler the sink calls, on any thread, each time `isBehind` turns false.
    /// No default on purpose: a sink that can be behind and never calls it holds clients forever.
    func onCaughtUp(_ handler: @escaping @Sendable () -> Void)
}
