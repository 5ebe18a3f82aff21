import CGlibcExtensions
import Foundation
import HTTP1
import Synchronization

/// Moves finished exchanges off the event loops: worker threads decode, serialize
/// and encode them, then hand the lines to the single log-writer thread. `accept`
/// never blocks. When `maxPending` exchanges (or `maxPendingBytes` of captures) wait,
/// `whenBehind` decides: `.drop` counts new ones as lost (reported in the next loss
/// record), so slow decoding never slows traffic; `.wait` queues them anyway and raises
/// `isBehind`, which the engine reads before starting an exchange and holds clients
/// until the queue is down to half and the caught-up handlers run. The overshoot is
/// bounded by the exchanges in flight: at most one per client connection (a release
/// starts every held one), each with up to two captures of `capture.maxBodyBytes`.
///
/// Workers take what is queued (up to a batch) at once and submit the lines as one batch,
/// so neither a worker nor the writer is woken per exchange.
///
/// The first worker naps under traffic and picks up what arrived after each nap of
/// `napInterval`, so `accept` never has to wake anyone; the others (helpers) sleep until
/// `backlogForHelpers` exchanges (or a quarter of `maxPendingBytes`) wait, then bring another
/// core in. Every worker keeps the loops' priority: a napping worker below them would gain
/// no throughput and leave the work to the helpers' bursts, which raise tail latency.
public final class ExchangePipeline: @unchecked Sendable {
    private enum Role {
        /// Naps under traffic, deep-sleeps when idle.
        case napper
        /// Woken by a backlog.
        case helper
    }

    /// A queued event and the index of the thread that accepted it in `sources`
    /// (`nil`: too many threads to track; the worker frees it).
    private struct Queued {
        /// Optional so that a worker can move the event out of its batch in place (`take()`),
        /// leaving nil: see `work`.
        var event: CapturedEvent?
        var source: Int?
    }

    private let condition = NSCondition()
    // Guarded by `condition`. The state `accept` touches is `@exclusivity(unchecked)`: every
    // access is under the lock and none overlaps another on its thread (no closure or callee
    // reaches these during an access), so the runtime's exclusivity checks could never fire,
    // and they would run on the event loop for every exchange.
    @exclusivity(unchecked) private var queue: [Queued] = []
    /// An emptied batch array kept for its capacity, swapped in for the queue next time.
    private var spare: [Queued] = []
    /// The threads that accepted events (the event loops), in order of their first `accept`.
    @exclusivity(unchecked) private var sources: [pthread_t] = []
    /// Per source: finished events waiting to be freed by the thread that allocated them, at
    /// its next `accept`. An event's ~6 blocks (target, both heads' bytes and spans, body)
    /// come from its loop's malloc arena. Freed by a worker they would leave the loop's
    /// thread cache empty, so the loop's next allocations would take malloc's slow path on
    /// chunks last written by the other core; freed by the loop, they refill its cache. The
    /// cost is memory outside `maxPendingBytes` (which
    /// counts only queued events): a worker's batch stays alive through its hand-off to the
    /// writer, and then one batch per source (see `work`) until that thread's next
    /// `accept`, so a loop that goes quiet holds a batch's captures (up to ~1 MiB and one
    /// larger exchange) until its next exchange. Entries of threads that ended stay with the
    /// pipeline.
    @exclusivity(unchecked) private var finished: [[CapturedEvent]] = []
    /// Threads past this many (tests) are not tracked: workers free what they accept.
    private let maxSources = 64
    /// Captured body bytes waiting in `queue`: bounded too, since a count alone lets
    /// 65,536 one-megabyte captures pile up when decoding falls behind.
    @exclusivity(unchecked) private var queuedBytes = 0
    /// The napping worker waits without a deadline.
    @exclusivity(unchecked) private var napperAsleep = false
    @exclusivity(unchecked) private var helperSleepers = 0
    @exclusivity(unchecked) private var busyWorkers = 0
    /// Threads in `drain`: only they need the broadcast after every batch.
    private var drainers = 0
    @exclusivity(unchecked) private var stopping = false
    private var processor: ExchangeProcessor
    /// Tests: called on the worker after it takes a batch (`true` on the napping worker;
    /// the batch's size).
    var batchHook: (@Sendable (_ napper: Bool, _ count: Int) -> Void)? {
        get { condition.withLock { hook } }
        set { condition.withLock { hook = newValue } }
    }
    private var hook: (@Sendable (Bool, Int) -> Void)?

