import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

/// The bytes of one record while it is encoded. Appending to a `[UInt8]` goes through
/// the generic `append(contentsOf:)` path (about 120 instructions for 20 bytes here, a
/// fifth of a small record's cost); this is a capacity check and a `memcpy`. Owned by one
/// encoding call (non-copyable), freed when it ends.
struct RecordBuffer: ~Copyable {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

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
        base.deallocate()
        base = newBase
        capacity = newCapacity
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

    mutating func appendQuoted(utf8: UnsafeBufferPointer<UInt8>) {
        let n = utf8.count
        reserve(n + 2)
        base[count] = 0x22
        count += 1
        if let p = utf8.baseAddress {
            var i = 0
            while true {
                let next = JSONWriter.firstEscapable(p, from: i, end: n)
                if next > i {
                    memcpy(base + count, p + i, next - i)
                    count += next - i
                }
                if next >= n { break }
                // Escapes grow the text: room for the longest one and the closing quote.
                reserve(6 + 1 + (n - next))
                count += JSONWriter.writeEscape(p[next], to: base + count)
                i = next + 1
            }
        }
        reserve(1)
        base[count] = 0x22
        count += 1
    }

    /// A JSON value (tree) as `JSONWriter` writes it.
    mutating func appendJSON(_ value: JSON) {
        var text: [UInt8] = []
        JSONWriter.write(value, into: &text)
        append(contentsOf: text)
    }
}
