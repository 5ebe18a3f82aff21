import ExchangeLog
#if canImport(Glibc)
import Glibc
#endif

/// The lines of one log, oldest first: every rotated file (plain or .gz, by name stamp), then the
/// active file. Files are read one at a time in 64 KiB chunks, so memory stays flat whatever the log's size.
///
/// The active file may end in half a line (the writer is mid-write); that line is never returned.
/// With `follow`, the source waits at the end of the active file for more complete lines and
/// survives rotation: when the active path names a new file (another inode) the old file is read to
/// its end first, then the new one from its start; a file that shrank in place is read again from 0.
public final class RecordSource {
    public let layout: LogFileLayout
    public let follow: Bool
    /// Called whenever a followed source has caught up; returns false to stop (nextLine() then
    /// returns nil). The default sleeps `pollInterval` and asks `shouldStop`.
    private let wait: () -> Bool

    private var pendingPaths: [String] = []
    /// When set, a rotated file that fails while it is read (corrupt or cut-short gzip) is
    /// reported here and left, with the lines read from it before the failure; the source goes
    /// on with the next file. Unset, the failure is thrown, as `tail` and `query` want.
    public var skipsUnreadableRotatedFile: ((LogReadError) -> Void)?
    private var started = false
    private var finished = false
    private var current: LogFileReader?
    private var currentIsActive = false
    /// The active file's identity when it was opened, to spot rotation.
    private var activeIdentity: (device: UInt64, inode: UInt64)?
    private var buffer: [UInt8] = []
    private var scanFrom = 0
    private var lineStart = 0

    /// - Parameters:
    ///   - directory: the log directory (as configured; relative paths resolve against the working directory).
    ///   - fileName: the active file's name (`log.fileName`).
    ///   - follow: keep waiting for new records after the end (`tail --follow`).
    ///   - pollInterval: seconds between checks for new data while following.
    ///   - shouldStop: asked after every poll; true ends a followed source (e.g. after SIGINT).
    public convenience init(directory: String, fileName: String = "tapwire.jsonl", follow: Bool = false,
                            pollInterval: Double = 0.2, shouldStop: @escaping () -> Bool = { false }) {
        let resolved = LogSettings(directory: directory, fileName: fileName).resolvedDirectory
        self.init(layout: LogFileLayout(directory: resolved, fileName: fileName), follow: follow,
                  wait: RecordSource.sleepingWait(pollInterval: pollInterval, shouldStop: shouldStop))
    }

    /// The log a config file's `log` object describes.
    public convenience init(settings: LogSettings, follow: Bool = false, pollInterval: Double = 0.2,
                            shouldStop: @escaping () -> Bool = { false }) {
        self.init(layout: LogFileLayout(settings: settings), follow: follow,
                  wait: RecordSource.sleepingWait(pollInterval: pollInterval, shouldStop: shouldStop))
    }

    /// - Parameter wait: called each time a followed source has caught up with the active file; it
    ///   should pause (or, in tests, change the files) and return false to stop.
    public init(layout: LogFileLayout, follow: Bool = false, wait: @escaping () -> Bool) {
        self.layout = layout
        self.follow = follow
        self.wait = wait
    }

    public static func sleepingWait(pollInterval: Double, shouldStop: @escaping () -> Bool) -> () -> Bool {
        {
            if shouldStop() { return false }
            let micros = max(0, pollInterval) * 1_000_000
            usleep(UInt32(min(micros, Double(UInt32.max))))
            return !shouldStop()
        }
    }

    /// Calls `body` with every complete line (without its newline), in order, until the source ends.
    public func forEachLine(_ body: ([UInt8]) throws -> Void) throws {
        while let line = try nextLine() { try body(line) }
    }

    /// The next complete line, without its `\n`; nil when the log is read (or, following, when
    /// `wait` said stop). Empty lines are skipped.
    public func nextLine() throws(LogReadError) -> [UInt8]? {
        if !started { try start() }
        while !finished {
            if let line = takeLine() {
                if line.isEmpty { continue }
                return line
            }
            guard let reader = current else {
                try openNext()
                continue
            }
            compactBuffer()
            let got: Int
            do {
                got = try reader.read(into: &buffer)
            } catch {
                guard !currentIsActive, let skip = skipsUnreadableRotatedFile else { throw error }
                skip(error)
                _ = takeRest()   // a line cut by the failure is no record
                closeCurrent()
                continue
            }
            if got > 0 { continue }
            // At the current end of this file.
            if !currentIsActive {
                // Rotated files hold whole lines only; a last line without `\n` is still a record.
                let rest = takeRest()
                closeCurrent()
                if let rest, !rest.isEmpty { return rest }
                continue
            }
            if !follow {
                // The live end of the active file: a partial line is not a record yet.
                closeCurrent()
                finished = true
                return nil
            }
            switch try checkRotation() {
            case .unchanged:
                if !wait() {
                    closeCurrent()
                    finished = true
                    return nil
                }
            case .moreData, .truncated:
                continue
            case .switched(let rest):
                if let rest, !rest.isEmpty { return rest }
            }
        }
        return nil
    }

