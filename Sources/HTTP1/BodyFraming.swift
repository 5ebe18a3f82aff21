/// How the end of a message body is found (RFC 9112 §6).
public enum BodyFraming: Sendable, Equatable {
    case none
    case contentLength(UInt64)
    case chunked
    /// Response only: the body ends when the connection closes.
    case closeDelimited
}

extension HTTPRequestHead {
    /// The request body's framing, refusing ambiguity: CL with TE, differing CLs,
    /// bad CL syntax → `.malformed`; a TE whose final coding is not chunked → `.malformed`;
    /// an unknown coding → `.unsupportedTransferCoding`.
    public func bodyFraming() throws(HTTPParseError) -> BodyFraming {
        let (hasTE, hasCL) = headers.framingFieldsPresent()
        if hasTE {
            // Both present is the classic smuggling vector (RFC 9112 §6.3 item 3):
            // refuse rather than pick one.
            if hasCL { throw HTTPParseError(.malformed, "both Transfer-Encoding and Content-Length") }
            if version == .http1_0 { throw HTTPParseError(.malformed, "Transfer-Encoding in an HTTP/1.0 request") }
            let codings = try TransferCodings.parse(headers)
            try TransferCodings.checkChunkedPlacement(codings)
            if let unknown = codings.first(where: { !TransferCodings.known.contains($0) }) {
                throw HTTPParseError(.unsupportedTransferCoding, "unsupported transfer coding \(unknown)")
            }
            guard codings.last == "chunked" else {
                throw HTTPParseError(.malformed, "request transfer coding does not end in chunked")
            }
            return .chunked
        }
        if hasCL, let length = try ContentLength.parse(headers) { return .contentLength(length) }
        return .none
    }
}

extension HTTPHeaders {
    /// Whether a Transfer-Encoding and a Content-Length field are there, in one pass over the
    /// names rather than two `contains(name:)` and a search: it runs on the loop for every
    /// message.
    func framingFieldsPresent() -> (transferEncoding: Bool, contentLength: Bool) {
        bytes.withUnsafeBufferPointer { b in
            var te = false, cl = false
            for span in spans {
                let length = span.nameEnd &- span.nameStart
                // Of the names HopRole keeps, only Transfer-Encoding is 17 bytes and Content-Length 14.
                guard length == 17 || length == 14,
                      HopRole(bytes: UnsafeBufferPointer(rebasing: b[span.name])) == .keep else { continue }
                if length == 17 { te = true } else { cl = true }
            }
            return (te, cl)
        }
    }
}

extension HTTPResponseHead {
    /// The response body's framing given the request method: none for HEAD, 1xx,
    /// 204, 304 and a 2xx answer to CONNECT; chunked when TE ends in chunked;
    /// close-delimited when TE ends otherwise or neither header is present.
    /// CL with TE, differing CLs, bad CL → `.malformed`.
    public func bodyFraming(requestMethod: String) throws(HTTPParseError) -> BodyFraming {
        if requestMethod == "HEAD" || (100...199).contains(status) || status == 204 || status == 304 {
            return .none
        }
        if requestMethod == "CONNECT" && (200...299).contains(status) { return .none }
        let (hasTE, hasCL) = headers.framingFieldsPresent()
        if hasTE {
            if hasCL { throw HTTPParseError(.malformed, "both Transfer-Encoding and Content-Length") }
            // RFC 9112 §6.1: TE in an HTTP/1.0 message means faulty framing.
            if version == .http1_0 { throw HTTPParseError(.malformed, "Transfer-Encoding in an HTTP/1.0 response") }
            let codings = try TransferCodings.parse(headers)
            let chunkedCount = codings.lazy.filter { $0 == "chunked" }.count
            if chunkedCount > 1 { throw HTTPParseError(.malformed, "chunked applied more than once") }
            return codings.last == "chunked" ? .chunked : .closeDelimited
        }
        if hasCL, let length = try ContentLength.parse(headers) { return .contentLength(length) }
        return .closeDelimited
    }
}

enum TransferCodings {
    static let known: Set<String> = ["chunked", "gzip", "x-gzip", "deflate", "compress", "x-compress"]

