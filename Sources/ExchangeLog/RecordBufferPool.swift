import Foundation

/// Batch buffers the writer is done with, kept for the workers' next batches.
///
/// A worker encodes a batch into one buffer of about a megabyte (`RecordBuffer`), and the
/// writer frees it on its own thread once the lines are written. Freed that way, in an order
/// the worker's arena cannot shrink back from, the buffers were carved from fresh pages
/// batch after batch (glibc grew its heaps with `mprotect` about a hundred times a second
/// under a WebSocket echo), and the kernel faulted in and zeroed every page again while the
/// worker wrote the records. Handed back here, a buffer's pages stay mapped and warm.
///
/// Bounds: at most `maxBuffers` buffers of at most `maxBufferBytes` each (a larger buffer is
/// freed as before); when full, a buffer given back replaces the oldest, so the pool follows
/// the sizes batches have now. `drain` frees them all (the pipeline's napping worker calls it
/// when logging goes idle, before `IdleHeapTrim` runs).
final class RecordBufferPool: @unchecked Sendable {
    private let lock = NSLock()
    /// Oldest first.
    private var free: [(base: UnsafeMutablePointer<UInt8>, capacity: Int)] = []
    let maxBuffers: Int
    let maxBufferBytes: Int

    init(maxBuffers: Int, maxBufferBytes: Int) {
        self.maxBuffers = max(0, maxBuffers)
        self.maxBufferBytes = maxBufferBytes
    }

    deinit { for buffer in free { buffer.base.deallocate() } }

    /// The smallest buffer kept of `capacity` to 2 × `capacity` bytes (a larger one would
    /// hold more memory in the writer's queue than the batch's lines: see
    /// `RecordBuffer.intoEncodedRecords`), nil when there is none.
    func take(capacity: Int) -> (base: UnsafeMutablePointer<UInt8>, capacity: Int)? {
        lock.withLock {
            var best: Int?
            for i in free.indices where free[i].capacity >= capacity && free[i].capacity / 2 <= capacity {
                if best.map({ free[i].capacity < free[$0].capacity }) ?? true { best = i }
            }
            return best.map { free.remove(at: $0) }
        }
    }

    /// Takes back `base` (`capacity` bytes allocated), or frees it when it is too large;
    /// a full pool frees its oldest buffer instead.
    func give(_ base: UnsafeMutablePointer<UInt8>, capacity: Int) {
        guard capacity <= maxBufferBytes, maxBuffers > 0 else { return base.deallocate() }
        let evicted = lock.withLock { () -> UnsafeMutablePointer<UInt8>? in
            free.append((base, capacity))
            return free.count > maxBuffers ? free.removeFirst().base : nil
        }
        evicted?.deallocate()
    }

    /// Frees every buffer kept.
    func drain() {
        let all = lock.withLock { () -> [(base: UnsafeMutablePointer<UInt8>, capacity: Int)] in
            defer { free = [] }
            return free
        }
        for buffer in all { buffer.base.deallocate() }
    }

    /// Bytes kept (tests, metrics).
    var keptBytes: Int { lock.withLock { free.reduce(0) { $0 + $1.capacity } } }
}
