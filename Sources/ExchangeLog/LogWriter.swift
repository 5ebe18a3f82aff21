import Foundation
#if canImport(Glibc)
import Glibc
#endif

public struct LogWriterStats: Sendable, Equatable {
    /// Records on disk (loss records not included).
    public var written: Int
    /// Records refused (queue full, writer stopped) or dropped after a failed write, since start.
    public var lost: Int
    /// Lost records not yet reported by a loss record in the file.
    public var lostSinceLastReport: Int
    /// Records accepted and not yet written.
    public var queueDepth: Int
    public var rotations: Int
    /// Failed file operations (open, write, rename, fsync), since start.
    public var ioErrors: Int
    public var lastError: String?
    /// Compressions or deletions the archiver could not do (plain files stay for the next start).
    public var archiveFailures: Int
}

/// Writes already-encoded JSON lines to a `RotatingFile` from one dedicated thread.
///
/// Producers call `submit`, which never waits for the disk: a full queue refuses the record and
/// counts it. The thread takes everything queued at once and writes it with as few write() calls
/// as the batch and file limits allow, every line whole. When records are lost (queue full, disk
/// full, I/O error) the next successful write starts with a loss record
/// `{"kind":"loss","lost":N,"time":"…","reason":"…"}`.
public final class LogWriter: @unchecked Sendable {
    private let condition = NSCondition()

    // Shared state, guarded by `condition`.
    private var queue: [[UInt8]] = []
    private var queueBytes = 0
    private var capacity: Int
    private var byteCapacity: Int
    private var overflowLost = 0
    private var reopenRequested = false
    private var pendingSettings: LogSettings?
    private var flushRequested = 0
    private var flushCompleted = 0
    private var stopping = false
    private var finished = false
    private var writtenCount = 0
    private var lostCount = 0
    private var rotationCount = 0
    private var ioErrorCount = 0
    private var lastErrorText: String?
    private var publishedUnreportedLoss = 0

    // Writer-thread state.
    private var file: RotatingFile
    private var unreportedLoss = 0
    private var lossReasons: [String] = []
    private var lastSync: Double
    private var retryAfterFailure = false
    private let clock: LogClock
    private let faults: LogFaultInjector?
    private let archiver: LogArchiver

    /// Opens the log file at once so a bad directory is reported at startup; later failures are
    /// counted as losses instead and retried.
    public init(settings: LogSettings, clock: @escaping LogClock = SystemLogClock.now,
                faults: LogFaultInjector? = nil) throws(LogIOError) {
        self.clock = clock
        self.faults = faults
        self.capacity = settings.queueCapacity
        self.byteCapacity = settings.queueByteCapacity
        self.archiver = LogArchiver(faults: faults)
        self.file = RotatingFile(settings: settings, clock: clock, archiver: archiver, faults: faults)
        self.lastSync = LogWriter.monotonicNow()
        do {
            try file.open()
        } catch {
            archiver.stop()
            throw error
        }
        let thread = Thread { [self] in run() }
        thread.name = "tapwire-log-writer"
        thread.start()
    }