    /// The coding names of every Transfer-Encoding field, lowercased, in order.
    static func parse(_ headers: HTTPHeaders) throws(HTTPParseError) -> [String] {
        var codings: [String] = []
        for value in headers["transfer-encoding"] {
            for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                let trimmed = element.trimmingOWS()
                if trimmed.isEmpty { continue }   // empty list elements are allowed (RFC 9110 §5.6.1)
                let parts = trimmed.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
                // Checked as a token before lowercasing: Swift's lowercased() is Unicode-aware
                // and maps U+212A KELVIN SIGN to "k", so "chun\u{212A}ed" became "chunked" here
                // while the origin, which gets the header as sent, sees an unknown coding and
                // may frame the body differently (a smuggling vector).
                let raw = parts[0].trimmingOWS()
                guard !raw.isEmpty, raw.utf8.allSatisfy(ByteClass.isToken) else {
                    throw HTTPParseError(.malformed, "invalid transfer coding")
                }
                let name = raw.lowercased()
                if name == "chunked" && parts.count > 1 {
                    throw HTTPParseError(.malformed, "chunked takes no parameters")
                }
                codings.append(name)
            }
        }
        guard !codings.isEmpty else { throw HTTPParseError(.malformed, "empty Transfer-Encoding") }
        return codings
    }

    /// chunked at most once and only as the final coding (RFC 9112 §6.1).
    static func checkChunkedPlacement(_ codings: [String]) throws(HTTPParseError) {
        for (i, coding) in codings.enumerated() where coding == "chunked" && i != codings.count - 1 {
            throw HTTPParseError(.malformed, "chunked is not the final transfer coding")
        }
    }
}

enum ContentLength {
    /// The single length every Content-Length field and list element agrees on,
    /// nil without the field.
    static func parse(_ headers: HTTPHeaders) throws(HTTPParseError) -> UInt64? {
        var result: UInt64?
        for span in headers.spans where headers.nameEquals(span, "content-length") {
            // On the value's bytes: splitting the UTF8View would allocate an array and walk
            // substrings generically, for every response.
            let parsed = headers.bytes.withUnsafeBufferPointer { b -> Result<UInt64?, HTTPParseError> in
                let v = UnsafeBufferPointer(rebasing: b[span.value])
                var agreed: UInt64?
                var i = 0
                while true {
                    var start = i
                    while i < v.count && v[i] != UInt8(ascii: ",") { i += 1 }
                    var end = i
                    while start < end && ByteClass.isOWS(v[start]) { start += 1 }
                    while end > start && ByteClass.isOWS(v[end - 1]) { end -= 1 }
                    guard start < end else { return .failure(HTTPParseError(.malformed, "empty Content-Length")) }
                    var n: UInt64 = 0
                    for k in start..<end {
                        let c = v[k]
                        guard ByteClass.isDigit(c) else { return .failure(HTTPParseError(.malformed, "invalid Content-Length")) }
                        let (times10, o1) = n.multipliedReportingOverflow(by: 10)
                        let (sum, o2) = times10.addingReportingOverflow(UInt64(c - 48))
                        guard !o1, !o2 else { return .failure(HTTPParseError(.malformed, "Content-Length overflows")) }
                        n = sum
                    }
                    if let previous = agreed, previous != n {
                        return .failure(HTTPParseError(.malformed, "differing Content-Length values"))
                    }
                    agreed = n
                    if i >= v.count { return .success(agreed) }
                    i += 1  // past the comma; an element after it must follow
                }
            }
            guard let n = try parsed.get() else { continue }
            if let previous = result, previous != n { throw HTTPParseError(.malformed, "differing Content-Length values") }
            result = n
        }
        return result
    }
}

/// Finds the end of one message body in a byte stream, incrementally, and
/// reports the payload (chunk data without framing) as it goes. It never copies:
/// the caller forwards the consumed input bytes verbatim and copies payload
/// slices only for its bounded capture.
public struct BodyFramer: Sendable {
    /// Longest chunk-size line (size plus extensions, without CRLF).
    public static let maxChunkLineBytes = 8 * 1024
    /// Largest trailer section after the last chunk.
    public static let maxTrailerBytes = 64 * 1024

