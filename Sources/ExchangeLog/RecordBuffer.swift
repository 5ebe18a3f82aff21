import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// The bytes of one record while it is encoded. Appending to a `[UInt8]` goes through
/// the generic `append(contentsOf:)` path, costly for the many small pieces of a record;
/// this is a capacity check and a `memcpy`. Owned by one encoding call (non-copyable),
/// freed when it ends.
struct RecordBuffer: ~Copyable {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int
    /// The last whole second `appendTime` wrote and its 19-byte text: a record's four
    /// times, and the records of a batch, mostly fall within one second.
    private var timeSecond = Int64.min
    private var timeText: (UInt64, UInt64, UInt32) = (0, 0, 0)

    /// Where the memory comes from and goes back to (a worker's batch), nil: malloc. Held
    /// retained by hand: `discard self` needs stored properties that are trivial to destroy.
    private let pool: Unmanaged<RecordBufferPool>?

    init(capacity: Int, pool: RecordBufferPool? = nil) {
        let wanted = max(capacity, 64)
        self.pool = pool.map { Unmanaged.passRetained($0) }
        if let kept = pool?.take(capacity: wanted) {
            base = kept.base
            self.capacity = kept.capacity
        } else {
            self.capacity = wanted
            base = .allocate(capacity: wanted)
        }
    }

    deinit {
        Self.release(base, capacity: capacity, to: pool)
        pool?.release()
    }

    private static func release(_ base: UnsafeMutablePointer<UInt8>, capacity: Int, to pool: Unmanaged<RecordBufferPool>?) {
        if let pool { pool.takeUnretainedValue().give(base, capacity: capacity) } else { base.deallocate() }
    }

    /// Hands the memory to a batch for the writer, without copying it when it is mostly
    /// used. A worker sizes its buffer for the captured bodies, which a record may not log
    /// (`data` without base64, `none`): a 1 MiB download's ~1.5 KB record would have kept
    /// the whole megabyte in the writer's queue, which counts only the lines' bytes.
    consuming func intoEncodedRecords() -> EncodedRecords {
        if count < capacity / 2 {
            let size = max(count, 1)
            let exact = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
            exact.initialize(from: base, count: count)
            Self.release(base, capacity: capacity, to: pool)
            pool?.release()
            discard self
            return EncodedRecords(taking: exact, allocated: size, pool: nil)
        }
        // The retain moves to the records.
        let records = EncodedRecords(taking: base, allocated: capacity, pool: pool?.takeRetainedValue())
        discard self
        return records
    }

    var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Room for `n` more bytes.
    @inline(__always)
    mutating func reserve(_ n: Int) {
        if count + n > capacity { grow(to: count + n) }
    }

    @inline(never)
    private mutating func grow(to needed: Int) {
        let newCapacity = max(needed, capacity * 2)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        Self.release(base, capacity: capacity, to: pool)
        base = newBase
        capacity = newCapacity
    }

    /// Lets `body` write at most `maxCount` bytes in place; it returns how many it wrote.
    @inline(__always)
    mutating func write(maxCount: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        reserve(maxCount)
        let written = body(base + count)
        precondition(written >= 0 && written <= maxCount, "RecordBuffer.write: wrote past its room")
        count += written
    }

