import CGlibcExtensions
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Compresses rotated files and enforces retention on its own thread, so a 64 MiB deflate never
/// holds up the writer. Jobs run one at a time in the order they were queued, which keeps
/// retention from racing a compression.
///
/// The deflating itself runs in steps on an idle-priority thread (`IdlePriorityThread`): it
/// costs about a microsecond a small record, CPU that the loops and workers of a busy proxy
/// lack, and it can wait for idle time. The archiver runs the steps itself, at normal
/// priority, once it is behind: another rotated file is queued behind the one in progress
/// (so at most about two plain files wait), or it is stopping. A step already handed to the
/// idle thread is then abandoned rather than awaited (a starved idle-class thread can wait
/// seconds for the CPU): the file is compressed again from its start into a new temporary
/// file, and the abandoned step writes at most one more chunk into the unlinked old one.
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
    /// Rotated files whose compress job is on its way (see `claim`).
    private var claimed: Set<String> = []
    private var running = false
    private var stopping = false
    private var threadStarted = false
    private var threadFinished = false
    private var failureCount = 0
    private var lastFailureText: String?
    private let fileSystem: LogFileSystem
    private let deflater = IdlePriorityThread(name: "tapwire-deflate")
    /// Tests: called after each compression step, with whether it ran at idle priority
    /// (`nil`: an idle-priority step was abandoned). Set before the first `enqueue`, which
    /// starts the thread that reads it.
    var stepHook: (@Sendable (_ idlePriority: Bool?) -> Void)?
    /// How often the archiver checks whether it fell behind while an idle-priority step runs.
    private let behindCheckInterval = 0.05

    public init(faults: LogFaultInjector? = nil) {
        fileSystem = LogFileSystem(faults: faults)
    }

    /// Failed compressions or deletions so far; a failed compression leaves the plain file for
    /// the next start to retry.
    public var failures: Int { condition.withLock { failureCount } }
    public var lastFailure: String? { condition.withLock { lastFailureText } }

    /// Called before a file is renamed to `path` to be compressed (its job is enqueued after
    /// the rename): recovery leaves the file to that job even when it lists the directory
    /// between the two. Without the claim, a start-up recovery could compress the new file
    /// and then its own job would again (with a failing disk, one failure counted twice).
    func claim(_ path: String) {
        condition.withLock { _ = claimed.insert(path) }
    }

    /// The rename after `claim` failed: no job comes.
    func release(_ path: String) {
        condition.withLock { _ = claimed.remove(path) }
    }

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
        deflater.stop()
    }

    private enum IdleStep {
        /// The step ran at idle priority: whether the file is done.
        case ran(Bool)
        case failed(LogIOError)
        /// The archiver fell behind while it waited: the compressor is left to the idle thread.
        case abandoned
        /// The idle thread is still busy with an abandoned step: run this one here.
        case unavailable
    }

    private func idleStep(_ compressor: GzipFileCompressor) -> IdleStep {
        let outcome = StepOutcome()
        guard deflater.tryStart({ outcome.set(Result { () throws(LogIOError) in try compressor.step() }) }) else {
            return .unavailable
        }
        while !deflater.waitUntilDone(timeout: behindCheckInterval) {
            if behind {
                compressor.cancel()
                return .abandoned
            }
        }
        switch outcome.value {
        case .success(let done)?: return .ran(done)
        case .failure(let error)?: return .failed(error)
        case nil: return .unavailable  // not reached: the work sets it before finishing
        }
    }

    /// Whether compression should stop waiting for idle time: another rotated file is queued
    /// behind the one in progress, or the archiver is stopping.
    private var behind: Bool {
        condition.withLock {
            stopping || jobs.contains { if case .compress = $0 { true } else { false } }
        }
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
            release(path)
            failures += retain(layout, maxFiles: maxFiles)
        case .retain(let layout, let maxFiles):
            failures += retain(layout, maxFiles: maxFiles)
        case .recover(let layout, let compress, let maxFiles):
            failures += recover(layout, compress: compress)
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
        do throws(LogIOError) {
            var compressor = try GzipFileCompressor(path, to: temporary, fileSystem: fileSystem)
            var done = false
            while !done {
                switch behind ? .unavailable : idleStep(compressor) {
                case .ran(let finished):
                    done = finished
                    stepHook?(true)
                case .failed(let error):
                    throw error
                case .abandoned:
                    // A new inode under the same name: the abandoned step's last writes go to
                    // the old one (truncating it instead would let them into the new file).
                    if Glibc.unlink(temporary) != 0 && errno != ENOENT { throw LogIOError(.unlink, temporary, code: errno) }
                    compressor = try GzipFileCompressor(path, to: temporary, fileSystem: fileSystem)
                    stepHook?(nil)
                case .unavailable:
                    done = try compressor.step()
                    stepHook?(false)
                }
            }
            try compressor.sync()
            try fileSystem.rename(temporary, final)
            try fileSystem.syncDirectory(directory)
        } catch {
            _ = Glibc.unlink(temporary)
            throw error
        }
        try fileSystem.unlink(path)
        try? fileSystem.syncDirectory(directory)
    }

    private func recover(_ layout: LogFileLayout, compress: Bool) -> [LogIOError] {
        var failures: [LogIOError] = []
        let entries = fileSystem.listDirectory(layout.directory).compactMap(layout.parseRotated)
        // Files rotated since the recovery was queued have their own compress job, queued or
        // on its way: recovery leaves them to it (it compressed them first, and a failure
        // counted twice). Read after the listing: a file listed was renamed before it, so
        // its claim (made before the rename) is here.
        let queued = condition.withLock {
            claimed.union(jobs.compactMap { job -> String? in
                if case .compress(let path, _, _) = job { return path }
                return nil
            })
        }
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

/// An idle-priority step's result, written on that thread and read by the archiver after
/// `IdlePriorityThread.waitUntilDone` (whose lock orders the two).
private final class StepOutcome: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<Bool, LogIOError>?
    func set(_ value: Result<Bool, LogIOError>) { lock.withLock { result = value } }
    var value: Result<Bool, LogIOError>? { lock.withLock { result } }
}
