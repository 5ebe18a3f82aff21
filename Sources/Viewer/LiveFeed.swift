import CGlibcExtensions
import ExchangeLog
import Foundation
import LogTools
import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// New records for the live lists: one thread follows the active log file from its end (every
/// `viewer.pollInterval`), parses each new line once and hands its row to every
/// subscriber whose query keeps it (to a single list without a query, it hands over the lines,
/// made into rows only when taken: see `Subscriber.Queued`). The thread runs while anyone subscribes, at nice 19: a
/// viewer watching must not slow what it watches. At a few thousand exchanges a second that
/// costs the lists nothing; at full load their rows trail, reading at most `viewer.maxBytesPerLook`
/// bytes of the file per look, and a list never holds more than `viewer.maxQueuedRows` rows
/// (the older ones are a gap).
///
/// Rotation: when the active path names another file, the old one is read to its end first,
/// then the new one from its start, so no record written meanwhile is skipped. A feed that
/// fell further behind than one rotation (the file after the old one was rotated too) does
/// not read the files in between: their records, and the old file's last ones, are a gap,
/// which the lists fill in from the log.
final class LiveFeed: @unchecked Sendable {
    final class Subscriber {
        let query: Query
        /// Rows a look hands this list at most (`rows` of `/api/live`, at most `maxRowsPerLook`).
        let rowsPerLook: Int
        let maxQueuedRows: Int
        fileprivate let condition = NSCondition()
        /// A row, or a record line for a list without a query, made into its row only when the
        /// stream takes it: a paced stream (`every`) takes one look's rows in several under load,
        /// and a gap drops the others before anyone would read them. Only the last look's lines
        /// wait as lines (a later look makes those it keeps into rows, since they will be sent),
        /// and only lines up to `maxDeferredLineBytes`: a list holds at most `rowsPerLook` of them.
        enum Queued {
            case row([UInt8])
            case line([UInt8])
        }
        fileprivate var rows: [Queued] = []
        /// Rows left out since the last `take` (more than `maxRowsPerLook` in a look, or more
        /// than `maxQueuedRows` waiting).
        fileprivate var skipped = 0

        init(query: Query, rowsPerLook: Int, maxQueuedRows: Int) {
            self.query = query
            self.rowsPerLook = rowsPerLook
            self.maxQueuedRows = maxQueuedRows
        }

        /// Waits up to `timeout` seconds for rows or a gap; returns the rows (empty on timeout or
        /// a gap alone) and how many rows before them were left out.
        func take(timeout: Double) -> (rows: [[UInt8]], skipped: Int) {
            condition.lock()
            if rows.isEmpty && skipped == 0 { _ = condition.wait(until: Date(timeIntervalSinceNow: timeout)) }
            let taken = rows, left = skipped
            rows.removeAll()
            skipped = 0
            condition.unlock()
            // Outside the lock: the feed's next look does not wait for these rows to be made.
            var made: [[UInt8]] = []
            made.reserveCapacity(taken.count)
            for item in taken {
                switch item {
                case .row(let row): made.append(row)
                case .line(let line): if let row = LiveFeed.row(line) { made.append(row) }
                }
            }
            return (made, left)
        }

        /// One hand-over (one lock, one wake-up) per look at the file, however many rows;
        /// `skipped` rows older than the batch were left out.
        func offer(_ batch: [Queued], skipped left: Int) {
            condition.lock()
            if left > 0 {
                // The rows still queued are older than the gap: the list fills them in with it.
                skipped += rows.count + left
                rows.removeAll()
            }
            // Not taken for a while (a paced stream asleep, a browser that stopped reading): the
            // newest `maxQueuedRows` wait, the older ones become a gap, which the list fills in
            // from the log as it does any other, so the queue stays bounded. Dropped first, so
            // that no line is made into a row only to be dropped.
            let excess = rows.count + batch.count - maxQueuedRows
            var fromBatch = 0
            if excess > 0 {
                let fromQueue = min(excess, rows.count)
                rows.removeFirst(fromQueue)
                fromBatch = excess - fromQueue
                skipped += excess
            }
            // What is still queued will be sent: the previous look's lines become rows.
            rows = rows.compactMap { item in
                guard case .line(let line) = item else { return item }
                return LiveFeed.row(line).map(Queued.row)
            }
            rows += batch.dropFirst(fromBatch)
            condition.signal()
            condition.unlock()
        }
    }