    private let writer: LogWriter
    private let ids = RecordIDGenerator()
    // Guarded by `condition` (SIGHUP may change them).
    @exclusivity(unchecked) private var maxPending: Int
    @exclusivity(unchecked) private var maxPendingBytes: Int
    @exclusivity(unchecked) private var whenBehind: WhenBehind
    private var caughtUpHandlers: [@Sendable () -> Void] = []
    private var backlogHandler: (@Sendable () -> Void)?
    /// The backlog handler ran (it runs once per pipeline).
    private let backlogSeen = Atomic<Bool>(false)
    /// Written under `condition`, read by the loops without it.
    private let behind = Atomic<Bool>(false)
    /// Largest batch one worker takes, so other workers get a share under load. Also the
    /// backlog that wakes the helpers: it must hold a nap's worth (`napInterval`) at the
    /// rates one worker keeps up with, or every nap would wake a helper.
    private let batchLimit = 1024
    /// Captured bytes one batch takes at most (at least one exchange): a batch is encoded
    /// into one buffer, and a buffer of many large records is large enough that malloc maps
    /// and unmaps it each time, so the kernel zeroes every page again. Buffers of a megabyte
    /// or two (`batchLimit` small records, or this many captured bytes) are reused from the
    /// heap.
    private let batchByteLimit = 1 << 20
    /// Batch buffers back from the writer (see `RecordBufferPool`): three, one for each worker
    /// and one in the writer's hands, of up to 4 MiB (a batch's captured bytes, its records'
    /// overhead and room to spare), so at most 12 MiB while logging is busy; freed when the
    /// napping worker goes idle.
    let bufferPool = RecordBufferPool(maxBuffers: 3, maxBufferBytes: 4 << 20)
    /// The napping worker's nap while traffic flows. Each nap is a context switch for it and
    /// a wake-up of the writer: shorter naps spend more per exchange on those, while longer
    /// ones make batches whose buffers outgrow what the heap and the caches keep warm, and
    /// delay records by up to a nap.
    private let napInterval = 0.010
    /// Exchanges waiting before the helpers are woken.
    @exclusivity(unchecked) private var backlogForHelpers: Int
    /// Tests: `backlogForHelpers`, read under the lock like every other access to it.
    var helperBacklog: Int { condition.withLock { backlogForHelpers } }
    private let processedCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)
    private let depth = Atomic<Int>(0)

    public init(processor: ExchangeProcessor, writer: LogWriter, maxPending: Int = 65_536,
                maxPendingBytes: Int = 256 << 20, whenBehind: WhenBehind = .drop,
                workers: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.processor = processor
        self.writer = writer
        self.maxPending = maxPending
        self.maxPendingBytes = maxPendingBytes
        self.whenBehind = whenBehind
        backlogForHelpers = Self.helperBacklog(maxPending: maxPending, batchLimit: batchLimit)
        let count = max(1, workers)
        for i in 0..<count {
            let role: Role = i == 0 ? .napper : .helper
            let t = Thread { [self] in
                _ = tapwire_name_current_thread("tapwire-ser-\(i)")
                work(role)
            }
            t.start()
        }
    }

    /// Called on an event-loop thread for every finished exchange or tunnel.
    public func accept(_ event: consuming CapturedEvent) {
        let size = Self.capturedBytes(event)
        // This thread's finished events, freed here once unlocked.
        var freed: [CapturedEvent] = []
        condition.lock()
        let source = sourceIndex()
        if let source, !finished[source].isEmpty { swap(&freed, &finished[source]) }
        let full = queue.count >= maxPending || (queuedBytes + size > maxPendingBytes && !queue.isEmpty)
        guard !stopping, !full || whenBehind == .wait else {
            condition.unlock()
            droppedCount.add(1, ordering: .relaxed)
            writer.countLost(1)
            // A WebSocket's later pieces must not wait for this one. Noted without the
            // connection's lock, which a worker may hold for as long as a piece takes to parse.
            if case .webSocket(let piece) = event { piece.capture.noteRefused(piece.sequence) }
            return
        }
        queue.append(Queued(event: consume event, source: source))
        queuedBytes += size
        depth.store(queue.count + busyWorkers, ordering: .relaxed)
        if whenBehind == .wait && (queue.count >= maxPending || queuedBytes >= maxPendingBytes) {
            behind.store(true, ordering: .releasing)
        }
        // Waking a worker per exchange would cost the event loop a futex call and a context
        // switch each, so only a sleeping napper is woken, and the helpers once a backlog
        // has built up.
        if napperAsleep || (helperSleepers > 0 && backlogged) { condition.broadcast() }
        condition.unlock()
        _ = consume freed
    }

    /// Under `condition`: the calling thread's index in `sources`, added on its first call.
    private func sourceIndex() -> Int? {
        let me = pthread_self()
        for i in sources.indices where pthread_equal(sources[i], me) != 0 { return i }
        guard sources.count < maxSources else { return nil }
        sources.append(me)
        finished.append([])
        return sources.count - 1
    }

    /// A full batch: the napping worker is falling behind.
    private static func helperBacklog(maxPending: Int, batchLimit: Int) -> Int { max(1, min(batchLimit, maxPending / 4)) }

    /// `log.whenBehind: wait` and the queue reached a bound: the engine holds clients'
    /// next requests until this is false again (and the caught-up handlers ran).
    public var isBehind: Bool { behind.load(ordering: .acquiring) }

    /// Registers `handler`, called on a worker thread (or the thread changing the settings)
    /// each time `isBehind` turns false.
    public func onCaughtUp(_ handler: @escaping @Sendable () -> Void) {
        condition.withLock { caughtUpHandlers.append(handler) }
    }

    /// Registers `handler`, called once on a worker thread the first time decoding or writing
    /// falls behind: an eighth of a decode bound waiting (`log.decodeQueueCapacity`,
    /// `log.decodeQueueBytes`), or of the writer's (`LogWriter.isBacklogged`), or a record
    /// dropped. The engine lowers the loops' priority then (`log.loopNice`).
    public func onFirstBacklog(_ handler: @escaping @Sendable () -> Void) {
        condition.withLock { backlogHandler = handler }
    }

    /// Under `condition`: whether the decode queue holds an eighth of a bound.
    private var decodeQueueBacklogged: Bool {
        queue.count * 8 >= max(8, maxPending) || queuedBytes * 8 >= max(8, maxPendingBytes)
    }

    /// SIGHUP: new bounds and policy apply to the next `accept`. Switching to `.drop`
    /// releases held clients at once.
    public func apply(maxPending: Int, maxPendingBytes: Int, whenBehind: WhenBehind) {
        condition.lock()
        self.maxPending = max(1, maxPending)
        self.maxPendingBytes = max(1, maxPendingBytes)
        self.whenBehind = whenBehind
        backlogForHelpers = Self.helperBacklog(maxPending: self.maxPending, batchLimit: batchLimit)
        let handlers = clearBehindIfCaughtUp()
        if helperSleepers > 0 && backlogged { condition.broadcast() }
        condition.unlock()
        for h in handlers { h() }
    }

    /// Under `condition`: lowers `isBehind` once the queue is at most half of both bounds
    /// (or the policy no longer waits, or the pipeline stops); the handlers to call after
    /// unlocking, if it did.
    private func clearBehindIfCaughtUp() -> [@Sendable () -> Void] {
        guard behind.load(ordering: .relaxed) else { return [] }
        let caughtUp = stopping || whenBehind == .drop
            || (queue.count <= maxPending / 2 && queuedBytes <= maxPendingBytes / 2)
        guard caughtUp else { return [] }
        behind.store(false, ordering: .releasing)
        return caughtUpHandlers
    }

    /// Never with an empty queue: with a byte bound under 4 the second test would always hold.
    private var backlogged: Bool { !queue.isEmpty && (queue.count >= backlogForHelpers || queuedBytes >= maxPendingBytes / 4) }

    /// A separate function, not a `switch` in `work`: matching on a borrowed parameter binds
    /// the payload in place, where the `switch` on `work`'s local, moved on afterwards, copied
    /// the whole event (a retain and a release of each of its references).
    ///
    /// Each record is followed by its newline and its end offset in `ends`; a WebSocket piece
    /// writes as many records as it completes messages (often none).
    @inline(never)
    private static func encode(_ event: CapturedEvent, processor: ExchangeProcessor, ids: RecordIDGenerator,
                               into buffer: inout RecordBuffer, ends: inout [Int], scratch: inout [UInt8]) {
        switch event {
        case .http(let exchange):
            processor.encodeRecord(for: exchange, id: .generated(ids.nextID(startTime: exchange.clock.requestStart)),
                                   into: &buffer, scratch: &scratch)
        case .tunnel(let tunnel):
            processor.encodeRecord(for: tunnel, id: .generated(ids.nextID(startTime: tunnel.start)), into: &buffer)
        case .webSocket(let piece):
            // Under the connection's lock: another worker may hold its next piece.
            piece.capture.state.withLock { state in
                WebSocketRecorder.of(piece.capture, in: &state, processor: processor, ids: ids)
                    .take(piece, processor: processor, ids: ids, into: &buffer, ends: &ends, scratch: &scratch)
            }
            return
        }
        buffer.append(UInt8(ascii: "\n"))
        ends.append(buffer.count)
    }

    private func work(_ role: Role) {
        var lastWork = Date()
        /// Where each record's compacted JSON body is written (`ExchangeProcessor.outcome`),
        /// kept from record to record; let go past 256 KiB after a batch, so that one large
        /// body is not held (a 64 KiB page takes 64 KiB + 16).
        var scratch: [UInt8] = []
        while true {
            condition.lock()
            if role == .helper {
                while !backlogged && !stopping {
                    helperSleepers += 1
                    condition.wait()
                    helperSleepers -= 1
                }
            } else {
                while queue.isEmpty && !stopping {
                    if Date().timeIntervalSince(lastWork) < 0.1 {
                        // Traffic is flowing: nap briefly and let a batch gather.
                        _ = condition.wait(until: Date(timeIntervalSinceNow: napInterval))
                    } else {
                        // Idle: the kept batch buffers go before `IdleHeapTrim` would look.
                        bufferPool.drain()
                        napperAsleep = true
                        condition.wait()
                        napperAsleep = false
                    }
                }
            }
            if queue.isEmpty && stopping { condition.unlock(); return }
            // Before the batch leaves the queue: how far behind decoding is.
            // Not while stopping: exchanges refused then are no backlog.
            let firstBacklog = !stopping && !backlogSeen.load(ordering: .relaxed) ? backlogHandler : nil
            let decodeBehind = firstBacklog != nil && (decodeQueueBacklogged || droppedCount.load(ordering: .relaxed) > 0)
            // Usually the whole queue fits a batch: swap arrays rather than copy the events
            // out (a retain and a release of every string in them) and shift the rest.
            // Moved out, not shared: a shared array would be copied by the append below.
            var batch: [Queued] = []
            swap(&batch, &spare)
            let batchBytes: Int
            if queue.count <= batchLimit && queuedBytes <= batchByteLimit {
                swap(&batch, &queue)
                batchBytes = queuedBytes
                queuedBytes = 0
            } else {
                var take = 0, bytes = 0
                while take < min(queue.count, batchLimit) && (take == 0 || bytes < batchByteLimit) {
                    bytes += queue[take].event.map(Self.capturedBytes) ?? 0
                    take += 1
                }
                batch.append(contentsOf: queue.prefix(take))
                queue.removeFirst(take)
                queuedBytes -= bytes
                batchBytes = bytes
            }
            busyWorkers += 1
            let sourceCount = sources.count
            let processor = self.processor
            let hook = self.hook
            let waitForWriter = whenBehind == .wait
            let caughtUp = clearBehindIfCaughtUp()
            condition.unlock()
            for h in caughtUp { h() }
            hook?(role == .napper, batch.count)

            // Finished events, by source, for `finished`: sized first, so that appending
            // does not move the events again. Outside the lock, which the loops wait for.
            var toFree = [[CapturedEvent]](repeating: [], count: sourceCount)
            var perSource = [Int](repeating: 0, count: sourceCount)
            // By index, reading only `source`: iterating the elements would copy each event.
            for i in batch.indices { if let source = batch[i].source { perSource[source] += 1 } }
            for source in toFree.indices where perSource[source] > 0 { toFree[source].reserveCapacity(perSource[source]) }

            // The whole batch is encoded into one pointer buffer, which the writer gets as it is:
            // appending each record to a [UInt8] went through the generic copy path (a tenth of
            // a 64 KiB record's cost).
            // A quarter over the captured bytes: a WebSocket piece's records add ~210 bytes of
            // fields to each message (a fifth more than a piece of 1 KiB messages), and a
            // buffer that grows on its last records is copied into fresh memory, which the
            // pool then cannot reuse for a batch of the first size.
            var buffer = RecordBuffer(capacity: batch.count * 1600 + batchBytes + batchBytes / 4, pool: bufferPool)
            var ends: [Int] = []
            ends.reserveCapacity(batch.count)
            // Each event is moved out of its slot (nil left behind), read in place and moved
            // on to its source's list. `for event in batch` would copy every event (a retain
            // per string and array in it) and release the copy before removeAll released the
            // original; rebuilding the enum after the switch (`done = .http(exchange)`) would
            // copy it too: a retain and a release of each of its references, atomics on cache
            // lines the loop's core holds.
            for i in batch.indices {
                guard let event = batch[i].event.take() else { continue }
                Self.encode(event, processor: processor, ids: ids, into: &buffer, ends: &ends, scratch: &scratch)
                // Every source was added before its events were queued, so it has a slot.
                if let source = batch[i].source { toFree[source].append(event) }
            }
            batch.removeAll(keepingCapacity: true)
            if scratch.capacity > 1 << 18 { scratch = [] }
            // WebSocket pieces that completed no message write nothing.
            if !ends.isEmpty {
                let lines = RecordBatch(encoded: buffer.intoEncodedRecords(), ends: ends)
                writer.submit(lines, waitingForRoom: waitForWriter)
                processedCount.add(lines.count, ordering: .relaxed)
            }
            if let firstBacklog, decodeBehind || writer.isBacklogged, !backlogSeen.exchange(true, ordering: .relaxed) {
                firstBacklog()
            }
            lastWork = Date()

            condition.lock()
            if spare.capacity < batch.capacity { spare = batch }
            // A source that has not taken back its previous batch (a quiet loop) keeps that one;
            // this one is freed here, after unlocking.
            for source in toFree.indices where finished[source].isEmpty && !toFree[source].isEmpty {
                swap(&finished[source], &toFree[source])
            }
            busyWorkers -= 1
            depth.store(queue.count + busyWorkers, ordering: .relaxed)
            if drainers > 0 { condition.broadcast() }
            condition.unlock()
            _ = consume toFree
        }
    }

    private static func capturedBytes(_ event: CapturedEvent) -> Int {
        switch event {
        // Capacity, not count: the memory held is what the byte bound is for.
        case .http(let x): return x.requestBody.bytes.capacity + x.responseBody.bytes.capacity + 512
        case .tunnel(let t): return 256 + (t.upgrade.map { $0.requestBody.bytes.capacity + $0.responseBody.bytes.capacity } ?? 0)
        case .webSocket(let piece):
            if case .bytes(_, let bytes, _) = piece.content { return 64 + bytes.capacity }
            return 256
        }
    }

    /// SIGHUP: exchanges taken from now on use the new rules and redaction.
    public func replace(processor newProcessor: ExchangeProcessor) {
        condition.withLock { processor = newProcessor }
    }

    /// Waits until every accepted exchange has reached the writer, then stops the
    /// workers (shutdown).
    public func drain() {
        condition.lock()
        drainers += 1
        while !queue.isEmpty || busyWorkers > 0 { condition.wait() }
        drainers -= 1
        stopping = true
        condition.broadcast()
        let handlers = clearBehindIfCaughtUp()
        condition.unlock()
        for h in handlers { h() }
    }

    /// Exchanges waiting for or in serialization (batches in progress count as one each worker).
    public var queueDepth: Int { depth.load(ordering: .relaxed) }
    /// Tests: finished events waiting for each accepting thread, in order of their first `accept`.
    var waitingToBeFreed: [Int] { condition.withLock { finished.map(\.count) } }
    public var processed: Int { processedCount.load(ordering: .relaxed) }
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }
}
