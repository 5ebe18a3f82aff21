import CGlibcExtensions
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
/// counts it (unless the producer asks to wait for room, `log.whenBehind: wait`). The thread takes everything queued at once and writes it with as few write() calls
/// as the batch and file limits allow, every line whole. When records are lost (queue full, disk
/// full, I/O error) the next successful write starts with a loss record
/// `{"kind":"loss","lost":N,"time":"…","reason":"…"}`.
public final class LogWriter: @unchecked Sendable {
    private let condition = NSCondition()

    // Shared state, guarded by `condition`.
    private var queue: [RecordBatch] = []
    /// Records and bytes in `queue`.
    private var queueCount = 0
    /// Records in the batch being written: still waiting for the disk, so in `queueDepth`
    /// (which read 0 during a slow write, just when someone would look).
    private var writingCount = 0
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
    /// Submitters waiting for room (`log.whenBehind: wait`).
    private var roomWaiters = 0
    /// The last write cycle failed: waiting for room would hold traffic behind a disk that
    /// is not taking records, so waiting submitters go ahead and are counted lost.
    private var writesFailing = false

    // Writer-thread state.
    private var file: RotatingFile
    /// The lock on `file`'s location; the writer thread swaps both (the lock under
    /// `condition`, since `holdsLock` reads it), `flushAndStop` releases it.
    private var locationLock: LogLocationLock?
    private var unreportedLoss = 0
    private var lossReasons: [String] = []
    private var lastSync: Double
    private var retryAfterFailure = false
    private let clock: LogClock
    private let faults: LogFaultInjector?
    private let archiver: LogArchiver

    /// Opens the log file at once so a bad directory is reported at startup; later failures are
    /// counted as losses instead and retried.
    /// - Parameter dormant: `log.enabled: false`: nothing in the log directory is created,
    ///   locked or recovered, no thread runs, and every submit is counted lost (none comes:
    ///   the engine has no sink then). Two forwarding-only instances may share a directory.
    public init(settings: LogSettings, clock: @escaping LogClock = SystemLogClock.now,
                faults: LogFaultInjector? = nil, dormant: Bool = false) throws(LogIOError) {
        self.clock = clock
        self.faults = faults
        self.capacity = settings.queueCapacity
        self.byteCapacity = settings.queueByteCapacity
        // Before the file queues its start-up recovery, which must not run in another
        // process's log.
        self.locationLock = dormant ? nil : try LogLocationLock(LogFileLayout(settings: settings), fileSystem: LogFileSystem(faults: faults))
        self.archiver = LogArchiver(faults: faults)
        self.file = RotatingFile(settings: settings, clock: clock, archiver: archiver, faults: faults, recover: !dormant)
        self.lastSync = LogWriter.monotonicNow()
        if dormant {
            stopping = true
            finished = true
            return
        }
        do {
            try file.open()
        } catch {
            archiver.stop()
            throw error
        }
        let thread = Thread { [self] in
            // Linux thread names hold 15 bytes.
            _ = tapwire_name_current_thread("tapwire-writer")
            run()
        }
        thread.start()
    }

    /// Queues one encoded record (without its newline). Never blocks on I/O: returns false and
    /// counts the record as lost when the queue is full or the writer has stopped.
    @discardableResult
    public func submit(_ line: [UInt8]) -> Bool {
        var batch = RecordBatch()
        batch.append(line)
        return submit(batch) == 1
    }

    /// Whether the queue holds an eighth of either bound: the writer is falling behind (the
    /// pipeline's cue to lower the event loops' priority).
    public var isBacklogged: Bool {
        condition.withLock { queueCount * 8 >= max(8, capacity) || queueBytes * 8 >= max(8, byteCapacity) || overflowLost > 0 }
    }

    /// Queues the records of `batch` that fit (from the front) under one lock and one
    /// wake-up (a serialization worker submits what it encoded together); the rest are
    /// counted lost. Returns how many were queued.
    ///
    /// `waitingForRoom` (`log.whenBehind: wait`): what does not fit waits for room and is
    /// queued as room appears (a batch can be larger than the whole queue), unless the
    /// writer is stopping or its last write failed: a disk that takes nothing must not
    /// hold traffic.
    @discardableResult
    public func submit(_ batch: RecordBatch, waitingForRoom: Bool = false) -> Int {
        guard !batch.isEmpty else { return 0 }
        var batch = batch
        condition.lock()
        defer { condition.unlock() }
        var queued = 0
        while waitingForRoom && !stopping && !writesFailing {
            let fitting = recordsThatFit(batch)
            if fitting == batch.count { break }
            if fitting > 0 {
                let rest = batch.splitOff(after: fitting)
                enqueue(batch)
                queued += fitting
                batch = rest
            }
            roomWaiters += 1
            condition.wait()
            roomWaiters -= 1
        }
        let accepted = stopping ? 0 : recordsThatFit(batch)
        let refused = batch.count - accepted
        if refused > 0 {
            lostCount += refused
            if !stopping { overflowLost += refused }
            batch.keepFirst(accepted)
        }
        if accepted > 0 { enqueue(batch) }
        if refused > 0 && !stopping { condition.broadcast() }
        return queued + accepted
    }

    /// Under `condition`: how many records from the front of `batch` both limits allow
    /// (whole records; one record always fits an empty queue).
    private func recordsThatFit(_ batch: RecordBatch) -> Int {
        let roomInCount = max(0, capacity - queueCount)
        var n = 0
        while n < min(batch.count, roomInCount) {
            if queueBytes + batch.ends[n] > byteCapacity && !(queueCount == 0 && n == 0) { break }
            n += 1
        }
        return n
    }

