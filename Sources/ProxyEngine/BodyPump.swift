import CLibevent
import HTTP1

/// Moves message bodies between evbuffers (see `pump`).
enum BodyPump {
    /// Moves one message body from `source` to `destination` without copying
    /// (evbuffer chain moves), through `framer` to find where the body ends; copies
    /// at most `captureLimit` payload bytes into `capture` for decoding later.
    /// Returns true once the body is complete.
    /// With `payloadOnly`, only the payload is copied to `destination` and the framing (chunk
    /// sizes, trailers) is dropped: for an HTTP/1.0 client, which cannot read chunks.
    static func pump(from source: OpaquePointer, to destination: OpaquePointer, framer: inout BodyFramer,
                     capture: inout CapturedBody, captureLimit: Int, payloadOnly: Bool = false) throws(HTTPParseError) -> Bool {
        while !framer.isComplete {
            var vec = iovec()
            let n = evbuffer_peek(source, -1, nil, &vec, 1)
            guard n > 0, vec.iov_len > 0, let base = vec.iov_base else { break }
            let segment = UnsafeRawBufferPointer(start: base, count: vec.iov_len)
            let consumed = try framer.consume(segment) { payload in
                let room = captureLimit - capture.bytes.count
                if room > 0 {
                    let piece = payload.prefix(room)
                    let needed = capture.bytes.count + piece.count
                    if needed > capture.bytes.capacity {
                        // Grown by the array's doubling, a capture could take twice the limit
                        // (which the pipeline's byte bound would not see): never past the limit.
                        // Not reserved from a declared Content-Length: a peer could declare the
                        // limit, send a byte and reset, holding the whole limit in the queue.
                        capture.bytes.reserveCapacity(min(captureLimit, max(needed, capture.bytes.capacity * 2)))
                    }
                    // As typed bytes: appending a slice of raw bytes goes element by element,
                    // this way it is a memcpy.
                    UnsafeRawBufferPointer(rebasing: piece).withMemoryRebound(to: UInt8.self) { capture.bytes.append(contentsOf: $0) }
                }
                // Copied while `segment` (the source's memory) is still there: drained below.
                if payloadOnly, let p = payload.baseAddress, payload.count > 0 { evbuffer_add(destination, p, payload.count) }
            }
            capture.totalBytes = framer.payloadBytes
            if consumed > 0 {
                if payloadOnly { evbuffer_drain(source, consumed) } else { evbuffer_remove_buffer(source, destination, consumed) }
            }
            if consumed < segment.count { break }
        }
        if framer.isComplete, capture.trailers == nil { capture.trailers = framer.trailers }
        return framer.isComplete
    }
}