    /// Drops what was appended after `count` was `length` (a record re-encoded smaller).
    mutating func truncate(to length: Int) {
        precondition(length >= 0 && length <= count, "RecordBuffer.truncate: past the end")
        count = length
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(contentsOf source: UnsafeBufferPointer<UInt8>) {
        guard let from = source.baseAddress, source.count > 0 else { return }
        reserve(source.count)
        memcpy(base + count, from, source.count)
        count += source.count
    }

    mutating func append(contentsOf array: [UInt8]) {
        array.withUnsafeBufferPointer { append(contentsOf: $0) }
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// `string` quoted and escaped exactly as `JSONWriter.appendQuoted` writes it.
    mutating func appendQuoted(_ string: String) {
        if string.utf8.withContiguousStorageIfAvailable({ appendQuoted(utf8: $0) }) == nil {
            var copy = string
            copy.withUTF8 { appendQuoted(utf8: $0) }
        }
    }

    /// Scans and copies in one pass, a word at a time (`JSONWriter.firstEscapable`'s test):
    /// a record quotes ~28 short strings, and a scan, then a `memcpy` call per string cost
    /// more than the copying. A word is stored whole even when an escape cuts it short (the
    /// rest is overwritten next), hence the 8 spare bytes reserved.
    mutating func appendQuoted(utf8: UnsafeBufferPointer<UInt8>) {
        let n = utf8.count
        reserve(n + 2 + 8)
        base[count] = 0x22
        count += 1
        if let p = utf8.baseAddress {
            var i = 0
            /// Where the bytes copied since the last escape start.
            var runStart = 0
            while i < n {
                var escapeAt = n
                while i + 8 <= n {
                    // The bytes are stored as loaded; only the copy tested is put in
                    // little-endian order (byte k in bits 8k...8k+7).
                    let raw = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                    UnsafeMutableRawPointer(base + count).storeBytes(of: raw, as: UInt64.self)
                    let special = JSONWriter.escapeMask(UInt64(littleEndian: raw))
                    if special != 0 {
                        let k = special.trailingZeroBitCount >> 3
                        count += k
                        escapeAt = i + k
                        break
                    }
                    count += 8
                    i += 8
                }
                if escapeAt == n && i < n && n - 8 >= runStart {
                    // The last 1...7 bytes: the string's last word again, overlapping bytes
                    // of this run already copied (rewritten with the same values, so no
                    // escape may lie among them), instead of a byte loop.
                    let skip = 8 - (n - i)
                    let raw = UnsafeRawPointer(p + n - 8).loadUnaligned(as: UInt64.self)
                    UnsafeMutableRawPointer(base + count - skip).storeBytes(of: raw, as: UInt64.self)
                    // Bytes below the run's new part are known not to need escapes.
                    let special = JSONWriter.escapeMask(UInt64(littleEndian: raw)) & (~0 << UInt64(skip * 8))
                    if special == 0 {
                        count += n - i
                        break
                    }
                    let k = special.trailingZeroBitCount >> 3
                    count += k - skip
                    escapeAt = n - 8 + k
                }
                if escapeAt == n {
                    // Fewer than 8 bytes in all, no escape met yet.
                    while i < n {
                        let c = p[i]
                        if c == 0x22 || c == 0x5C || c < 0x20 { escapeAt = i; break }
                        base[count] = c
                        count += 1
                        i += 1
                    }
                    if escapeAt == n { break }
                }
                // Escapes grow the text: room for the longest one, the rest and the closing quote.
                reserve(6 + (n - escapeAt) + 1 + 8)
                count += JSONWriter.writeEscape(p[escapeAt], to: base + count)
                i = escapeAt + 1
                runStart = i
            }
        }
        base[count] = 0x22
        count += 1
    }

    /// `["name","value"]` (or `["name","[redacted]"]`) when the bytes need no escape and
    /// are ASCII, as nearly every header field's are; returns false, writing nothing,
    /// otherwise. One pass a word at a time over each, instead of the general path's ASCII
    /// scan then escaping copy per name and per value.
    mutating func appendPlainField(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>,
                                   redacted: Bool) -> Bool {
        let start = count
        reserve(name.count + value.count + 16)
        base[count] = UInt8(ascii: "[")
        base[count + 1] = 0x22
        count += 2
        guard copyPlain(name) else { count = start; return false }
        base[count] = 0x22
        base[count + 1] = UInt8(ascii: ",")
        count += 2
        if redacted {
            append("\"[redacted]\"]")
            return true
        }
        base[count] = 0x22
        count += 1
        guard copyPlain(value) else { count = start; return false }
        base[count] = 0x22
        base[count + 1] = UInt8(ascii: "]")
        count += 2
        return true
    }

    /// Copies `text` if no byte of it is escaped in JSON (`"`, `\`, below 0x20) or
    /// non-ASCII; room must be reserved. Returns false (count unchanged) otherwise.
    @inline(__always)
    private mutating func copyPlain(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let p = text.baseAddress else { return true }
        let n = text.count
        let to = base + count
        if n >= 8 {
            var i = 0
            while i + 8 <= n {
                let raw = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                UnsafeMutableRawPointer(to + i).storeBytes(of: raw, as: UInt64.self)
                let w = UInt64(littleEndian: raw)
                if JSONWriter.escapeMask(w) | (w & 0x8080_8080_8080_8080) != 0 { return false }
                i += 8
            }
            if i < n {
                // The last word again, overlapping bytes already copied and checked.
                let raw = UnsafeRawPointer(p + n - 8).loadUnaligned(as: UInt64.self)
                UnsafeMutableRawPointer(to + n - 8).storeBytes(of: raw, as: UInt64.self)
                let w = UInt64(littleEndian: raw)
                if JSONWriter.escapeMask(w) | (w & 0x8080_8080_8080_8080) != 0 { return false }
            }
        } else if n >= 4 {
            // 4...7 bytes (Host, Date, ETag, short values): the first and last four,
            // overlapping, tested as one word.
            let first = UnsafeRawPointer(p).loadUnaligned(as: UInt32.self)
            let last = UnsafeRawPointer(p + n - 4).loadUnaligned(as: UInt32.self)
            let w = UInt64(UInt32(littleEndian: first)) | UInt64(UInt32(littleEndian: last)) << 32
            if JSONWriter.escapeMask(w) | (w & 0x8080_8080_8080_8080) != 0 { return false }
            UnsafeMutableRawPointer(to).storeBytes(of: first, as: UInt32.self)
            UnsafeMutableRawPointer(to + n - 4).storeBytes(of: last, as: UInt32.self)
        } else {
            for i in 0..<n {
                let c = p[i]
                if c < 0x20 || c >= 0x80 || c == 0x22 || c == 0x5C { return false }
                to[i] = c
            }
        }
        count += n
        return true
    }

    /// Bytes from the wire (a header name or value) as a JSON string: as they are when
    /// ASCII, else read as UTF-8 with U+FFFD for bytes that are not (the log stays UTF-8).
    mutating func appendQuotedText(_ bytes: UnsafeBufferPointer<UInt8>) {
        var any: UInt64 = 0
        if let p = bytes.baseAddress {
            var i = 0
            while i + 8 <= bytes.count {
                any |= UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                i += 8
            }
            while i < bytes.count { any |= UInt64(p[i]); i += 1 }
        }
        if any & 0x8080_8080_8080_8080 == 0 {
            appendQuoted(utf8: bytes)
        } else {
            appendQuoted(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// `"YYYY-MM-DDTHH:MM:SS.uuuuuuZ"` (quotes included), exactly as `RFC3339.format`.
    mutating func appendTime(_ secondsSince1970: Double) {
        let (whole, micros) = RFC3339.split(secondsSince1970)
        if whole != timeSecond {
            withUnsafeMutableBytes(of: &timeText) { RFC3339.writeSecond(whole, to: $0) }
            timeSecond = whole
        }
        reserve(29)
        base[count] = 0x22
        let text = UnsafeMutableRawBufferPointer(start: base + count + 1, count: 27)
        withUnsafeBytes(of: &timeText) { text.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<19])) }
        RFC3339.writeFraction(micros, to: text)
        base[count + 28] = 0x22
        count += 29
    }

    /// A JSON value (tree) as `JSONWriter` writes it.
    mutating func appendJSON(_ value: JSON) {
        var text: [UInt8] = []
        JSONWriter.write(value, into: &text)
        append(contentsOf: text)
    }
}
