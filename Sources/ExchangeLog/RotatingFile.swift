import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Seconds since 1970 (UTC); injectable so tests can cross rotation boundaries without waiting.
public typealias LogClock = @Sendable () -> Double

public enum SystemLogClock {
    public static let now: LogClock = {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1_000_000_000
    }
}

/// The active log file `<directory>/<fileName>`, opened O_APPEND, rotated by size and time.
/// Not thread-safe: one owner (the writer thread) calls it. Rotated files go to a `LogArchiver`
/// for compression and retention.
public final class RotatingFile {
    public private(set) var settings: LogSettings
    public let layout: LogFileLayout
    /// Bytes in the active file as far as this process knows.
    public private(set) var size: Int = 0
    public private(set) var rotations: Int = 0
    /// Non-fatal failures (a rotation that could not rename, an fsync), newest last.
    public private(set) var lastError: LogIOError?
    /// Failures that did not stop writing (rename during rotation, fsync), counted for metrics.
    public private(set) var absorbedErrors = 0
    public var activePath: String { layout.activePath }
    public var isOpen: Bool { fd >= 0 }

    private var fd: Int32 = -1
    private var period: Int64?
    /// The file ends in a partial line (crash, or a failed write that could not be cut back):
    /// the next write starts with a newline so the records after it stay whole.
    private var needsLineBreak = false
    private var unsynced = false
    private var lastRotated: (stamp: String, suffix: Int)?
    private let clock: LogClock
    private let fileSystem: LogFileSystem
    public let archiver: LogArchiver
    private let ownsArchiver: Bool

