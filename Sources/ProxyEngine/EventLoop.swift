import CGlibcExtensions
import CLibevent
import Foundation
import Synchronization

/// One libevent `event_base` driven by its own thread. Everything a loop owns
/// (sessions, its upstream pool, its resolver) is touched only on that thread;
/// other threads talk to it by `execute`, which queues a closure and wakes it.
///
/// No libevent call is made on a base from another thread, so libevent runs without
/// its locks (no `evthread_use_pthreads`): the wake-up is a write to an eventfd the
/// loop watches, not `event_active` from the calling thread, which needs them. The
/// locks would cost every `event_add`, `bufferevent` and `evbuffer` call a mutex lock
/// and unlock.
final class EventLoop: @unchecked Sendable {
    let index: Int
    let base: OpaquePointer
    private(set) var dns: OpaquePointer?
    private var wakeEvent: OpaquePointer?
    /// Readable while the inbox has work the loop has not taken yet; -1 once freed.
    private var wakeFD: Int32
    // NSLock rather than Synchronization.Mutex: on Linux the thread sanitizer cannot
    // see Mutex's futex-based locking and reports every queued closure as a race.
    private let inboxLock = NSLock()
    private var inbox: [() -> Void] = []
    /// Whether the eventfd has been written since the loop last took the inbox (under
    /// `inboxLock`): one write per batch of work, not per closure.
    private var wakePending = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    /// Owned by the loop thread.
    var sessions: [ObjectIdentifier: ClientSession] = [:]
    var tunnels: [ObjectIdentifier: Tunnel] = [:]
    /// Sessions holding a request until the log catches up (`ExchangeSink.isBehind`).
    var heldSessions: [ObjectIdentifier: ClientSession] = [:]
    /// WebSockets whose reading stopped until the log catches up (`TunnelStateMachine.logBehind`).
    var heldTunnels: [ObjectIdentifier: Tunnel] = [:]
    lazy var pool = UpstreamPool(loop: self)
    var engine: ProxyEngine?
    /// Monotonic milliseconds of this loop's last heartbeat tick (see `ProxyEngine.loopsResponsive`).
    let lastBeatMillis = Atomic<Int>(0)
    private var heartbeat: LoopTimer?
    /// Where this loop's `SocketReader`s take the first read of each readiness; one
    /// loop thread runs one reader at a time. Each reader keeps its loop, so this outlives them.
    let readScratch = UnsafeMutableRawPointer.allocate(byteCount: SocketReader.firstReadBytes, alignment: 16)

    deinit { readScratch.deallocate() }

    init(index: Int) throws {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else { throw EngineError.eventBase }
        guard let base = event_base_new() else { close(fd); throw EngineError.eventBase }
        self.index = index
        self.base = base
        wakeFD = fd
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        guard let wake = event_new(base, fd, Int16(EV_READ | EV_PERSIST), { _, _, ctx in
            guard let ctx else { return }
            Unmanaged<EventLoop>.fromOpaque(ctx).takeUnretainedValue().drainInbox()
        }, ctx) else {
            // A loop nobody can wake would never run queued work: fail here instead.
            event_base_free(base)
            close(fd)
            throw EngineError.eventBase
        }
        wakeEvent = wake
        event_add(wake, nil)
        dns = EventLoop.makeResolver(base: base)
    }

    /// evdns_base_new(…, INITIALIZE) fails outright when resolv.conf is missing or
    /// empty (containers, sandboxes), so the resolver is built in steps and a
    /// missing nameserver only matters for names not in the hosts file.
    private static func makeResolver(base: OpaquePointer) -> OpaquePointer? {
        guard let dns = evdns_base_new(base, 0) else { return nil }
        _ = evdns_base_resolv_conf_parse(dns, DNS_OPTION_SEARCH | DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC, "/etc/resolv.conf")
        _ = evdns_base_load_hosts(dns, "/etc/hosts")
        return dns
    }

    /// The loop thread's kernel id while it runs (set before `start` returns), else 0: a
    /// stale id could name another thread by then, and 0 would name the caller.
    private let threadID = Atomic<Int32>(0)

