import CNghttp2
import HTTP1

/// A header block for nghttp2 (a request, a response or trailers) as it is built: every
/// name and value in one byte buffer, names in lower case (RFC 9113 §8.2.2), and the
/// connection-specific fields HTTP/2 forbids left out (§8.2.2 again).
///
/// Built from a head's bytes, not from strings: every HTTP/2 stream submits one or two
/// blocks, and a block made of a string and two arrays per field cost more than the rest of
/// the stream's translation.
struct HTTP2FieldList {
    private var bytes: [UInt8] = []
    /// Offsets into `bytes`: name start, value start, value end (the name ends where its value starts).
    private var spans: [(name: Int, value: Int, end: Int)] = []

    init(capacity: Int = 16) {
        bytes.reserveCapacity(capacity * 32)
        spans.reserveCapacity(capacity)
    }

    var count: Int { spans.count }

    /// Appends one field; the name is lower-cased.
    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let nameStart = bytes.count
        for byte in name { bytes.append(asciiLower(byte)) }
        let valueStart = bytes.count
        bytes.append(contentsOf: value)
        spans.append((nameStart, valueStart, bytes.count))
    }

    /// Appends one field; the name is lower-cased.
    mutating func append(name: String, value: String) {
        var name = name, value = value
        name.withUTF8 { n in value.withUTF8 { v in append(name: n, value: v) } }
    }

    /// Appends the fields of `headers` that HTTP/2 allows, except any named `dropping` (lower case).
    mutating func append(_ headers: HTTPHeaders, dropping: StaticString? = nil) {
        headers.forEachField { name, value in
            guard !HTTP2FieldList.isConnectionSpecific(name),
                  !(dropping.map { HTTPHeaders.name(name, is: $0) } ?? false) else { return }
            append(name: name, value: value)
        }
    }

    /// The fields as nghttp2's name/value list, pointing into this buffer, for `body`'s
    /// duration (nghttp2 copies what it keeps before its submit functions return). Nil only
    /// when no buffer could be had.
    mutating func withList<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R? {
        if bytes.isEmpty { bytes.append(0) }  // so that the base address exists
        return bytes.withUnsafeMutableBufferPointer { buffer -> R? in
            guard let base = buffer.baseAddress else { return nil }
            return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: max(1, spans.count)) { list -> R? in
                guard let start = list.baseAddress else { return nil }
                for (i, span) in spans.enumerated() {
                    (start + i).initialize(to: nghttp2_nv(
                        name: base + span.name, value: base + span.value,
                        namelen: span.value - span.name, valuelen: span.end - span.value,
                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
                }
                defer { start.deinitialize(count: spans.count) }
                // An empty list still points at valid memory: the allocation has room for one.
                return body(UnsafePointer(start), spans.count)
            }
        }
    }

    /// Whether the name is a connection-specific field's (RFC 9113 §8.2.2), whatever its case.
    /// By length first: this runs for every field of every h2 head, and most names match none.
    static func isConnectionSpecific(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        switch name.count {
        case 2: return HTTPHeaders.name(name, is: "te")
        case 7: return HTTPHeaders.name(name, is: "upgrade")
        case 10: return HTTPHeaders.name(name, is: "connection") || HTTPHeaders.name(name, is: "keep-alive")
        case 16: return HTTPHeaders.name(name, is: "proxy-connection")
        case 17: return HTTPHeaders.name(name, is: "transfer-encoding")
        default: return false
        }
    }

    static func isConnectionSpecific(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { isConnectionSpecific($0) }
    }
}