    let layout: LogFileLayout
    private let lock = NSLock()
    private var subscribers: [ObjectIdentifier: Subscriber] = [:]
    private var running = false

    let settings: ViewerSettings
    /// Makes the follower of the active file (path, `maxBytesPerLook`); tests give their own.
    private let makeFollower: (String, Int) -> Follower

    init(layout: LogFileLayout, settings: ViewerSettings,
         follower makeFollower: @escaping (String, Int) -> Follower = { Follower(path: $0, maxBytesPerLook: $1) }) {
        self.layout = layout
        self.settings = settings
        self.makeFollower = makeFollower
    }

    /// `rowsPerLook` nil: `maxRowsPerLook`; never more than it.
    func subscribe(_ query: Query, rowsPerLook: Int? = nil) -> Subscriber {
        let perLook = max(1, min(rowsPerLook ?? settings.maxRowsPerLook, settings.maxRowsPerLook))
        let subscriber = Subscriber(query: query, rowsPerLook: perLook, maxQueuedRows: settings.maxQueuedRows)
        lock.lock()
        subscribers[ObjectIdentifier(subscriber)] = subscriber
        // The file's end is taken under the lock, before any other list can join and return:
        // rows written after any `subscribe` returns reach that subscriber.
        let follower = running ? nil : makeFollower(layout.activePath, settings.maxBytesPerLook)
        running = true
        lock.unlock()
        if let follower {
            // Linux thread names hold 15 bytes.
            Thread { [self] in
                _ = tapwire_name_current_thread("tapwire-live")
                follow(follower)
            }.start()
        }
        return subscriber
    }

    func unsubscribe(_ subscriber: Subscriber) {
        lock.lock()
        subscribers[ObjectIdentifier(subscriber)] = nil
        lock.unlock()
    }

    /// The lists and the new lines of one look, read under the lock `subscribe` takes: a list
    /// that joins during a look gets the lines of the next one, so every line written after
    /// `subscribe` returns reaches it. A join waits at most one read of `maxBytesPerLook`.
    private func look(_ follower: Follower) -> (subscribers: [Subscriber], lines: [ArraySlice<UInt8>])? {
        lock.lock()
        defer { lock.unlock() }
        if subscribers.isEmpty {
            running = false
            return nil
        }
        return (Array(subscribers.values), follower.newLines())
    }

    /// The longest record line a list holds unparsed (`Subscriber.Queued`); a longer one (a large
    /// body in the record) is made into its row at once, which is much smaller.
    static let maxDeferredLineBytes = 16 * 1024

    /// A record line's row: a row needs a few members only, which the skeleton finds stepping
    /// over headers and bodies (a fifth of the full parse's cost); nil for a line that is no record.
    static func row(_ line: [UInt8]) -> [UInt8]? {
        if let skeleton = RecordSkeleton.parse(line) { return RecordSummary.bytes(skeleton) }
        guard let record = try? JSONParser.parse(line, allowFragments: false) else { return nil }
        return RecordSummary.bytes(record)
    }

    /// How many nice steps the live stream's writer runs below the rest of the process.
    static let liveNice: Int32 = 10

