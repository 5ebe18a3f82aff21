/// Encoded records, each followed by its newline, in one buffer: a serialization worker
/// encodes a whole batch into it and the writer hands slices of it to write(2), so a
/// record is neither allocated on its own nor copied again on its way to the file.
public struct RecordBatch: Sendable {
    /// The lines when built by `append` (tests, loss records).
    private var array: [UInt8] = []
    /// The lines when a worker encoded them: its buffer, handed over rather than copied into
    /// `array` (a copy of the whole batch).
    private var encoded: EncodedRecords?
    /// Where each line ends (just past its newline) in the bytes.
    public private(set) var ends: [Int] = []

    public init() {}

    /// Lines a worker encoded: `ends` as described above.
    init(encoded: EncodedRecords, ends: [Int]) {
        self.encoded = encoded
        self.ends = ends
    }

    private init(array: [UInt8], ends: [Int]) {
        self.array = array
        self.ends = ends
    }

    public init(lines: [[UInt8]]) {
        array.reserveCapacity(lines.reduce(0) { $0 + $1.count + 1 })
        for line in lines { append(line) }
    }

    public var count: Int { ends.count }
    public var isEmpty: Bool { ends.isEmpty }
    /// The lines' bytes in all (the lines are back to back from the start).
    public var byteCount: Int { ends.last ?? 0 }
    /// Bytes the batch holds in memory (tests).
    var allocatedBytes: Int { encoded?.allocated ?? array.capacity }

    /// The lines, newline-terminated, back to back (a copy when a worker encoded them).
    public var bytes: [UInt8] {
        guard let encoded else { return array }
        return Array(UnsafeBufferPointer(start: encoded.base, count: byteCount))
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let encoded else { return try array.withUnsafeBytes(body) }
        return try body(UnsafeRawBufferPointer(start: encoded.base, count: byteCount))
    }

    /// Adds one record; `encode` appends its text (no newline) to the buffer.
    public mutating func append(encoding encode: (inout [UInt8]) -> Void) {
        makeArray()
        encode(&array)
        array.append(UInt8(ascii: "\n"))
        ends.append(array.count)
    }

    public mutating func append(_ line: [UInt8]) {
        append { $0.append(contentsOf: line) }
    }

    public mutating func reserveCapacity(bytes byteCount: Int, records: Int) {
        makeArray()
        array.reserveCapacity(byteCount)
        ends.reserveCapacity(records)
    }

    private mutating func makeArray() {
        guard encoded != nil else { return }
        array = bytes
        encoded = nil
    }

    /// Keeps the first `n` records and returns the others as a batch of their own.
    mutating func splitOff(after n: Int) -> RecordBatch {
        guard n < ends.count else { return RecordBatch() }
        let cut = n == 0 ? 0 : ends[n - 1]
        let rest = withUnsafeBytes { raw in
            RecordBatch(array: Array(raw[cut..<byteCount]), ends: ends[n...].map { $0 - cut })
        }
        keepFirst(n)
        return rest
    }

    /// Keeps the first `n` records.
    mutating func keepFirst(_ n: Int) {
        guard n < ends.count else { return }
        if encoded == nil { array.removeSubrange((n == 0 ? 0 : ends[n - 1])...) }
        ends.removeSubrange(n...)
    }

    /// Start of record `i` in the bytes.
    func start(of i: Int) -> Int { i == 0 ? 0 : ends[i - 1] }
}

/// The memory a worker encoded a batch into (`RecordBuffer.intoEncodedRecords`), freed with
/// the batch, or given back to the worker's pool. Never written once made, so any thread may
/// read it.
final class EncodedRecords: @unchecked Sendable {
    let base: UnsafeMutablePointer<UInt8>
    /// Bytes allocated at `base` (tests: at most twice the lines').
    let allocated: Int
    private let pool: RecordBufferPool?

    init(taking base: UnsafeMutablePointer<UInt8>, allocated: Int, pool: RecordBufferPool? = nil) {
        self.base = base
        self.allocated = allocated
        self.pool = pool
    }

    deinit {
        if let pool { pool.give(base, capacity: allocated) } else { base.deallocate() }
    }
}
