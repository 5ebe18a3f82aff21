import Foundation
import HTTP1
import Synchronization

/// Moves finished exchanges off the event loops: worker threads (one per core;
/// the second and later are woken only when one falls behind) decode, serialize
/// and encode them, then hand the lines to the single log-writer thread. `accept` never blocks: when more than `maxPending`
/// exchanges wait, new ones are counted as lost and reported in the next loss
/// record, so slow decoding never slows traffic.
///
/// Workers take what is queued (up to a batch) at once and submit the lines as one batch:
/// a Dispatch block per exchange cost a thread wake-up and a writer wake-up
/// each, which the profile showed as a third of the pipeline's time.
public final class ExchangePipeline: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var queue: [CapturedEvent] = []
    /// Captured body bytes waiting in `queue`: bounded too, since a count alone lets
    /// 65,536 one-megabyte captures pile up when decoding falls behind.
    private var queuedBytes = 0
    private var idleWorkers = 0
    /// Workers waiting without a deadline; only they need a signal.
    private var deepSleepers = 0
    /// Workers napping briefly (at most one): under steady traffic it picks up what
    /// arrived every couple of milliseconds, so `accept` never has to wake anyone.
    private var nappers = 0
    private var busyWorkers = 0
    private var stopping = false
    private var processor: ExchangeProcessor

    private let writer: LogWriter
    private let ids = RecordIDGenerator()
    private let maxPending: Int
    private let maxPendingBytes: Int
    /// Largest batch one worker takes, so other workers get a share under load.
    private let batchLimit = 256
    private let processedCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)
    private let depth = Atomic<Int>(0)

    public init(processor: ExchangeProcessor, writer: LogWriter, maxPending: Int = 65_536,
                maxPendingBytes: Int = 256 << 20, workers: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.processor = processor
        self.writer = writer
        self.maxPending = maxPending
        self.maxPendingBytes = maxPendingBytes
        for i in 0..<max(1, workers) {
            let t = Thread { [self] in work() }
            t.name = "tapwire-serialize-\(i)"
            t.start()
        }
    }

    /// Called on an event-loop thread for every finished exchange or tunnel.
    public func accept(_ event: CapturedEvent) {
        let size = Self.capturedBytes(event)
        condition.lock()
        guard queue.count < maxPending, queuedBytes + size <= maxPendingBytes || queue.isEmpty, !stopping else {
            condition.unlock()
            droppedCount.add(1, ordering: .relaxed)
            writer.countLost(1)
            return
        }
        queue.append(event)
        queuedBytes += size
        depth.store(queue.count + busyWorkers, ordering: .relaxed)
        // Waking a worker per exchange cost the event loop a futex call and a context
        // switch each (10% of its time). A napping worker looks again within 2 ms and a
        // busy one before it waits, so a sleeper is woken only when no worker is napping
        // or busy, or when a full batch is waiting (one worker is falling behind: bring
        // in another core).
        if deepSleepers > 0 && ((nappers == 0 && busyWorkers == 0) || queue.count == batchLimit) { condition.signal() }
        condition.unlock()
    }

    private func work() {
        var lastWork = Date()
        while true {
            condition.lock()
            while queue.isEmpty && !stopping {
                idleWorkers += 1
                if nappers == 0 && Date().timeIntervalSince(lastWork) < 0.1 {
                    // Traffic is flowing: nap briefly and let a batch gather. One napper is
                    // enough: every extra one cost two context switches per nap, which on
                    // two cores showed as more CPU than the records it shared out.
                    nappers += 1
                    _ = condition.wait(until: Date(timeIntervalSinceNow: 0.002))
                    nappers -= 1
                } else {
                    deepSleepers += 1
                    condition.wait()
                    deepSleepers -= 1
                }
                idleWorkers -= 1
            }
            if queue.isEmpty && stopping { condition.unlock(); return }
            let take = min(queue.count, batchLimit)
            let batch = Array(queue.prefix(take))
            queue.removeFirst(take)
            for event in batch { queuedBytes -= Self.capturedBytes(event) }
            busyWorkers += 1
            let processor = self.processor
            // More left: wake another worker rather than leave it for later.
            if !queue.isEmpty && idleWorkers > 0 { condition.signal() }
            condition.unlock()

            // Encoded straight into one buffer that the writer writes from (RecordBatch).
            var lines = RecordBatch()
            lines.reserveCapacity(bytes: batch.reduce(0) { $0 + 1600 + Self.capturedBytes($1) }, records: batch.count)
            for event in batch {
                switch event {
                case .http(let exchange):
                    let id = ids.next(startTime: exchange.clock.requestStart)
                    lines.append { processor.appendRecord(for: exchange, id: id, into: &$0) }
                case .tunnel(let tunnel):
                    let id = ids.next(startTime: tunnel.start)
                    lines.append { processor.appendRecord(for: tunnel, id: id, into: &$0) }
                }
            }
            writer.submit(lines)
            processedCount.add(lines.count, ordering: .relaxed)
            lastWork = Date()

            condition.lock()
            busyWorkers -= 1
            depth.store(queue.count + busyWorkers, ordering: .relaxed)
            condition.broadcast()
            condition.unlock()
        }
    }

    private static func capturedBytes(_ event: CapturedEvent) -> Int {
        switch event {
        case .http(let x): return x.requestBody.bytes.count + x.responseBody.bytes.count + 512
        case .tunnel(let t): return 256 + (t.upgrade.map { $0.requestBody.bytes.count + $0.responseBody.bytes.count } ?? 0)
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
        while !queue.isEmpty || busyWorkers > 0 { condition.wait() }
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// Exchanges waiting for or in serialization (batches in progress count as one each worker).
    public var queueDepth: Int { depth.load(ordering: .relaxed) }
    public var processed: Int { processedCount.load(ordering: .relaxed) }
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }
}