    enum Mode: Sendable { case none, length, chunked, close }

    enum ChunkState: Sendable {
        case sizeStart, size, sizeBWS, extensions, sizeLF
        case data, dataCR, dataLF
        case trailerStart, trailerName, trailerValue, trailerLF, finalLF
    }

    let mode: Mode
    var chunkState: ChunkState = .sizeStart
    /// Bytes left in the body (content-length) or in the current chunk; while a
    /// chunk-size line is read, the size accumulated so far.
    var remaining: UInt64 = 0
    var sizeDigits = 0
    var lineBytes = 0
    var trailerBytes = 0
    /// The trailer section's bytes as received (fields and their CRLFs), bounded by
    /// `maxTrailerBytes` like the section itself.
    var trailerSection: [UInt8] = []
    var complete = false
    var payloadCount: UInt64 = 0

    public init(_ framing: BodyFraming) {
        switch framing {
        case .none:
            mode = .none
            complete = true
        case .contentLength(let n):
            mode = .length
            remaining = n
            complete = n == 0
        case .chunked:
            mode = .chunked
        case .closeDelimited:
            mode = .close
        }
    }

    /// True once the whole body (including a chunked body's trailers) was consumed.
    public var isComplete: Bool { complete }

    /// The trailer fields of a complete chunked body; nil when it had none. Values are
    /// trimmed of surrounding white space, as a head's are.
    public var trailers: HTTPHeaders? {
        guard complete, !trailerSection.isEmpty else { return nil }
        var fields: [(String, String)] = []
        var start = 0
        let bytes = trailerSection
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != ByteClass.cr { end += 1 }
            let line = bytes[start..<end]
            if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
                var value = line[(colon + 1)...]
                while let f = value.first, f == ByteClass.sp || f == ByteClass.htab { value = value.dropFirst() }
                while let l = value.last, l == ByteClass.sp || l == ByteClass.htab { value = value.dropLast() }
                fields.append((String(decoding: line[line.startIndex..<colon], as: UTF8.self),
                               String(decoding: value, as: UTF8.self)))
            }
            start = end + 2
        }
        return HTTPHeaders(fields)
    }

    /// Payload bytes seen so far (the decoded body size).
    public var payloadBytes: UInt64 { payloadCount }

    /// Consumes the longest prefix of `input` that belongs to this body, calling
    /// `payload` for each run of payload bytes inside it. Returns how many bytes of
    /// `input` were consumed; fewer than `input.count` only when the body is complete
    /// (the rest belongs to the next message). Throws `.malformed` on bad chunk
    /// syntax (non-hex size, size overflow, missing CRLF after data, oversized
    /// chunk line or trailers).
    public mutating func consume(_ input: UnsafeRawBufferPointer,
                                 payload: (UnsafeRawBufferPointer) -> Void) throws(HTTPParseError) -> Int {
        if complete || input.isEmpty { return 0 }
        switch mode {
        case .none:
            return 0
        case .close:
            payload(input)
            payloadCount &+= UInt64(input.count)
            return input.count
        case .length:
            let take = Int(min(UInt64(input.count), remaining))
            payload(UnsafeRawBufferPointer(rebasing: input[0..<take]))
            remaining -= UInt64(take)
            payloadCount += UInt64(take)
            complete = remaining == 0
            return take
        case .chunked:
            return try consumeChunked(input, payload: payload)
        }
    }

    private mutating func consumeChunked(_ input: UnsafeRawBufferPointer,
                                         payload: (UnsafeRawBufferPointer) -> Void) throws(HTTPParseError) -> Int {
        let n = input.count
        var i = 0
        while i < n && !complete {
            if chunkState == .data {
                let take = Int(min(UInt64(n - i), remaining))
                payload(UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                i += take
                remaining -= UInt64(take)
                payloadCount += UInt64(take)
                if remaining == 0 { chunkState = .dataCR }
                continue
            }
            let b = input[i]
            i += 1
            switch chunkState {
            case .data:
                break   // handled above
            case .sizeStart, .size:
                if let digit = ByteClass.hexValue(b) {
                    sizeDigits += 1
                    guard sizeDigits <= 16 else { throw HTTPParseError(.malformed, "chunk size too large") }
                    remaining = remaining << 4 | digit
                    chunkState = .size
                } else {
                    guard chunkState == .size else { throw HTTPParseError(.malformed, "missing chunk size") }
                    switch b {
                    case ByteClass.cr: chunkState = .sizeLF
                    case UInt8(ascii: ";"): chunkState = .extensions
                    case ByteClass.sp, ByteClass.htab: chunkState = .sizeBWS
                    default: throw HTTPParseError(.malformed, "invalid chunk size")
                    }
                }
                if b != ByteClass.cr { try countLineByte() }
            case .sizeBWS:
                switch b {
                case ByteClass.sp, ByteClass.htab: break
                case UInt8(ascii: ";"): chunkState = .extensions
                default: throw HTTPParseError(.malformed, "invalid chunk size line")
                }
                try countLineByte()
            case .extensions:
                if b == ByteClass.cr {
                    chunkState = .sizeLF
                } else if !ByteClass.isFieldValue(b) {
                    throw HTTPParseError(.malformed, "invalid character in chunk extension")
                } else {
                    try countLineByte()
                }
            case .sizeLF:
                guard b == ByteClass.lf else { throw HTTPParseError(.malformed, "chunk size line not ended by CRLF") }
                if remaining == 0 {
                    chunkState = .trailerStart
                    trailerBytes = 0
                } else {
                    chunkState = .data
                }
            case .dataCR:
                guard b == ByteClass.cr else { throw HTTPParseError(.malformed, "chunk data not followed by CRLF") }
                chunkState = .dataLF
            case .dataLF:
                guard b == ByteClass.lf else { throw HTTPParseError(.malformed, "chunk data not followed by CRLF") }
                chunkState = .sizeStart
                sizeDigits = 0
                lineBytes = 0
            case .trailerStart:
                if b == ByteClass.cr {
                    chunkState = .finalLF
                } else if ByteClass.isToken(b) {
                    chunkState = .trailerName
                    trailerSection.append(b)
                } else {
                    throw HTTPParseError(.malformed, "invalid trailer field")
                }
                try countTrailerByte()
            case .trailerName:
                if b == UInt8(ascii: ":") {
                    chunkState = .trailerValue
                } else if !ByteClass.isToken(b) {
                    throw HTTPParseError(.malformed, "invalid trailer field name")
                }
                trailerSection.append(b)
                try countTrailerByte()
            case .trailerValue:
                if b == ByteClass.cr {
                    chunkState = .trailerLF
                } else if !ByteClass.isFieldValue(b) {
                    throw HTTPParseError(.malformed, "invalid character in trailer field")
                }
                trailerSection.append(b)
                try countTrailerByte()
            case .trailerLF:
                guard b == ByteClass.lf else { throw HTTPParseError(.malformed, "bare CR in trailer section") }
                chunkState = .trailerStart
                trailerSection.append(ByteClass.lf)
                try countTrailerByte()
            case .finalLF:
                guard b == ByteClass.lf else { throw HTTPParseError(.malformed, "bare CR after last chunk") }
                complete = true
            }
        }
        return i
    }

    @inline(__always)
    private mutating func countLineByte() throws(HTTPParseError) {
        lineBytes += 1
        if lineBytes > Self.maxChunkLineBytes { throw HTTPParseError(.malformed, "chunk size line too long") }
    }

    @inline(__always)
    private mutating func countTrailerByte() throws(HTTPParseError) {
        trailerBytes += 1
        if trailerBytes > Self.maxTrailerBytes { throw HTTPParseError(.malformed, "trailer section too large") }
    }

    /// Called at end of stream. Returns true when EOF validly ends the body
    /// (close-delimited, or already complete); false means the body was truncated.
    public mutating func finishAtEOF() -> Bool {
        if mode == .close { complete = true }
        return complete
    }
}
