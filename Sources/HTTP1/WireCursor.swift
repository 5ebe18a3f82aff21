/// Writes into memory `WireForm.build` sized; every write checks the end, so a wrong
/// capacity traps instead of writing past it.
struct WireCursor {
    private(set) var next: UnsafeMutablePointer<UInt8>
    private let end: UnsafeMutablePointer<UInt8>

    init(start: UnsafeMutablePointer<UInt8>, end: UnsafeMutablePointer<UInt8>) { next = start; self.end = end }

    @inline(__always)
    mutating func put(_ byte: UInt8) {
        precondition(next < end, "wire form larger than its capacity")
        next.pointee = byte
        next += 1
    }

    @inline(__always)
    mutating func put(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let from = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(end - next >= bytes.count, "wire form larger than its capacity")
        next.update(from: from, count: bytes.count)
        next += bytes.count
    }

    @inline(__always)
    mutating func putCRLF() { put(ByteClass.cr); put(ByteClass.lf) }

    mutating func putVersion(_ version: HTTPVersion) {
        let prefix: StaticString = "HTTP/"
        put(UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        // The parser only accepts single digits; formatting Ints allocated on every head.
        if (0...9).contains(version.major) && (0...9).contains(version.minor) {
            put(48 + UInt8(version.major))
            put(UInt8(ascii: "."))
            put(48 + UInt8(version.minor))
        } else {
            for c in String(version.major).utf8 { put(c) }
            put(UInt8(ascii: "."))
            for c in String(version.minor).utf8 { put(c) }
        }
    }

    /// The status-line: version, the status as three digits (clamped to 0…999), the reason, CRLF.
    mutating func putStatusLine(version: HTTPVersion, status: Int, reason: UnsafeBufferPointer<UInt8>) {
        putVersion(version)
        put(ByteClass.sp)
        let code = min(max(status, 0), 999)
        put(UInt8(48 + code / 100))
        put(UInt8(48 + code / 10 % 10))
        put(UInt8(48 + code % 10))
        put(ByteClass.sp)
        put(reason)
        putCRLF()
    }

    @inline(__always)
    mutating func putField(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        put(name)
        put(UInt8(ascii: ":"))
        put(ByteClass.sp)
        put(value)
        putCRLF()
    }

    mutating func putFields(_ headers: HTTPHeaders) {
        headers.forEachField { putField(name: $0, value: $1) }
        putCRLF()
    }
}