    /// Does not touch the disk until `open()` or the first `write`, except to queue crash
    /// recovery (stale `.gz.tmp`, uncompressed rotated files) on the archiver.
    /// - Parameter recover: false for a writer that never writes (`log.enabled: false`).
    public init(settings: LogSettings, clock: @escaping LogClock = SystemLogClock.now,
                archiver: LogArchiver? = nil, faults: LogFaultInjector? = nil, recover: Bool = true) {
        self.settings = settings
        self.layout = LogFileLayout(settings: settings)
        self.clock = clock
        self.fileSystem = LogFileSystem(faults: faults)
        self.archiver = archiver ?? LogArchiver(faults: faults)
        self.ownsArchiver = archiver == nil
        if recover {
            self.archiver.enqueue(.recover(layout: layout, compress: settings.compress, maxFiles: settings.maxFiles))
        }
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Creates the directory `settings` name if needed and opens (then closes) their active
    /// file: SIGHUP checks a new log location this way before switching to it, since the
    /// writer closes the old file first and a location it cannot open would lose every
    /// record until the next reload.
    /// - Parameter lockHeld: this process's writer holds the location's lock already
    ///   (`LogWriter.holdsLock`); taking it again would conflict with itself.
    public static func checkCanOpen(_ settings: LogSettings, lockHeld: Bool = false) throws(LogIOError) {
        let layout = LogFileLayout(settings: settings)
        let fileSystem = LogFileSystem(faults: nil)
        try fileSystem.makeDirectories(layout.directory)
        // Taken and dropped at once: the writer takes it again when it switches.
        if !lockHeld { try LogLocationLock(layout, fileSystem: fileSystem).release() }
        Glibc.close(try fileSystem.openAppend(layout.activePath))
    }

    /// Creates the directory if needed and opens the active file.
    public func open() throws(LogIOError) {
        guard fd < 0 else { return }
        try fileSystem.makeDirectories(layout.directory)
        let newFD = try fileSystem.openAppend(activePath)
        var status = stat()
        guard fstat(newFD, &status) == 0 else {
            let code = errno
            Glibc.close(newFD)
            throw LogIOError(.open, activePath, code: code)
        }
        fd = newFD
        size = Int(status.st_size)
        needsLineBreak = size > 0 && !endsWithNewline(size: size)
        // A file left from before a restart belongs to the period it was last written in.
        let reference = size > 0 ? Double(status.st_mtim.tv_sec) : clock()
        period = settings.rotateInterval.period(containing: reference)
    }

    /// Appends `bytes`, which must be whole lines. Rotates first when they would take the file
    /// past `maxFileBytes` or a time boundary has passed, so a line is never split across files.
    /// On failure nothing of `bytes` stays in the file (when the file system allows cutting it
    /// back), the descriptor is closed, and the next call opens the file again.
    public func write(_ bytes: [UInt8]) throws(LogIOError) {
        let failure = bytes.withUnsafeBytes { raw -> LogIOError? in
            do throws(LogIOError) { try write(raw); return nil } catch { return error }
        }
        if let failure { throw failure }
    }

    /// As `write(_: [UInt8])`, from memory the caller owns (a slice of a record batch).
    public func write(_ bytes: UnsafeRawBufferPointer) throws(LogIOError) {
        guard !bytes.isEmpty else { return }
        if fd < 0 { try open() }
        try rotateIfDue(adding: bytes.count + (needsLineBreak ? 1 : 0))
        if fd < 0 { try open() }
        if needsLineBreak {
            var lineBreak = UInt8(ascii: "\n")
            try withUnsafeBytes(of: &lineBreak) { (raw: UnsafeRawBufferPointer) throws(LogIOError) in try writeBytes(raw) }
            needsLineBreak = false
        }
        try writeBytes(bytes)
    }

    private func writeBytes(_ raw: UnsafeRawBufferPointer) throws(LogIOError) {
        var written = 0
        do throws(LogIOError) {
            try fileSystem.writeAll(fd, raw, path: activePath, written: &written)
        } catch {
            if written > 0 {
                var status = stat()
                if fstat(fd, &status) == 0, ftruncate(fd, status.st_size - off_t(written)) == 0 {
                    size = Int(status.st_size) - written
                } else {
                    needsLineBreak = true
                }
            }
            lastError = error
            // Records written before the failure are counted as written; shutdown's flush
            // fsyncs only an open file, and this one is about to be closed.
            if unsynced || written > 0 { try? fileSystem.sync(fd, path: activePath) }
            closeDescriptor()
            throw error
        }
        size += raw.count
        unsynced = true
    }

    /// Bytes that still fit before a size rotation (the whole limit when the next write rotates
    /// anyway); the writer sizes its batches with it.
    public func roomBeforeRotation() -> Int {
        guard fd >= 0, size > 0 else { return settings.maxFileBytes }
        if let period, let now = settings.rotateInterval.period(containing: clock()), now != period {
            return settings.maxFileBytes
        }
        let room = settings.maxFileBytes - size
        return room > 0 ? room : settings.maxFileBytes
    }

    /// Rotates when `adding` more bytes would pass the size limit or the time period ended.
    /// A rotation that cannot rename keeps appending to the current file rather than lose records.
    public func rotateIfDue(adding: Int = 0) throws(LogIOError) {
        guard fd >= 0, size > 0 else { return }
        let now = clock()
        let intervalDue = period.map { current in
            settings.rotateInterval.period(containing: now).map { $0 != current } ?? false
        } ?? false
        guard intervalDue || size + adding > settings.maxFileBytes else { return }
        do {
            try rotate(now: now)
        } catch where fd >= 0 {
            absorb(error)
            // Try again at the next period rather than on every write.
            period = settings.rotateInterval.period(containing: now)
        }
    }

    /// fsync (with `syncInterval`), rename to `<stem>-YYYYMMDDTHHMMSS<ext>` (UTC), reopen, hand the old file to the
    /// archiver. Throws with the file still open when the rename fails; throws with the file
    /// closed when the new file cannot be opened.
    public func rotate() throws(LogIOError) {
        if fd < 0 { try open() }
        try rotate(now: clock())
    }

    private func rotate(now: Double) throws(LogIOError) {
        // With compression and no periodic syncs asked for, not here: the plain file is read
        // from the page cache and deleted once its .gz is synced, so forcing it to disk first
        // wrote every byte of the log twice (64 KiB traffic: more than this disk takes).
        // Uncompressed, the rotated file is the archive: it goes to disk now, whole.
        if settings.syncInterval > 0 || !settings.compress {
            do { try fileSystem.sync(fd, path: activePath) } catch { absorb(error) }
        }
        var rotatedPath: String?
        if isStillActivePath() {
            let target = uniqueRotatedPath(now: now)
            // Claimed first: see `LogArchiver.claim`.
            if settings.compress { archiver.claim(target) }
            do throws(LogIOError) {
                try fileSystem.rename(activePath, target)
            } catch {
                if settings.compress { archiver.release(target) }
                throw error
            }
            rotatedPath = target
        }
        // else: someone renamed the file away (logrotate); its records are theirs now.
        closeDescriptor()
        do { try fileSystem.syncDirectory(layout.directory) } catch { absorb(error) }
        rotations += 1
        if let rotatedPath {
            if settings.compress {
                archiver.enqueue(.compress(path: rotatedPath, layout: layout, maxFiles: settings.maxFiles))
            } else {
                archiver.enqueue(.retain(layout: layout, maxFiles: settings.maxFiles))
            }
        }
        try open()
        period = settings.rotateInterval.period(containing: now)
    }

    /// Closes and reopens the active path without renaming (SIGUSR1, or logrotate's `create`
    /// having moved the file away).
    public func reopen() throws(LogIOError) {
        if fd >= 0 {
            do { try fileSystem.sync(fd, path: activePath) } catch { absorb(error) }
            closeDescriptor()
        }
        try open()
    }

    /// Makes everything written so far durable.
    public func sync() throws(LogIOError) {
        guard fd >= 0, unsynced else { return }
        try fileSystem.sync(fd, path: activePath)
        unsynced = false
    }

    public var hasUnsyncedData: Bool { fd >= 0 && unsynced }

    /// Applies new limits for the same directory and file name (SIGHUP).
    public func update(_ newSettings: LogSettings) {
        let recoverAgain = newSettings.compress != settings.compress || newSettings.maxFiles != settings.maxFiles
        let intervalChanged = newSettings.rotateInterval != settings.rotateInterval
        settings = newSettings
        if intervalChanged {
            period = newSettings.rotateInterval.period(containing: clock())
        }
        if recoverAgain {
            archiver.enqueue(.recover(layout: layout, compress: newSettings.compress, maxFiles: newSettings.maxFiles))
        }
    }

    /// fsyncs and closes the active file; stops the archiver if this file created it (after it
    /// finishes queued compressions).
    public func close() {
        if fd >= 0 {
            try? sync()
            closeDescriptor()
        }
        if ownsArchiver { archiver.stop() }
    }

    private func absorb(_ error: LogIOError) {
        lastError = error
        absorbedErrors += 1
    }

    private func closeDescriptor() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        unsynced = false
    }