    /// Starts the loop's thread and returns once it runs.
    func start() {
        let running = DispatchSemaphore(value: 0)
        let t = Thread { [self] in
            // Shows in top -H and perf (Foundation's Thread.name sometimes never arrives: see the shim).
            _ = tapwire_name_current_thread("tapwire-loop-\(index)")
            threadID.store(tapwire_current_thread_id(), ordering: .releasing)
            running.signal()
            _ = event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY)
            threadID.store(0, ordering: .releasing)
            finished.signal()
        }
        t.stackSize = 1 << 20
        thread = t
        t.start()
        running.wait()
    }

    /// Raises the loop thread's nice value by `steps` (capped at 19), from any thread: 0, or
    /// errno. Raising it needs no privilege; lowering it again would, so this is for good.
    /// A thread the loop creates later (a Dispatch worker its async work spawns) inherits
    /// the value: only background chores run there (the drain watcher, the idle heap trim).
    var runningThreadID: Int32 { threadID.load(ordering: .acquiring) }

    func lowerPriority(by steps: Int) -> Int32 {
        let id = threadID.load(ordering: .acquiring)
        guard id > 0 else { return ESRCH }  // not running (any more)
        return Int32(tapwire_raise_thread_nice(id, Int32(steps)))
    }

    /// Runs `work` on the loop thread. Safe from any thread.
    func execute(_ work: @escaping () -> Void) {
        let wake = inboxLock.withLock { () -> Bool in
            inbox.append(work)
            if wakePending { return false }
            wakePending = true
            return true
        }
        if wake && wakeFD >= 0 {
            var one: UInt64 = 1
            // EAGAIN only when the counter is near overflow: the loop is then readable anyway.
            _ = withUnsafeBytes(of: &one) { write(wakeFD, $0.baseAddress, 8) }
        }
    }

    private func drainInbox() {
        // Reset the counter before taking the work: a closure queued after the take
        // finds wakePending false and writes again, so none waits unseen.
        var count: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &count) { read(wakeFD, $0.baseAddress, 8) }
        let work = inboxLock.withLock { () -> [() -> Void] in
            let w = inbox
            inbox.removeAll()
            wakePending = false
            return w
        }
        for w in work { w() }
    }

    /// The log caught up: every held session starts its request (or holds it again if
    /// the log fell behind meanwhile), every held WebSocket reads again.
    func releaseHeldSessions() {
        if !heldTunnels.isEmpty {
            let tunnels = heldTunnels.values
            heldTunnels.removeAll()
            for tunnel in tunnels { tunnel.releaseHeld() }
        }
        guard !heldSessions.isEmpty else { return }
        let held = heldSessions.values
        heldSessions.removeAll()
        for session in held { session.releaseHeldRequest() }
    }

    func stop() { execute { [base] in event_base_loopbreak(base) } }

    /// Frees the event base of a loop whose thread never started (a failed
    /// `ProxyEngine.start`); the loop must not be used afterwards. Running loops
    /// are never freed: the engine lives as long as the process.
    func freeUnstarted() {
        guard thread == nil, wakeFD >= 0 else { return }
        if let wakeEvent { event_free(wakeEvent); self.wakeEvent = nil }
        if let dns { evdns_base_free(dns, 0); self.dns = nil }
        event_base_free(base)
        close(wakeFD)
        wakeFD = -1  // a second call, or a stray execute, must not touch a reused descriptor
    }

    /// A timer on this loop that proves it still runs; a loop stuck in a callback stops beating.
    func startHeartbeat(every seconds: Double) {
        execute { [self] in
            lastBeatMillis.store(Int(EventLoop.monotonicNow() * 1000), ordering: .relaxed)
            // Unowned, not weak: the loop owns the timer, which only fires on the running loop;
            // and a weak reference would give the loop a side table, putting every retain and
            // release of it (sessions, exchanges and streams take it many times a request) on
            // Swift's slow path.
            let t = LoopTimer(loop: self, persistent: true) { [unowned self] in
                self.lastBeatMillis.store(Int(EventLoop.monotonicNow() * 1000), ordering: .relaxed)
            }
            t.schedule(after: seconds)
            heartbeat = t
        }
    }
    func waitUntilStopped() { finished.wait() }

    /// Seconds on the monotonic clock; exchanges derive all their clock points from it.
    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
