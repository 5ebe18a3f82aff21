import Dispatch
import Foundation
import HTTP1
import Synchronization

/// Moves finished exchanges off the event loops: each one is decoded,
/// serialized and encoded on a concurrent pool (one thread per core at most),
/// then handed to the single log-writer thread. `accept` never blocks: when
/// more than `maxPending` exchanges wait, new ones are counted as lost and
/// reported in the next loss record, so slow decoding never slows traffic.
public final class ExchangePipeline: Sendable {
    private let processor: Mutex<ExchangeProcessor>
    private let writer: LogWriter
    private let ids = RecordIDGenerator()
    private let pool = DispatchQueue(label: "tapwire-serialization", qos: .utility, attributes: .concurrent)
    private let group = DispatchGroup()
    private let pending = Atomic<Int>(0)
    private let maxPending: Int
    private let processedCount = Atomic<Int>(0)
    private let droppedCount = Atomic<Int>(0)

    public init(processor: ExchangeProcessor, writer: LogWriter, maxPending: Int = 65_536) {
        self.processor = Mutex(processor)
        self.writer = writer
        self.maxPending = maxPending
    }

    /// Called on an event-loop thread for every finished exchange or tunnel.
    public func accept(_ event: CapturedEvent) {
        guard pending.add(1, ordering: .relaxed).newValue <= maxPending else {
            pending.subtract(1, ordering: .relaxed)
            droppedCount.add(1, ordering: .relaxed)
            writer.countLost(1)
            return
        }
        let processor = self.processor.withLock { $0 }
        pool.async(group: group) { [self] in
            let line: [UInt8]
            switch event {
            case .http(let exchange):
                line = processor.record(for: exchange, id: ids.next(startTime: exchange.clock.requestStart))
            case .tunnel(let tunnel):
                line = processor.record(for: tunnel, id: ids.next(startTime: tunnel.start))
            }
            writer.submit(line)
            processedCount.add(1, ordering: .relaxed)
            pending.subtract(1, ordering: .relaxed)
        }
    }

    /// SIGHUP: exchanges accepted from now on use the new rules and redaction.
    public func replace(processor newProcessor: ExchangeProcessor) {
        processor.withLock { $0 = newProcessor }
    }

    /// Waits until every accepted exchange has reached the writer (shutdown).
    public func drain() { group.wait() }

    /// Exchanges waiting for or in serialization.
    public var queueDepth: Int { pending.load(ordering: .relaxed) }
    public var processed: Int { processedCount.load(ordering: .relaxed) }
    public var dropped: Int { droppedCount.load(ordering: .relaxed) }
}
