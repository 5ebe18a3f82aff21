import Synchronization

/// Record ids: `%016x-%06x`, the exchange's request start in milliseconds since
/// 1970 (hex, 16 digits) and a per-process counter starting at 1 (hex, at least 6 digits).
///
/// - Sorting the ids as strings sorts records by start time: the millisecond
///   part has a fixed width. Within one millisecond the counter orders them
///   (while it stays below 16,777,216, i.e. 6 digits).
/// - Unique across restarts: a new process only sees exchanges that start after
///   it started, and restarts are more than a millisecond apart, so two
///   processes never share a millisecond part. Within a process the counter
///   never repeats (it is 64 bits and only wraps after 2^64 ids).
public final class RecordIDGenerator: Sendable {
    private let counter = Atomic<UInt64>(0)

    public init() {}

    /// The next id for an exchange whose request started at `startTime`
    /// (seconds since 1970; negative or non-finite times count as 0).
    public func next(startTime: Double) -> String {
        let sequence = counter.wrappingAdd(1, ordering: .relaxed).newValue
        // Rounded to the microsecond first, as the record's RFC 3339 times are, so that
        // 1700000000.123 (really ...122.99999) counts as millisecond ...123.
        let millis: UInt64
        if startTime.isFinite, startTime > 0 {
            millis = UInt64(min((startTime * 1_000_000).rounded(), 1.8e19)) / 1000
        } else {
            millis = 0
        }
        // Written straight into the string's storage: no intermediate array (one per record).
        let millisDigits = max(16, RecordIDGenerator.hexDigits(millis))
        let sequenceDigits = max(6, RecordIDGenerator.hexDigits(sequence))
        return String(unsafeUninitializedCapacity: millisDigits + 1 + sequenceDigits) { buffer in
            RecordIDGenerator.writeHex(millis, digits: millisDigits, to: buffer, at: 0)
            buffer[millisDigits] = UInt8(ascii: "-")
            RecordIDGenerator.writeHex(sequence, digits: sequenceDigits, to: buffer, at: millisDigits + 1)
            return millisDigits + 1 + sequenceDigits
        }
    }

    static func hexDigits(_ value: UInt64) -> Int { value == 0 ? 1 : (67 - value.leadingZeroBitCount) / 4 }

    /// `value` in `digits` lower-case hex digits (zero-padded) at `offset`.
    static func writeHex(_ value: UInt64, digits: Int, to buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        var remaining = value
        var i = offset + digits
        while i > offset {
            i -= 1
            let nibble = UInt8(truncatingIfNeeded: remaining & 0xF)
            buffer[i] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
            remaining >>= 4
        }
    }
}