    /// Under `condition`: queues the whole of `batch` and wakes the writer.
    private func enqueue(_ batch: RecordBatch) {
        queueCount += batch.count
        queueBytes += batch.byteCount
        queue.append(batch)
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

    /// Blocks until every record accepted before the call has been written (or counted lost)
    /// and the active file fsynced. Records in a file rotated meanwhile are durable once the
    /// archiver has synced its `.gz` (`flushAndStop` waits for that) or, uncompressed, already.
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
        condition.withLock { locationLock?.release() }
    }

    /// Whether `settings` name the log file whose lock this writer holds (under any spelling):
    /// SIGHUP's check of a new location must not take that lock a second time.
    public func holdsLock(for settings: LogSettings) -> Bool {
        condition.withLock { locationLock?.holds(LogFileLayout(settings: settings)) ?? false }
    }

    /// Blocks until the archiver has compressed and pruned everything rotated so far.
    public func waitForArchiving() {
        archiver.waitUntilIdle()
    }

    public var stats: LogWriterStats {
        let archiveFailures = archiver.failures
        return condition.withLock {
            LogWriterStats(written: writtenCount, lost: lostCount,
                           lostSinceLastReport: publishedUnreportedLoss + overflowLost, queueDepth: queueCount + writingCount,
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
            if queueCount < 64 && !stopping && flushRequested == flushCompleted && !reopenRequested
                && pendingSettings == nil {
                condition.unlock()
                usleep(2_000)
                condition.lock()
            }
            let batch = queue
            queue = []
            writingCount = queueCount
            queueCount = 0
            queueBytes = 0
            // The queue has room again: a waiting worker fills it while this batch is written.
            if roomWaiters > 0 { condition.broadcast() }
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
                || (file.settings.syncInterval > 0 && LogWriter.monotonicNow() - lastSync >= file.settings.syncInterval)
            if wantsSync && file.hasUnsyncedData {
                do { try file.sync() } catch { failures.append(error) }
                lastSync = LogWriter.monotonicNow()
            }
            // Failures the file absorbed itself (a rename that failed, so writing went on).
            let absorbed = file.absorbedErrors - absorbedBefore
            let lastFailure = failures.last ?? (absorbed > 0 ? file.lastError : nil)

            condition.lock()
            writingCount = 0
            writtenCount += written
            lostCount += lost
            rotationCount += file.rotations - rotationsBefore
            ioErrorCount += failures.count + max(0, absorbed)
            publishedUnreportedLoss = unreportedLoss
            if let lastFailure { lastErrorText = lastFailure.description }
            flushCompleted = max(flushCompleted, flushGeneration)
            writesFailing = retryAfterFailure
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
        if file.hasUnsyncedData && file.settings.syncInterval > 0 {
            delays.append(max(0, lastSync + file.settings.syncInterval - LogWriter.monotonicNow()))
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
        // SIGHUP checked the new location (`RotatingFile.checkCanOpen`); another process may
        // have taken it since, and then the old file stays. The same lock file under another
        // spelling keeps the lock held.
        var newLock: LogLocationLock?
        if !condition.withLock({ locationLock?.holds(newLayout) ?? false }) {
            do throws(LogIOError) {
                newLock = try LogLocationLock(newLayout, fileSystem: LogFileSystem(faults: faults))
            } catch {
                failures.append(error)
                return
            }
        }
        do { try file.sync() } catch { failures.append(error) }
        file.close()
        if let newLock {
            condition.withLock {
                locationLock?.release()
                locationLock = newLock
            }
        }
        file = RotatingFile(settings: settings, clock: clock, archiver: archiver, faults: faults)
        do { try file.open() } catch { failures.append(error) }
    }

    /// Writes the batches straight from their buffers in chunks of whole lines that fit both
    /// `batchBytes` and the room left before a size rotation, a pending loss record first.
    /// After a failure the rest is dropped and counted: retrying it would only delay the
    /// records queued behind it.
    private func writeBatch(_ batches: [RecordBatch], failures: inout [LogIOError]) -> (written: Int, lost: Int) {
        var written = 0
        retryAfterFailure = false
        let total = batches.reduce(0) { $0 + $1.count }
        if unreportedLoss > 0 {
            let reported = unreportedLoss
            do {
                try file.write(lossRecord(count: reported) + [UInt8(ascii: "\n")])
                unreportedLoss -= reported
                if unreportedLoss == 0 { lossReasons = [] }
            } catch {
                failures.append(error)
                return fail(dropping: total, error: error)
            }
        }
        for (b, batch) in batches.enumerated() {
            var index = 0
            while index < batch.count {
                let limit = min(file.settings.batchBytes, file.roomBeforeRotation())
                let first = index
                let start = batch.start(of: first)
                index += 1  // at least one line, even one longer than the limit
                while index < batch.count && batch.ends[index] - start <= limit { index += 1 }
                let end = batch.ends[index - 1]
                let failure = batch.withUnsafeBytes { raw -> LogIOError? in
                    do throws(LogIOError) {
                        try file.write(UnsafeRawBufferPointer(rebasing: raw[start..<end]))
                        return nil
                    } catch {
                        return error
                    }
                }
                if let failure {
                    failures.append(failure)
                    let remaining = batch.count - first + batches[(b + 1)...].reduce(0) { $0 + $1.count }
                    let (_, dropped) = fail(dropping: remaining, error: failure)
                    return (written, dropped)
                }
                written += index - first
            }
        }
        return (written, 0)
    }

    /// Counts `dropped` records lost after a failed write; they go into the next loss record.
    private func fail(dropping dropped: Int, error: LogIOError) -> (written: Int, lost: Int) {
        unreportedLoss += dropped
        noteReason(error.shortReason)
        retryAfterFailure = true
        return (0, dropped)
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