    private func isStillActivePath() -> Bool {
        var open = stat()
        var named = stat()
        guard fstat(fd, &open) == 0, stat(activePath, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// A name that sorts after every rotated file of the same second, even ones retention has
    /// already deleted, so "oldest by name" stays "oldest".
    private func uniqueRotatedPath(now: Double) -> String {
        let stamp = RFC3339.basicStamp(secondsSince1970: now)
        var suffix = 0
        if let last = lastRotated, last.stamp == stamp { suffix = last.suffix + 1 }
        for entry in fileSystem.listDirectory(layout.directory).compactMap(layout.parseRotated)
        where entry.stamp == stamp {
            suffix = max(suffix, entry.suffix + 1)
        }
        defer { lastRotated = (stamp, suffix) }
        while true {
            let path = layout.directory + "/" + layout.rotatedName(stamp: stamp, suffix: suffix)
            if !fileSystem.exists(path) && !fileSystem.exists(path + ".gz") && !fileSystem.exists(path + ".gz.tmp") {
                return path
            }
            suffix += 1
        }
    }

    private func endsWithNewline(size: Int) -> Bool {
        let reader = Glibc.open(activePath, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else { return true }
        defer { Glibc.close(reader) }
        var last: UInt8 = 0
        return pread(reader, &last, 1, off_t(size - 1)) == 1 ? last == UInt8(ascii: "\n") : true
    }
}
