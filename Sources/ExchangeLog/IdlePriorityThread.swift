import CGlibcExtensions
import Foundation

/// A thread in Linux's SCHED_IDLE class that runs one piece of work at a time: the
/// archiver's compression steps, so that deflating rotated logs takes only CPU time that the
/// event loops, the serialization workers and the writer (and the rest of the machine) leave
/// unused. The caller stays at normal priority and can stop waiting and do the work itself
/// when the wait would let work pile up (a thread cannot leave SCHED_IDLE unprivileged, and
/// under full load an idle-class thread may not run for seconds).
final class IdlePriorityThread: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var work: (() -> Void)?
    private var busy = false
    private var stopping = false
    private var started = false
    /// The errno of a refused `sched_setscheduler` (a seccomp filter, say): the work then
    /// runs at normal priority, which is only unkind to the rest of the machine.
    private var policyError: Int32 = 0
    private let name: String

    init(name: String) {
        self.name = name
    }

    /// Hands `work` to the thread; false (and `work` not run) while earlier work is still in
    /// progress or after `stop`.
    func tryStart(_ work: @escaping () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !busy && !stopping else { return false }
        if !started { startThread() }
        self.work = work
        busy = true
        condition.broadcast()
        return true
    }

    /// Waits up to `timeout` seconds for the work in progress; true once none is.
    func waitUntilDone(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while busy {
            if !condition.wait(until: deadline) { return !busy }
        }
        return true
    }

    /// The thread ends after the work in progress, if any; this does not wait for it, as
    /// starved work may take long to get the CPU and matters to nobody any more.
    func stop() {
        condition.withLock {
            stopping = true
            condition.broadcast()
        }
    }

    var schedulingError: Int32 { condition.withLock { policyError } }

    /// Under `condition`.
    private func startThread() {
        started = true
        let thread = Thread { [self] in
            _ = tapwire_name_current_thread(name)
            let error = tapwire_make_current_thread_idle_priority()
            if error != 0 {
                // Once per process (one such thread): the unit file of an older install, say,
                // whose system call filter refuses it.
                FileHandle.standardError.write(Data(
                    "tapwire: \(name) runs at normal priority: SCHED_IDLE refused (\(String(cString: strerror(error))))\n".utf8))
            }
            condition.lock()
            policyError = error
            while true {
                while work == nil && !stopping { condition.wait() }
                guard let task = work else { break }
                work = nil
                condition.unlock()
                task()
                condition.lock()
                busy = false
                condition.broadcast()
            }
            condition.unlock()
        }
        thread.start()
    }
}
