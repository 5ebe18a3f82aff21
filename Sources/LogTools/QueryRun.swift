import Foundation
import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// Runs a query over a log snapshot with `threads` workers, one file each, and hands the
/// rendered matches to `output` in order (oldest first, or newest first with `reverse`).
///
/// Workers run ahead of the output by at most `maxPendingBytes` per file; with a `limit` they
/// stop as soon as the output has enough. For `reverse`, plain files (the active one first) are
/// read from their end, so `--reverse --limit 50` usually touches only the active file's tail;
/// a .gz cannot be read backwards, so it is inflated whole, keeping its last `limit` matches.
final class QueryRun {
    let snapshot: LogSnapshot
    let scanner: SegmentScanner
    let options: QueryScanOptions
    static let maxPendingBytes = 8 << 20

    private let lock = NSCondition()
    private var nextUnit = 0
    private var stopped = false
    private var outputs: [UnitOutput] = []
    private var workersLeft = 0

    final class UnitOutput {
        var records: [[UInt8]] = []
        var pendingBytes = 0
        var count = 0
        var done = false
        var error: LogReadError?
    }

    init(snapshot: LogSnapshot, query: Query, options: QueryScanOptions) {
        self.snapshot = snapshot
        self.options = options
        scanner = SegmentScanner(query: query, form: options.form, chunkSize: options.chunkSize)
    }

    private var order: [LogSnapshot.Segment] {
        options.reverse ? snapshot.segments.reversed() : snapshot.segments
    }

    /// Returns how many records were handed to `output` (counted, for `countOnly`).
    func run(output: ([UInt8]) throws -> Void) throws -> Int {
        let units = order
        outputs = units.map { _ in UnitOutput() }
        let workers = min(options.threads, max(1, units.count))
        workersLeft = workers
        for index in 0..<workers {
            let thread = Thread { [self] in work(units) }
            thread.name = "tapwire-query-\(index)"
            thread.start()
        }
        defer { finish() }
        var total = 0
        let limit = options.limit ?? Int.max
        var pending: [UInt8] = []
        for index in units.indices {
            let unit = outputs[index]
            while true {
                lock.lock()
                while unit.records.isEmpty && !unit.done { lock.wait() }
                let records = unit.records
                let count = unit.count
                let done = unit.done
                let error = unit.error
                unit.records.removeAll()
                unit.count = 0
                unit.pendingBytes = 0
                lock.broadcast()
                lock.unlock()
                if case .countOnly = options.form {
                    total += min(count, limit - total)
                } else {
                    for record in records {
                        if total >= limit { break }
                        pending += record
                        total += 1
                        if pending.count >= 64 * 1024 {
                            try output(pending)
                            pending.removeAll(keepingCapacity: true)
                        }
                    }
                }
                if total >= limit {
                    if !pending.isEmpty { try output(pending) }
                    return total
                }
                if let error { throw error }
                if done { break }
            }
        }
        if !pending.isEmpty { try output(pending) }
        return total
    }

    /// Stops the workers and waits for them (they finish the piece they are on).
    private func finish() {
        lock.lock()
        stopped = true
        lock.broadcast()
        while workersLeft > 0 { lock.wait() }
        lock.unlock()
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func work(_ units: [LogSnapshot.Segment]) {
        while true {
            lock.lock()
            let index = nextUnit
            nextUnit += 1
            let stop = stopped
            lock.unlock()
            if stop || index >= units.count { break }
            let unit = outputs[index]
            do {
                try scan(units[index], into: unit)
            } catch {
                lock.lock()
                unit.error = error
                lock.unlock()
            }
            lock.lock()
            unit.done = true
            lock.broadcast()
            lock.unlock()
        }
        lock.lock()
        workersLeft -= 1
        lock.broadcast()
        lock.unlock()
    }

    /// Hands a record to the output side, waiting while too much is pending; false once stopped.
    private func deliver(_ record: [UInt8], to unit: UnitOutput) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if case .countOnly = options.form {
            unit.count += 1
            return !stopped
        }
        while unit.pendingBytes >= QueryRun.maxPendingBytes && !stopped { lock.wait() }
        unit.records.append(record)
        unit.pendingBytes += record.count
        lock.broadcast()
        return !stopped
    }

    private func scan(_ segment: LogSnapshot.Segment, into unit: UnitOutput) throws(LogReadError) {
        let limit = options.limit ?? Int.max
        var kept = 0
        let cancelled = { [self] in isStopped }
        // Counting needs no per-record hand-over: count locally, report once per piece.
        var localCount = 0
        let emit: ([UInt8]) -> Bool = { [self] record in
            kept += 1
            if case .countOnly = options.form {
                localCount += 1
                return kept < limit
            }
            return deliver(record, to: unit) && kept < limit
        }
        defer {
            if localCount > 0 {
                lock.lock()
                unit.count += localCount
                lock.unlock()
            }
        }
        switch segment {
        case .active(let reader, let size):
            if options.reverse {
                try scanner.backward(reader, size: size, isActive: true, cancelled: cancelled, emit: emit)
            } else {
                try scanner.forward(reader, isActive: true, byteLimit: size, cancelled: cancelled, emit: emit)
            }
        case .rotated(let path):
            guard let reader = try LogSnapshot.open(rotated: path) else { return }
            defer { reader.close() }
            if options.reverse, let plain = reader as? PlainFileReader {
                try scanner.backward(plain, size: plain.status()?.size ?? 0, isActive: false, cancelled: cancelled, emit: emit)
            } else if options.reverse {
                // Newest first from a file read oldest first: keep its last `limit` matches.
                var last: [[UInt8]] = []
                let keepAll = options.limit == nil
                // Any count a user can type, up to Int.max, must not overflow the trim mark.
                let trimAt = limit > (Int.max - 64) / 2 ? Int.max : 2 * limit + 64
                try scanner.forward(reader, isActive: false, cancelled: cancelled) { record in
                    last.append(record)
                    // Trimmed in batches, so each record is moved O(1) times on average.
                    if !keepAll && last.count > trimAt { last.removeFirst(last.count - limit) }
                    return true
                }
                for record in last.suffix(keepAll ? last.count : limit).reversed() where !emit(record) { break }
            } else {
                try scanner.forward(reader, isActive: false, cancelled: cancelled, emit: emit)
            }
        }
    }
}
