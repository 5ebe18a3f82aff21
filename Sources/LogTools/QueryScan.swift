import Foundation
import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// What `tapwire query` prints for each record it keeps.
public enum QueryOutputForm: Sendable {
    /// One `tail` line.
    case formatted(TailFormatter)
    /// The record's line as stored.
    case json
    /// Nothing: only the number is wanted (`--count`).
    case countOnly
}

/// `tapwire query`'s options besides the expression.
public struct QueryScanOptions: Sendable {
    public var form: QueryOutputForm
    /// At most this many records (the first ones in the chosen order).
    public var limit: Int?
    /// Newest first.
    public var reverse: Bool
    /// Worker threads reading files side by side (one file each).
    public var threads: Int
    /// Bytes read and searched at a time.
    public var chunkSize: Int

    public static let defaultChunkSize = 1 << 20

    public init(form: QueryOutputForm, limit: Int? = nil, reverse: Bool = false,
                threads: Int = QueryScanOptions.defaultThreads, chunkSize: Int = QueryScanOptions.defaultChunkSize) {
        self.form = form
        self.limit = limit
        self.reverse = reverse
        self.threads = max(1, threads)
        self.chunkSize = max(4096, chunkSize)
    }

    /// One per core, at most 4: decompression and matching are CPU-bound, and more threads than
    /// cores only add switching.
    public static var defaultThreads: Int { min(4, max(1, ProcessInfo.processInfo.activeProcessorCount)) }
}

/// Reads one file of a log and hands over the records a query keeps, rendered for output.
///
/// Files are read in `chunkSize` pieces; within a piece the prefilter finds the lines worth
/// parsing (most are never split out, let alone parsed). Forward, a piece is searched as it
/// comes; backward (plain files, for `--reverse`) pieces are read from the end with `pread`
/// and each piece's matches are handed over last first.
struct SegmentScanner {
    let query: Query
    let form: QueryOutputForm
    let chunkSize: Int

    /// The rendered record (empty for `countOnly`), or nil when the line does not match.
    func evaluate(_ raw: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var line = raw
        if let last = line.last, last == 13 { line = UnsafeBufferPointer(rebasing: line.dropLast()) }
        if line.isEmpty { return nil }
        if query.isEmpty {
            switch form {
            case .countOnly: return []
            case .json: return Array(line) + [10]
            case .formatted(let formatter): return Array(formatter.format(line: Array(line)).utf8) + [10]
            }
        }
        guard query.prefilter.mayMatch(line),
              let record = try? JSONParser.parse(UnsafeRawBufferPointer(line), allowFragments: false),
              query.matches(record) else { return nil }
        switch form {
        case .countOnly: return []
        case .json: return Array(line) + [10]
        case .formatted(let formatter): return Array(formatter.format(record).utf8) + [10]
        }
    }

    /// Every match in `region`, in order, to `emit` (false: stop). Returns false when stopped.
    func search(_ region: UnsafeBufferPointer<UInt8>, emit: ([UInt8]) -> Bool) -> Bool {
        var going = true
        query.prefilter.forEachCandidate(in: region) { range in
            guard let rendered = evaluate(UnsafeBufferPointer(rebasing: region[range])) else { return true }
            going = emit(rendered)
            return going
        }
        return going
    }

    /// Reads `reader` to its current end. The active file's last line without `\n` is still being
    /// written and is left out; a rotated file's is a record.
    func forward(_ reader: LogFileReader, isActive: Bool, cancelled: () -> Bool,
                 emit: ([UInt8]) -> Bool) throws(LogReadError) {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(chunkSize + readChunkSize)
        while true {
            var atEnd = false
            while buffer.count < chunkSize {
                if try reader.read(into: &buffer) == 0 { atEnd = true; break }
            }
            let complete = buffer.withUnsafeBufferPointer { bytes -> Int in
                var i = bytes.count
                while i > 0 && bytes[i - 1] != 10 { i -= 1 }
                return i
            }
            let stopped = buffer.withUnsafeBufferPointer { bytes -> Bool in
                var end = complete
                if atEnd && !isActive { end = bytes.count }
                return !search(UnsafeBufferPointer(rebasing: bytes[0..<end]), emit: emit)
            }
            if stopped || atEnd || cancelled() { return }
            buffer.removeFirst(complete)
        }
    }

    /// Reads a plain file from `size` back to its start, handing over matches newest first.
    func backward(_ reader: PlainFileReader, size: Int64, isActive: Bool, cancelled: () -> Bool,
                  emit: ([UInt8]) -> Bool) throws(LogReadError) {
        var end = size
        // The start of a line whose beginning is in the part not read yet, with its newline.
        var carry: [UInt8] = []
        var first = true
        while end > 0 || !carry.isEmpty {
            let start = max(0, end - Int64(chunkSize))
            var buffer = [UInt8](repeating: 0, count: Int(end - start))
            var filled = 0
            while filled < buffer.count {
                let n = buffer.withUnsafeMutableBytes { raw in
                    pread(reader.descriptor, raw.baseAddress! + filled, raw.count - filled, off_t(start) + off_t(filled))
                }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw LogReadError.errno(reader.path, "read failed", errno)
                }
                if n == 0 { break }
                filled += n
            }
            buffer.removeLast(buffer.count - filled)
            buffer += carry
            var regionEnd = buffer.count
            if first {
                first = false
                // The active file's bytes after its last newline are a line still being written.
                if isActive {
                    while regionEnd > 0 && buffer[regionEnd - 1] != 10 { regionEnd -= 1 }
                }
            }
            var regionStart = 0
            if start > 0 {
                guard let newline = buffer[0..<regionEnd].firstIndex(of: 10) else {
                    carry = Array(buffer[0..<regionEnd])
                    end = start
                    continue
                }
                regionStart = newline + 1
                carry = Array(buffer[0..<regionStart])
            } else {
                carry = []
            }
            var matches: [[UInt8]] = []
            buffer.withUnsafeBufferPointer { bytes in
                _ = search(UnsafeBufferPointer(rebasing: bytes[regionStart..<regionEnd])) { rendered in
                    matches.append(rendered)
                    return true
                }
            }
            for rendered in matches.reversed() where !emit(rendered) { return }
            end = start
            if cancelled() { return }
            if start == 0 { break }
        }
    }
}

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
        case .active(let reader):
            if options.reverse {
                try scanner.backward(reader, size: reader.status()?.size ?? 0, isActive: true, cancelled: cancelled, emit: emit)
            } else {
                try scanner.forward(reader, isActive: true, cancelled: cancelled, emit: emit)
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
                try scanner.forward(reader, isActive: false, cancelled: cancelled) { record in
                    last.append(record)
                    // Trimmed in batches, so each record is moved O(1) times on average.
                    if !keepAll && last.count > 2 * limit + 64 { last.removeFirst(last.count - limit) }
                    return true
                }
                for record in last.suffix(keepAll ? last.count : limit).reversed() where !emit(record) { break }
            } else {
                try scanner.forward(reader, isActive: false, cancelled: cancelled, emit: emit)
            }
        }
    }
}
