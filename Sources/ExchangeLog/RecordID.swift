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
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        RecordIDGenerator.appendHex(millis, minDigits: 16, into: &bytes)
        bytes.append(UInt8(ascii: "-"))
        RecordIDGenerator.appendHex(sequence, minDigits: 6, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    static func appendHex(_ value: UInt64, minDigits: Int, into bytes: inout [UInt8]) {
        let significant = value == 0 ? 1 : (67 - value.leadingZeroBitCount) / 4
        let digits = max(minDigits, significant)
        var shift = (digits - 1) * 4
        while shift >= 0 {
            let nibble = shift >= 64 ? 0 : Int((value >> UInt64(shift)) & 0xF)
            bytes.append(nibble < 10 ? UInt8(ascii: "0") + UInt8(nibble) : UInt8(ascii: "a") + UInt8(nibble - 10))
            shift -= 4
        }
    }
}
