import ExchangeLog
#if canImport(Glibc)
import Glibc
#endif

/// The files of a log at one moment, oldest first: every rotated file, then the active file,
/// already open. `query` reads a snapshot; records written after it was taken are not part
/// of the answer (the active file is read up to its size at that moment), and none written
/// before it is lost or read twice while the log rotates:
///
/// - the active file is opened before the rotated files are listed, and after the listing the
///   active path must still name the opened file; otherwise a rotation came in between (and
///   the archiver may already have compressed the rotated file into a .gz with a new inode,
///   which the listing would show beside the open descriptor: every record twice), so the
///   snapshot is taken again, up to `maxAttempts` times;
/// - on the last attempt a rotation in between shows up as a listed file with the active
///   file's inode, left out of the list and read through the open descriptor;
/// - a rotated file compressed since it was listed (`x.jsonl` became `x.jsonl.gz`) is read as
///   the .gz; one deleted by retention since is skipped (its records are gone by design).
final class LogSnapshot {
    enum Segment {
        case rotated(path: String)
        /// The active file and its size when the snapshot was taken: bytes appended since are
        /// not read.
        case active(PlainFileReader, size: Int64)
    }

    let layout: LogFileLayout
    /// Oldest first.
    let segments: [Segment]

    /// How many times a snapshot is taken before settling for one the active file rotated
    /// during: each take is a few system calls while rotations are seconds apart, so a second
    /// take almost always settles it.
    static let maxAttempts = 8

    /// `beforeListing` runs between opening the active file and listing the rotated ones (tests
    /// rotate the log there).
    init(layout: LogFileLayout, beforeListing: () -> Void = {}) throws(LogReadError) {
        self.layout = layout
        try RecordSource.checkDirectory(layout.directory)
        var attempt = 0
        var active: PlainFileReader?
        var opened: (device: UInt64, inode: UInt64, size: Int64)?
        var files: [LogFileLayout.RotatedFile] = []
        while true {
            attempt += 1
            active = try RecordSource.openActive(layout.activePath)
            opened = active?.status()
            beforeListing()
            files = layout.rotatedFiles()
            guard let opened, attempt < LogSnapshot.maxAttempts else { break }
            let current = RecordSource.identity(of: layout.activePath)
            if let current, current.device == opened.device, current.inode == opened.inode { break }
        }
        let rotated = files.filter { file in
            guard let opened, let other = RecordSource.identity(of: layout.directory + "/" + file.name) else { return true }
            return other.device != opened.device || other.inode != opened.inode
        }
        var segments: [Segment] = rotated.map { .rotated(path: layout.directory + "/" + $0.name) }
        if let active { segments.append(.active(active, size: opened?.size ?? 0)) }
        self.segments = segments
    }

    /// Opens a rotated file; nil when retention deleted it since the listing.
    static func open(rotated path: String) throws(LogReadError) -> LogFileReader? {
        do {
            return try RecordSource.openRotated(path)
        } catch {
            if !path.hasSuffix(".gz"), let gz = try? GzipFileReader(path: path + ".gz") { return gz }
            if access(path, F_OK) != 0 && errno == ENOENT && (path.hasSuffix(".gz") || access(path + ".gz", F_OK) != 0) {
                return nil
            }
            throw error
        }
    }
}
