import CGlibcExtensions
import CLibevent

/// A one-shot or repeating libevent timer whose callback is a Swift closure.
/// The closure must not capture its owner strongly if the owner holds the timer.
final class LoopTimer {
    private var event: OpaquePointer?
    private let action: () -> Void
    private let persistent: Bool
    /// Scheduled and not yet fired or cancelled (a persistent timer stays scheduled).
    private(set) var isScheduled = false

    init(loop: EventLoop, persistent: Bool = false, action: @escaping () -> Void) {
        self.action = action
        self.persistent = persistent
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        event = event_new(loop.base, -1, persistent ? Int16(EV_PERSIST) : 0, { _, _, ctx in
            guard let ctx else { return }
            let timer = Unmanaged<LoopTimer>.fromOpaque(ctx).takeUnretainedValue()
            if !timer.persistent { timer.isScheduled = false }
            timer.action()
        }, ctx)
    }

    func schedule(after seconds: Double) {
        guard let event else { return }
        isScheduled = tw_evtimer_add(event, max(0, seconds)) == 0
    }

    func cancel() {
        if let event { event_del(event) }
        isScheduled = false
    }

    deinit { if let event { event_free(event) } }
}
