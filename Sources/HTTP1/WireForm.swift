/// A head's wire form: the bytes a request or status line and its fields take, sized
/// before they are written so each head is one allocation (or none, with a sink).
enum WireForm {
    /// `HTTP/` and two numbers of up to 20 digits each.
    static let versionCapacity = 5 + 20 + 1 + 20

    /// Every field as `name: value` CRLF, and the final CRLF.
    static func fieldsCapacity(_ headers: HTTPHeaders) -> Int {
        headers.spans.reduce(2) { $0 + Int($1.nameEnd &- $1.nameStart) + Int($1.valueEnd &- $1.valueStart) + 4 }
    }

    /// Version, three-digit status, two spaces, the reason and CRLF.
    static func statusLineCapacity(_ reason: UnsafeBufferPointer<UInt8>) -> Int { versionCapacity + 3 + 2 + reason.count + 2 }

    /// An array of at most `capacity` bytes written by `body` through a cursor: one
    /// allocation and a `memcpy` per piece (appending small buffers to a `[UInt8]` goes
    /// through the generic copy path).
    static func build(capacity: Int, _ body: (inout WireCursor) -> Void) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            guard let base = buffer.baseAddress else { count = 0; return }
            count = fill(base, capacity: buffer.count, body)
        }
    }

    /// Runs `body` on a cursor over the `capacity` bytes at `base`; returns how many it wrote.
    static func fill(_ base: UnsafeMutablePointer<UInt8>, capacity: Int, _ body: (inout WireCursor) -> Void) -> Int {
        var cursor = WireCursor(start: base, end: base + capacity)
        body(&cursor)
        return cursor.next - base
    }

    /// What a `write…` function hands its sink, as an array (tests, callers without a buffer).
    static func collect(_ write: (WireFormSink) -> Void) -> [UInt8] {
        var result: [UInt8] = []
        write { capacity, fill in
            result = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                guard let base = buffer.baseAddress else { count = 0; return }
                count = fill(base)
            }
        }
        return result
    }
}

/// Where a head's wire form is written: the sink gets the most bytes it can take and calls
/// `fill` at most once (not when it has no memory) with room for at least that many; `fill`
/// returns how many it wrote. The
/// engine passes space in its output buffer, so a forwarded head is never an array of its
/// own (no allocation per head on the loop).
public typealias WireFormSink = (_ capacity: Int, _ fill: (UnsafeMutablePointer<UInt8>) -> Int) -> Void

extension HTTPRequestHead {
    /// The head's wire form: request-line, fields, CRLF. The version written is
    /// the head's own (`forwardedRequestHead` sets HTTP/1.1).
    public func serialized() -> [UInt8] {
        HTTPHeaders.withUTF8(method) { method in
            HTTPHeaders.withUTF8(target) { target in
                WireForm.build(capacity: method.count + target.count + 2 + WireForm.versionCapacity + 2
                                   + WireForm.fieldsCapacity(headers)) { out in
                    out.put(method)
                    out.put(ByteClass.sp)
                    out.put(target)
                    out.put(ByteClass.sp)
                    out.putVersion(version)
                    out.putCRLF()
                    out.putFields(headers)
                }
            }
        }
    }
}

extension HTTPResponseHead {
    /// The status-line, fields and CRLF, with the head's own version.
    public func serialized() -> [UInt8] {
        HTTPHeaders.withUTF8(reason) { reason in
            WireForm.build(capacity: WireForm.statusLineCapacity(reason) + WireForm.fieldsCapacity(headers)) { out in
                out.putStatusLine(version: version, status: status, reason: reason)
                out.putFields(headers)
            }
        }
    }
}