    private func follow(_ follower: Follower) {
        // Nice 19, not SCHED_IDLE: parsing new records for the live lists yields to the proxy
        // (at full load the lists trail, and fill their gaps from the log), but is never starved
        // for seconds by a busy machine, as an idle-class thread can be.
        _ = tapwire_raise_thread_nice(tapwire_current_thread_id(), 19)
        while let (subscribers, lines) = look(follower) {
            // Outside the lock: counting may read whole rotated files.
            let passedOver = follower.passedOverRecords()
            var batches = [[Subscriber.Queued]](repeating: [], count: subscribers.count)
            // Lists without a query take every row: a single list gets the lines as they are,
            // made into rows when taken (`Subscriber.take`).
            let everyRow = subscribers.allSatisfy { $0.query.isEmpty }
            // At most `rowsPerLook` rows a look: lists without a query need only the newest lines
            // (as many as the widest list takes) made into rows; the others are counted as a gap.
            let widest = subscribers.map(\.rowsPerLook).max() ?? settings.maxRowsPerLook
            let first = everyRow ? max(0, lines.count - widest) : 0
            var skipped = [Int](repeating: first + passedOver, count: subscribers.count)
            for slice in lines[first...] {
                let line = Array(slice)
                if everyRow {
                    let item: Subscriber.Queued
                    // One list: its line waits. Several share one row made now, which each of
                    // them would otherwise make again.
                    if subscribers.count == 1 && line.count <= LiveFeed.maxDeferredLineBytes {
                        item = .line(line)
                    } else if let row = LiveFeed.row(line) {
                        item = .row(row)
                    } else {
                        continue
                    }
                    for i in batches.indices { batches[i].append(item) }
                    continue
                }
                guard let record = try? JSONParser.parse(line, allowFragments: false) else { continue }
                var row: [UInt8]?
                for (i, subscriber) in subscribers.enumerated() where subscriber.query.matches(record) {
                    let summary = row ?? RecordSummary.bytes(record)
                    row = summary
                    batches[i].append(.row(summary))
                }
            }
            for (i, subscriber) in subscribers.enumerated() {
                let limit = subscriber.rowsPerLook
                if batches[i].count > limit {
                    skipped[i] += batches[i].count - limit
                    batches[i].removeFirst(batches[i].count - limit)
                }
                if !batches[i].isEmpty || skipped[i] > 0 { subscriber.offer(batches[i], skipped: skipped[i]) }
            }
            usleep(UInt32(settings.pollInterval * 1_000_000))
        }
        follower.close()
    }

    /// The complete lines appended to a file since the last call, following renames.
    class Follower {
        let path: String
        let maxBytesPerLook: Int
        /// What the last `newLines` passed over, older than the lines it returned, after more
        /// than one rotation since the look before: the old file's rest (lines) and the files in
        /// between (paths, counted by `passedOverRecords`, which may read them whole).
        private var passedOverLines = 0
        private var passedOverFiles: [String] = []
        private var descriptor: Int32 = -1
        private var identity: (UInt64, UInt64)?
        private var offset: Int64 = 0
        private var partial: [UInt8] = []
        /// A line longer than `maxBytesPerLook` is being stepped over up to its end: it is no
        /// live row (the history shows it), and holding it whole would stop every look.
        private var skippingLongLine = false

        init(path: String, maxBytesPerLook: Int) {
            self.path = path
            self.maxBytesPerLook = maxBytesPerLook
            let slash = path.lastIndex(of: "/")
            layout = LogFileLayout(directory: slash.map { String(path[..<$0]) } ?? ".",
                                   fileName: slash.map { String(path[path.index(after: $0)...]) } ?? path)
            open(fromEnd: true)
        }

        private let layout: LogFileLayout