    // MARK: Files

    private func start() throws(LogReadError) {
        started = true
        try RecordSource.checkDirectory(layout.directory)
        // The active file is opened before the rotated files are listed: a rotation in between
        // then shows up as a listed file with the active file's inode, which is skipped here and
        // read through the open descriptor instead, so no record is lost or read twice.
        let active = try RecordSource.openActive(layout.activePath)
        let rotated = rotatedFiles(excludingFileOf: active)
        pendingPaths = rotated.map { layout.directory + "/" + $0.name } + [layout.activePath]
        seenRotated = Set(rotated.map(\.baseName))
        preopenedActive = active
    }

    /// A readable directory, or the error `tail` / `query` print.
    static func checkDirectory(_ directory: String) throws(LogReadError) {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw LogReadError.errno(directory, "cannot read log directory", errno)
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw LogReadError(path: directory, message: "not a directory")
        }
        // Listing it would otherwise give nothing, and the command print nothing and exit 0
        // (a user without read access to /var/log/tapwire).
        guard access(directory, R_OK | X_OK) == 0 else {
            throw LogReadError.errno(directory, "cannot read log directory", errno)
        }
    }

    /// Rotated files oldest first, without the one that is `reader`'s file (renamed since it was opened).
    private func rotatedFiles(excludingFileOf reader: PlainFileReader?) -> [LogFileLayout.RotatedFile] {
        let opened = reader?.status()
        return layout.rotatedFiles().filter { file in
            guard let opened, let other = RecordSource.identity(of: layout.directory + "/" + file.name) else { return true }
            return other.device != opened.device || other.inode != opened.inode
        }
    }

    private var preopenedActive: PlainFileReader?
    /// Rotated files (by base name) that existed when the active file was opened: any others
    /// found at rotation were rotated since, and are read before the new active file.
    private var seenRotated: Set<String> = []

    private func openNext() throws(LogReadError) {
        guard !pendingPaths.isEmpty else {
            finished = true
            return
        }
        let path = pendingPaths.removeFirst()
        buffer.removeAll(keepingCapacity: true)
        scanFrom = 0
        lineStart = 0
        if path == layout.activePath && pendingPaths.isEmpty {
            if let preopened = preopenedActive {
                preopenedActive = nil
                adoptActive(preopened)
                return
            }
            if let reader = try RecordSource.openActive(path) {
                adoptActive(reader)
                if follow { seenRotated = Set(rotatedFiles(excludingFileOf: reader).map(\.baseName)) }
                return
            }
            if !follow {
                finished = true
                return
            }
            // No active file yet (writer not started, or between rename and create): wait for it.
            if !wait() {
                finished = true
                return
            }
            pendingPaths.append(path)
            return
        }
        do {
            current = try RecordSource.openRotated(path)
            currentIsActive = false
        } catch {
            // The archiver may have compressed and removed the plain file since it was listed.
            if !path.hasSuffix(".gz"), let gz = try? GzipFileReader(path: path + ".gz") {
                current = gz
                currentIsActive = false
            } else if access(path, F_OK) != 0 && errno == ENOENT && (path.hasSuffix(".gz") || access(path + ".gz", F_OK) != 0) {
                // Retention deleted it since it was listed: its records are gone by design, and
                // the export goes on with the next file instead of ending half-written.
                return
            } else {
                throw error
            }
        }
    }

    /// The active file, or nil when there is none (yet: between a rotation's rename and the
    /// new file, or before the writer started). Any other failure, such as no permission, is
    /// an error naming the file, not an empty log.
    static func openActive(_ path: String) throws(LogReadError) -> PlainFileReader? {
        do {
            return try PlainFileReader(path: path)
        } catch {
            if access(path, F_OK) != 0 && errno == ENOENT { return nil }
            throw error
        }
    }

    /// How many records a rotated file holds (its lines, a last one without `\n` included),
    /// read through once, plain or .gz (also when compressed since it was listed); nil when
    /// it is gone or unreadable.
    public static func lineCount(ofRotated path: String) -> Int? {
        guard let reader = try? LogSnapshot.open(rotated: path) else { return nil }
        defer { reader.close() }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 16)
        var count = 0
        var endsWithNewline = true
        while true {
            buffer.removeAll(keepingCapacity: true)
            guard let n = try? reader.read(into: &buffer) else { return nil }
            if n == 0 { break }
            for byte in buffer where byte == 10 { count += 1 }
            endsWithNewline = buffer.last == 10
        }
        return endsWithNewline ? count : count + 1
    }

    static func openRotated(_ path: String) throws(LogReadError) -> LogFileReader {
        path.hasSuffix(".gz") ? try GzipFileReader(path: path) : try PlainFileReader(path: path)
    }

    private func adoptActive(_ reader: PlainFileReader) {
        current = reader
        currentIsActive = true
        if let status = reader.status() {
            activeIdentity = (status.device, status.inode)
        } else {
            activeIdentity = nil
        }
    }

    private func closeCurrent() {
        current?.close()
        current = nil
        currentIsActive = false
        activeIdentity = nil
    }

    private enum ActiveFileChange {
        case unchanged
        /// Bytes were appended (to the old file, just rotated away) since the last read.
        case moreData
        case truncated
        /// The active path is a new file; `rest` is the old file's last line if it lacked `\n`.
        case switched(rest: [UInt8]?)
    }

    /// At the end of the followed active file: has the active path moved on to a new file, or
    /// has this one been truncated?
    private func checkRotation() throws(LogReadError) -> ActiveFileChange {
        guard let reader = current as? PlainFileReader else { return .unchanged }
        if let status = reader.status(), status.size < reader.currentOffset() {
            // Truncated in place (copytruncate): everything now in it is new.
            reader.rewind()
            buffer.removeAll(keepingCapacity: true)
            scanFrom = 0
            lineStart = 0
            return .truncated
        }
        guard let now = RecordSource.identity(of: layout.activePath), let opened = activeIdentity,
              now.device != opened.device || now.inode != opened.inode else { return .unchanged }
        // Rotated: lines written to the old file after our last read come first.
        compactBuffer()
        if try reader.read(into: &buffer) > 0 { return .moreData }
        let rest = takeRest()
        // The new active file is opened now, before the listing, as `start` does: opened only
        // after the newer rotated files were read, it could itself have been rotated by then,
        // and its records were skipped (its rotated name was counted as seen). A rotation
        // after this point shows up as a listed file with its inode, excluded here and read
        // through the descriptor.
        let active = try RecordSource.openActive(layout.activePath)
        let listed = rotatedFiles(excludingFileOf: active)
        // Several rotations may have happened since the last poll: the oldest new rotated file is
        // the one just finished through the descriptor, the others are still to be read.
        var newer = listed.filter { !seenRotated.contains($0.baseName) }
        if let first = newer.first {
            let other = RecordSource.identity(of: layout.directory + "/" + first.name)
            let isOldFile = first.compressed || other == nil
                || (other?.device == opened.device && other?.inode == opened.inode)
            if isOldFile { newer.removeFirst() }
        }
        seenRotated = Set(listed.map(\.baseName))
        closeCurrent()
        preopenedActive = active
        pendingPaths = newer.map { layout.directory + "/" + $0.name } + [layout.activePath]
        return .switched(rest: rest)
    }

    public static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    // MARK: Lines

    private func takeLine() -> [UInt8]? {
        let from = scanFrom
        let found: Int? = buffer.withUnsafeBufferPointer { bytes in
            guard let base = bytes.baseAddress, from < bytes.count,
                  let hit = memchr(base + from, 10, bytes.count - from) else { return nil }
            return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
        }
        guard let newline = found else {
            scanFrom = buffer.count
            return nil
        }
        var end = newline
        if end > lineStart && buffer[end - 1] == 13 { end -= 1 }
        let line = Array(buffer[lineStart..<end])
        lineStart = newline + 1
        scanFrom = lineStart
        return line
    }

    private func takeRest() -> [UInt8]? {
        guard lineStart < buffer.count else { return nil }
        let rest = Array(buffer[lineStart...])
        buffer.removeAll(keepingCapacity: true)
        scanFrom = 0
        lineStart = 0
        return rest
    }

    /// Drops returned lines from the front before reading more, so the buffer holds at most one
    /// chunk plus one partial line.
    private func compactBuffer() {
        guard lineStart > 0 else { return }
        buffer.removeFirst(lineStart)
        scanFrom -= lineStart
        lineStart = 0
    }
}