    /// Queues one encoded record (without its newline). Never blocks on I/O: returns false and
    /// counts the record as lost when the queue is full or the writer has stopped.
    @discardableResult
    public func submit(_ line: [UInt8]) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopping, queue.count < capacity, queueBytes + line.count <= byteCapacity || queue.isEmpty else {
            lostCount += 1
            if !stopping {
                overflowLost += 1
                condition.broadcast()
            }
            return false
        }
        queue.append(line)
        queueBytes += line.count
        condition.broadcast()
        return true
    }

    /// Queues several records under one lock and one wake-up (the serialization
    /// workers submit what they encoded together). Refused records are counted lost.
    public func submit(batch lines: [[UInt8]]) {
        guard !lines.isEmpty else { return }
        condition.lock()
        defer { condition.unlock() }
        for line in lines {
            if !stopping, queue.count < capacity, queueBytes + line.count <= byteCapacity || queue.isEmpty {
                queue.append(line)
                queueBytes += line.count
            } else {
                lostCount += 1
                if !stopping { overflowLost += 1 }
            }
        }
        condition.broadcast()
    }

    /// Counts records that never reached `submit` (the serialization pool was full); they
    /// appear in the next loss record like queue overflows.
    public func countLost(_ n: Int) {
        guard n > 0 else { return }
        condition.withLock {
            lostCount += n
            if !stopping { overflowLost += n; condition.broadcast() }
        }
    }

    /// Closes and reopens the active file between batches (SIGUSR1; logrotate `create`).
    public func reopen() {
        condition.withLock {
            reopenRequested = true
            condition.broadcast()
        }
    }

    /// Applies reloaded settings between batches (SIGHUP): a new directory or file name switches
    /// files without rotating the old one; new limits apply to the current file.
    public func apply(_ settings: LogSettings) {
        condition.withLock {
            pendingSettings = settings
            capacity = settings.queueCapacity
            byteCapacity = settings.queueByteCapacity
            condition.broadcast()
        }
    }

    /// Blocks until every record accepted before the call has been written and fsynced (or
    /// counted lost).
    public func flush() {
        condition.lock()
        flushRequested += 1
        let generation = flushRequested
        condition.broadcast()
        while flushCompleted < generation && !finished { condition.wait() }
        condition.unlock()
    }

    /// Blocks until every accepted record is written and fsynced, the writer thread has ended and
    /// queued compressions are done. Later submits are refused. Safe to call more than once.
    public func flushAndStop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
        archiver.stop()
    }

    /// Blocks until the archiver has compressed and pruned everything rotated so far.
    public func waitForArchiving() {
        archiver.waitUntilIdle()
    }

    public var stats: LogWriterStats {
        let archiveFailures = archiver.failures
        return condition.withLock {
            LogWriterStats(written: writtenCount, lost: lostCount,
                           lostSinceLastReport: publishedUnreportedLoss + overflowLost, queueDepth: queue.count,
                           rotations: rotationCount, ioErrors: ioErrorCount, lastError: lastErrorText,
                           archiveFailures: archiveFailures)
        }
    }

    // MARK: writer thread

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopping && !reopenRequested && pendingSettings == nil
                    && overflowLost == 0 && flushRequested == flushCompleted {
                guard let delay = housekeepingDelay() else {
                    condition.wait()
                    continue
                }
                if !condition.wait(until: Date(timeIntervalSinceNow: delay)) { break }
            }
            // A small batch under steady traffic: give it a moment to grow, so lines go
            // out in a few large writes instead of one write (and one wake-up) each.
            if queue.count < 64 && !stopping && flushRequested == flushCompleted && !reopenRequested
                && pendingSettings == nil {
                condition.unlock()
                usleep(2_000)
                condition.lock()
            }
            let batch = queue
            queue = []
            queueBytes = 0
            let overflow = overflowLost
            overflowLost = 0
            let reopen = reopenRequested
            reopenRequested = false
            let settings = pendingSettings
            pendingSettings = nil
            let flushGeneration = flushRequested
            let stop = stopping
            condition.unlock()

            var failures: [LogIOError] = []
            if overflow > 0 {
                unreportedLoss += overflow
                noteReason("queue full")
            }
            if let settings { applyNow(settings, failures: &failures) }
            let rotationsBefore = file.rotations
            let absorbedBefore = file.absorbedErrors
            if reopen {
                do { try file.reopen() } catch { failures.append(error) }
            }
            if batch.isEmpty {
                do { try file.rotateIfDue() } catch { failures.append(error) }
            }
            let (written, lost) = writeBatch(batch, failures: &failures)
            let wantsSync = stop || flushGeneration > flushCompleted
                || LogWriter.monotonicNow() - lastSync >= file.settings.flushInterval
            if wantsSync && file.hasUnsyncedData {
                do { try file.sync() } catch { failures.append(error) }
                lastSync = LogWriter.monotonicNow()
            }
            // Failures the file absorbed itself (a rename that failed, so writing went on).
            let absorbed = file.absorbedErrors - absorbedBefore
            let lastFailure = failures.last ?? (absorbed > 0 ? file.lastError : nil)

            condition.lock()
            writtenCount += written
            lostCount += lost
            rotationCount += file.rotations - rotationsBefore
            ioErrorCount += failures.count + max(0, absorbed)
            publishedUnreportedLoss = unreportedLoss
            if let lastFailure { lastErrorText = lastFailure.description }
            flushCompleted = max(flushCompleted, flushGeneration)
            let done = stopping && queue.isEmpty && pendingSettings == nil && !reopenRequested
            condition.broadcast()
            condition.unlock()
            if done {
                // fsync and close before anyone waiting in flushAndStop is released.
                file.close()
                condition.withLock {
                    finished = true
                    condition.broadcast()
                }
                return
            }
        }
    }

    /// How long the idle writer may sleep before it has something to do without new records:
    /// an fsync that is due, a loss record to retry, a time boundary to rotate at.
    private func housekeepingDelay() -> Double? {
        var delays: [Double] = []
        if file.hasUnsyncedData {
            delays.append(max(0, lastSync + file.settings.flushInterval - LogWriter.monotonicNow()))
        }
        if unreportedLoss > 0 || retryAfterFailure {
            delays.append(1.0)
        }
        if let length = file.settings.rotateInterval.periodSeconds, file.size > 0 {
            // Wake at the boundary (re-checked at least each minute in case the clock jumps).
            let now = clock()
            let boundary = ((now / Double(length)).rounded(.down) + 1) * Double(length)
            delays.append(min(max(boundary - now, 0.05), 60))
        }
        return delays.min()
    }

    private func applyNow(_ settings: LogSettings, failures: inout [LogIOError]) {
        let newLayout = LogFileLayout(settings: settings)
        if newLayout == file.layout {
            file.update(settings)
            return
        }
        do { try file.sync() } catch { failures.append(error) }
        file.close()
        file = RotatingFile(settings: settings, clock: clock, archiver: archiver, faults: faults)
        do { try file.open() } catch { failures.append(error) }
    }

    /// Writes the batch in chunks of whole lines that fit both `batchBytes` and the room left
    /// before a size rotation, a pending loss record first. After a failure the rest of the
    /// batch is dropped and counted: retrying it would only delay the records queued behind it.
    private func writeBatch(_ records: [[UInt8]], failures: inout [LogIOError]) -> (written: Int, lost: Int) {
        var index = 0
        var written = 0
        var lost = 0
        retryAfterFailure = false
        repeat {
            var chunk: [UInt8] = []
            var reported = 0
            if unreportedLoss > 0 {
                chunk = lossRecord(count: unreportedLoss)
                chunk.append(UInt8(ascii: "\n"))
                reported = unreportedLoss
            }
            let limit = min(file.settings.batchBytes, file.roomBeforeRotation())
            let first = index
            while index < records.count {
                let needed = records[index].count + 1
                if !chunk.isEmpty && chunk.count + needed > limit { break }
                chunk.append(contentsOf: records[index])
                chunk.append(UInt8(ascii: "\n"))
                index += 1
            }
            guard !chunk.isEmpty else { break }
            do {
                try file.write(chunk)
                written += index - first
                if reported > 0 {
                    unreportedLoss -= reported
                    if unreportedLoss == 0 { lossReasons = [] }
                }
            } catch {
                failures.append(error)
                let dropped = records.count - first
                lost += dropped
                unreportedLoss += dropped
                noteReason(error.shortReason)
                retryAfterFailure = true
                break
            }
        } while index < records.count
        return (written, lost)
    }

    private func noteReason(_ reason: String) {
        if !lossReasons.contains(reason) { lossReasons.append(reason) }
    }

    private func lossRecord(count: Int) -> [UInt8] {
        var line: [UInt8] = []
        line.reserveCapacity(96)
        line.append(contentsOf: #"{"kind":"loss","lost":"#.utf8)
        line.append(contentsOf: String(count).utf8)
        line.append(contentsOf: #","time":""#.utf8)
        RFC3339.append(secondsSince1970: clock(), into: &line)
        line.append(contentsOf: #"","reason":""#.utf8)
        for byte in lossReasons.joined(separator: "; ").utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                line.append(UInt8(ascii: "\\"))
                line.append(byte)
            case 0..<0x20:
                line.append(UInt8(ascii: " "))
            default:
                line.append(byte)
            }
        }
        line.append(contentsOf: #""}"#.utf8)
        return line
    }

    private static func monotonicNow() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1_000_000_000
    }
}