        /// The open (old) file's rotated name: the descriptor's link follows renames ("(deleted)"
        /// once compressed or removed). Nil when it has no rotated name (the active file deleted).
        private func rotatedNameOfOpenFile() -> LogFileLayout.RotatedFile? {
            var link = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink("/proc/self/fd/\(descriptor)", &link, link.count - 1)
            guard n > 0 else { return nil }
            var target = String(decoding: link[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if target.hasSuffix(" (deleted)") { target.removeLast(" (deleted)".count) }
            guard let name = target.split(separator: "/").last else { return nil }
            return layout.parseRotated(String(name))
        }

        /// How many records the last `newLines` passed over. A file in between that is gone
        /// (retention) or unreadable counts as one: the gap is known, its size is not.
        func passedOverRecords() -> Int {
            passedOverLines + passedOverFiles.reduce(0) { $0 + (RecordSource.lineCount(ofRotated: $1) ?? 1) }
        }

        private func open(fromEnd: Bool) {
            descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            partial = []
            skippingLongLine = false
            guard descriptor >= 0 else { identity = nil; offset = 0; return }
            var info = stat()
            fstat(descriptor, &info)
            identity = (UInt64(info.st_dev), UInt64(info.st_ino))
            offset = fromEnd ? Int64(info.st_size) : 0
        }

        /// Slices of one buffer: a line is copied only when it is made into a row.
        func newLines() -> [ArraySlice<UInt8>] {
            passedOverLines = 0
            passedOverFiles = []
            if descriptor < 0 { open(fromEnd: false); if descriptor < 0 { return [] } }
            var lines = readLines()
            // This file first, to its end (a look reads at most `maxBytesPerLook`).
            var own = stat()
            if fstat(descriptor, &own) == 0 && offset < Int64(own.st_size) { return lines }
            var info = stat()
            let renamed = stat(path, &info) != 0 || identity.map { $0 != (UInt64(info.st_dev), UInt64(info.st_ino)) } ?? true
            if renamed {
                // Rotated, and the old file read: its last line without `\n` is whole now.
                if !partial.isEmpty { lines.append(partial[...]) }
                let old = rotatedNameOfOpenFile()
                close()
                // The new active file is opened before the rotated files are listed: if it is
                // rotated too meanwhile, it is listed with its inode and left out (it is read
                // through the descriptor), so no file falls between the listing and the open.
                open(fromEnd: false)
                if let old {
                    let newer = layout.rotatedFiles().filter { file in
                        guard (file.stamp, file.suffix) > (old.stamp, old.suffix) else { return false }
                        guard let opened = identity, let other = RecordSource.identity(of: layout.directory + "/" + file.name) else { return true }
                        return (other.device, other.inode) != opened
                    }
                    if !newer.isEmpty {
                        // Rotated again since: the lines returned would have a hole after them.
                        passedOverLines = lines.count
                        passedOverFiles = newer.map { layout.directory + "/" + $0.name }
                        lines = []
                    }
                }
                if descriptor >= 0 { lines += readLines() }
            } else if Int64(info.st_size) < offset {
                // Truncated in place: everything in it is new.
                offset = 0
                partial = []
                skippingLongLine = false
                lines += readLines()
            }
            return lines
        }

        private func readLines() -> [ArraySlice<UInt8>] {
            // Read straight into one buffer sized to what the file has gained (the page cache's
            // copy is the only one): at full load that is tens of MB a second.
            var info = stat()
            let grown = fstat(descriptor, &info) == 0 ? max(0, Int(Int64(info.st_size) - offset)) : 0
            let want = min(grown, max(0, maxBytesPerLook - partial.count))
            let data = [UInt8](unsafeUninitializedCapacity: partial.count + want) { buffer, initialized in
                guard let base = buffer.baseAddress else { initialized = 0; return }
                partial.withUnsafeBufferPointer { if let p = $0.baseAddress { base.initialize(from: p, count: $0.count) } }
                var filled = partial.count
                while filled < partial.count + want {
                    let n = pread(descriptor, base + filled, partial.count + want - filled, off_t(offset))
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    filled += n
                    offset += Int64(n)
                }
                initialized = filled
            }
            var ranges: [Range<Int>] = []
            var start = 0
            data.withUnsafeBufferPointer { bytes in
                guard let base = bytes.baseAddress else { return }
                while start < bytes.count, let hit = memchr(base + start, 10, bytes.count - start) {
                    let end = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if end > start { ranges.append(start..<end) }
                    start = end + 1
                }
            }
            var lines = ranges.map { data[$0] }
            if skippingLongLine {
                // Up to the first line end (if any) is the rest of the long line.
                if start == 0 { partial = []; return [] }
                skippingLongLine = false
                // A line starting at the buffer's start is that rest (an empty rest has no range).
                if ranges.first?.lowerBound == 0 { lines.removeFirst() }
            }
            partial = Array(data[start...])
            if partial.count >= maxBytesPerLook {
                partial = []
                skippingLongLine = true
            }
            return lines
        }

        func close() {
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
        }
    }
}
