import Foundation
import Synchronization

/// A lock for short, rarely contended critical sections: no allocation, yields the CPU
/// while it waits.
struct SpinLock: ~Copyable, Sendable {
    private let held = Atomic<Bool>(false)

    init() {}

    func lock() {
        while held.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged == false {
            sched_yield()
        }
    }

    func unlock() { held.store(false, ordering: .releasing) }
}
