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
    public func next(startTime: Double) -> String { nextID(startTime: startTime).description }

    /// The next id as numbers: the workers write it into the record without making a string.
    public func nextID(startTime: Double) -> RecordID {
        let sequence = counter.wrappingAdd(1, ordering: .relaxed).newValue
        // Rounded to the microsecond first, as the record's RFC 3339 times are, so that
        // 1700000000.123 (really ...122.99999) counts as millisecond ...123.
        let millis: UInt64
        if startTime.isFinite, startTime > 0 {
            millis = UInt64(min((startTime * 1_000_000).rounded(), 1.8e19)) / 1000
        } else {
            millis = 0
        }
        return RecordID(millis: millis, sequence: sequence)
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

/// A record id before it is text (see `RecordIDGenerator` for the format).
public struct RecordID: Sendable, Equatable, CustomStringConvertible {
    public let millis: UInt64
    public let sequence: UInt64
    /// The most bytes the text takes: two 16-digit hex numbers and the dash.
    static let maxLength = 33

    /// The text written at `p` (room for `maxLength`); returns its length.
    func write(to p: UnsafeMutablePointer<UInt8>) -> Int {
        let buffer = UnsafeMutableBufferPointer(start: p, count: RecordID.maxLength)
        let millisDigits = max(16, RecordIDGenerator.hexDigits(millis))
        let sequenceDigits = max(6, RecordIDGenerator.hexDigits(sequence))
        RecordIDGenerator.writeHex(millis, digits: millisDigits, to: buffer, at: 0)
        buffer[millisDigits] = UInt8(ascii: "-")
        RecordIDGenerator.writeHex(sequence, digits: sequenceDigits, to: buffer, at: millisDigits + 1)
        return millisDigits + 1 + sequenceDigits
    }

    public var description: String {
        String(unsafeUninitializedCapacity: RecordID.maxLength) { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return write(to: base)
        }
    }
}

/// A record's `id` value as the encoder gets it: a generated id, written without a string
/// of its own (no string per record, nor its quoting), or any text (tests and tools that
/// name their records).
enum RecordKey {
    case generated(RecordID)
    case text(String)
}

extension RecordBuffer {
    /// The `id` value, quoted.
    mutating func appendID(_ key: RecordKey) {
        switch key {
        case .text(let text):
            appendQuoted(text)
        case .generated(let id):
            // Hex digits and a dash: nothing to escape.
            write(maxCount: RecordID.maxLength + 2) { p in
                p[0] = 0x22
                let n = 1 + id.write(to: p + 1)
                p[n] = 0x22
                return n + 1
            }
        }
    }
}
