import CGlibcExtensions
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Compresses rotated files and enforces retention on its own thread, so a 64 MiB deflate never
/// holds up the writer. Jobs run one at a time in the order they were queued, which keeps
/// retention from racing a compression.
public final class LogArchiver: @unchecked Sendable {
    enum Job {
        /// Compress one freshly rotated file, then apply retention.
        case compress(path: String, layout: LogFileLayout, maxFiles: Int)
        /// Apply retention only (compression is off).
        case retain(layout: LogFileLayout, maxFiles: Int)
        /// After a crash or restart: drop stale .gz.tmp, finish interrupted compressions.
        case recover(layout: LogFileLayout, compress: Bool, maxFiles: Int)
    }

    private let condition = NSCondition()
    private var jobs: [Job] = []
    private var running = false
    private var stopping = false
    private var threadStarted = false
    private var threadFinished = false
    private var failureCount = 0
    private var lastFailureText: String?
    private let fileSystem: LogFileSystem

    public init(faults: LogFaultInjector? = nil) {
        fileSystem = LogFileSystem(faults: faults)
    }

    /// Failed compressions or deletions so far; a failed compression leaves the plain file for
    /// the next start to retry.
    public var failures: Int { condition.withLock { failureCount } }
    public var lastFailure: String? { condition.withLock { lastFailureText } }

    func enqueue(_ job: Job) {
        condition.lock()
        defer { condition.unlock() }
        if stopping {
            return
        }
        jobs.append(job)
        if !threadStarted {
            threadStarted = true
            let thread = Thread { [self] in
                _ = tapwire_name_current_thread("tapwire-archive")
                run()
            }
            thread.start()
        }
        condition.broadcast()
    }

    /// Blocks until every job queued so far has finished.
    public func waitUntilIdle() {
        condition.lock()
        while !jobs.isEmpty || running { condition.wait() }
        condition.unlock()
    }

    /// Finishes the queued jobs, then ends the thread; later jobs are ignored (the next start's
    /// recovery picks up whatever is left).
    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while threadStarted && !threadFinished { condition.wait() }
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                threadFinished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            running = true
            condition.unlock()

            let failures = perform(job)

            condition.lock()
            running = false
            failureCount += failures.count
            if let last = failures.last { lastFailureText = last.description }
            condition.broadcast()
            condition.unlock()
        }
    }

    private func perform(_ job: Job) -> [LogIOError] {
        var failures: [LogIOError] = []
        switch job {
        case .compress(let path, let layout, let maxFiles):
            do { try compress(path, directory: layout.directory) } catch { failures.append(error) }
            failures += retain(layout, maxFiles: maxFiles)
        case .retain(let layout, let maxFiles):
            failures += retain(layout, maxFiles: maxFiles)
        case .recover(let layout, let compress, let maxFiles):
            // Files rotated since the recovery was queued have their own compress job waiting:
            // recovery leaves them to it (it compressed them first, and a failure counted twice).
            let queued = condition.withLock {
                Set(jobs.compactMap { job -> String? in
                    if case .compress(let path, _, _) = job { return path }
                    return nil
                })
            }
            failures += recover(layout, compress: compress, skipping: queued)
            failures += retain(layout, maxFiles: maxFiles)
        }
        return failures
    }

    /// `<path>.gz.tmp` → fsync → rename to `.gz` → fsync directory → only then unlink the plain
    /// file: at every instant a complete copy of the records exists under some name.
    private func compress(_ path: String, directory: String) throws(LogIOError) {
        guard fileSystem.exists(path) else { return }  // retention removed it first
        let temporary = path + ".gz.tmp"
        let final = path + ".gz"
        do {
            try Gzip.compressFile(path, to: temporary, fileSystem: fileSystem)
            try fileSystem.rename(temporary, final)
            try fileSystem.syncDirectory(directory)
        } catch {
            _ = Glibc.unlink(temporary)
            throw error
        }
        try fileSystem.unlink(path)
        try? fileSystem.syncDirectory(directory)
    }

    private func recover(_ layout: LogFileLayout, compress: Bool, skipping queued: Set<String>) -> [LogIOError] {
        var failures: [LogIOError] = []
        let entries = fileSystem.listDirectory(layout.directory).compactMap(layout.parseRotated)
        let completed = Set(entries.filter { $0.compressed && !$0.temporary }.map(\.baseName))
        for entry in LogFileLayout.oldestFirst(entries) {
            let path = layout.directory + "/" + entry.name
            if queued.contains(path) { continue }
            do {
                if entry.temporary {
                    try fileSystem.unlink(path)
                } else if !entry.compressed && completed.contains(entry.name) {
                    // Crashed between the .gz rename and the unlink: the .gz is whole.
                    try fileSystem.unlink(path)
                } else if !entry.compressed && compress {
                    try self.compress(path, directory: layout.directory)
                }
            } catch {
                failures.append(error)
            }
        }
        return failures
    }

    private func retain(_ layout: LogFileLayout, maxFiles: Int) -> [LogIOError] {
        let files = layout.rotatedFiles()
        guard files.count > maxFiles else { return [] }
        var failures: [LogIOError] = []
        for file in files.prefix(files.count - max(maxFiles, 0)) {
            do {
                try fileSystem.unlink(layout.directory + "/" + file.name)
                if file.compressed {
                    // A plain twin may still exist if a crash interrupted the unlink.
                    try fileSystem.unlink(layout.directory + "/" + file.baseName)
                }
            } catch {
                failures.append(error)
            }
        }
        try? fileSystem.syncDirectory(layout.directory)
        return failures
    }
}
