// CONTRACT (filled in by the HTTP1 work): signatures here are what ProxyEngine calls.

public enum HeadParseResult<Head: Sendable>: Sendable {
    /// No complete head yet (no CRLFCRLF) and the limit is not reached: read more.
    case incomplete
    /// A complete head; `length` bytes (including any leading empty lines and the
    /// final CRLFCRLF) belong to it and can be dropped from the input.
    case complete(Head, length: Int)
}

public enum HTTPHeadParser {
    /// Parses a request head at the start of `bytes` (RFC 9112 §2-5).
    /// Throws `.headTooLarge` once `bytes` holds more than `maxHeadBytes` without a
    /// complete head, `.malformed` for any syntax error.
    public static func parseRequestHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        guard let span = try findHead(bytes, maxHeadBytes: maxHeadBytes, skipLeadingEmptyLines: true) else {
            return .incomplete
        }
        let lineEnd = nextLineEnd(bytes, from: span.start)
        let (method, target, version) = try parseRequestLine(bytes, span.start, lineEnd)
        let headers = try parseFields(bytes, from: lineEnd + 2, to: span.end)
        try checkHost(headers, version: version)
        return .complete(HTTPRequestHead(method: method, target: target, version: version, headers: headers),
                         length: span.end)
    }

    /// Parses a response head (status-line + fields) at the start of `bytes`.
    /// Leading empty lines are not skipped here: a server that sends them is
    /// out of step with its own framing, which a proxy must not paper over.
    public static func parseResponseHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPResponseHead> {
        guard let span = try findHead(bytes, maxHeadBytes: maxHeadBytes, skipLeadingEmptyLines: false) else {
            return .incomplete
        }
        let lineEnd = nextLineEnd(bytes, from: span.start)
        let (version, status, reason) = try parseStatusLine(bytes, span.start, lineEnd)
        let headers = try parseFields(bytes, from: lineEnd + 2, to: span.end)
        return .complete(HTTPResponseHead(status: status, reason: reason, version: version, headers: headers),
                         length: span.end)
    }

    // MARK: - Finding the head

    /// Where the head starts (after skipped empty lines) and ends (just past the
    /// empty line), or nil when more bytes are needed. Line endings are checked
    /// here once, so the line parsers can rely on every CR being followed by LF.
    static func findHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int,
                         skipLeadingEmptyLines: Bool) throws(HTTPParseError) -> (start: Int, end: Int)? {
        let count = bytes.count
        let scanLimit = min(count, max(maxHeadBytes, 0))
        var i = 0
        var lineStart = 0
        var headStart = 0
        while i < scanLimit {
            let b = bytes[i]
            if b == ByteClass.cr {
                guard i + 1 < count else { break }
                guard bytes[i + 1] == ByteClass.lf else { throw HTTPParseError(.malformed, "bare CR in head") }
                if i == lineStart {
                    if i == headStart {
                        guard skipLeadingEmptyLines else { throw HTTPParseError(.malformed, "empty start-line") }
                        headStart = i + 2
                        lineStart = i + 2
                        i += 2
                        continue
                    }
                    let end = i + 2
                    guard end <= maxHeadBytes else { throw HTTPParseError(.headTooLarge, "head larger than \(maxHeadBytes) bytes") }
                    return (headStart, end)
                }
                lineStart = i + 2
                i += 2
                continue
            }
            if b == ByteClass.lf { throw HTTPParseError(.malformed, "bare LF in head") }
            i += 1
        }
        if count > maxHeadBytes { throw HTTPParseError(.headTooLarge, "head larger than \(maxHeadBytes) bytes") }
        return nil
    }

    /// Index of the CR ending the line that starts at `from` (findHead guarantees one).
    @inline(__always)
    static func nextLineEnd(_ bytes: UnsafeRawBufferPointer, from: Int) -> Int {
        var i = from
        while i < bytes.count && bytes[i] != ByteClass.cr { i += 1 }
        return i
    }

    @inline(__always)
    static func string(_ bytes: UnsafeRawBufferPointer, _ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    // MARK: - Start lines

    static func parseRequestLine(_ bytes: UnsafeRawBufferPointer, _ start: Int,
                                 _ end: Int) throws(HTTPParseError) -> (String, String, HTTPVersion) {
        var p = start
        while p < end && ByteClass.isToken(bytes[p]) { p += 1 }
        guard p > start else { throw HTTPParseError(.malformed, "invalid request method") }
        guard p < end && bytes[p] == ByteClass.sp else { throw HTTPParseError(.malformed, "invalid request method") }
        let method = string(bytes, start, p)

        let targetStart = p + 1
        var q = targetStart
        while q < end && ByteClass.isTargetByte(bytes[q]) { q += 1 }
        guard q > targetStart else { throw HTTPParseError(.malformed, "invalid request-target") }
        guard q < end && bytes[q] == ByteClass.sp else { throw HTTPParseError(.malformed, "invalid request-target") }
        let target = string(bytes, targetStart, q)

        guard end - (q + 1) == 8 else { throw HTTPParseError(.malformed, "invalid HTTP version") }
        let version = try parseVersion(bytes, q + 1)
        return (method, target, version)
    }

    static func parseStatusLine(_ bytes: UnsafeRawBufferPointer, _ start: Int,
                                _ end: Int) throws(HTTPParseError) -> (HTTPVersion, Int, String) {
        guard end - start >= 12 else { throw HTTPParseError(.malformed, "invalid status-line") }
        let version = try parseVersion(bytes, start)
        guard bytes[start + 8] == ByteClass.sp else { throw HTTPParseError(.malformed, "invalid status-line") }
        let d0 = bytes[start + 9], d1 = bytes[start + 10], d2 = bytes[start + 11]
        guard ByteClass.isDigit(d0), ByteClass.isDigit(d1), ByteClass.isDigit(d2), d0 != 48 else {
            throw HTTPParseError(.malformed, "invalid status code")
        }
        let status = Int(d0 - 48) * 100 + Int(d1 - 48) * 10 + Int(d2 - 48)
        // "HTTP/1.1 200" with no SP and no reason is accepted: servers send it,
        // and it is unambiguous.
        let afterCode = start + 12
        if afterCode == end { return (version, status, "") }
        guard bytes[afterCode] == ByteClass.sp else { throw HTTPParseError(.malformed, "invalid status-line") }
        for i in (afterCode + 1)..<end where !ByteClass.isFieldValue(bytes[i]) {
            throw HTTPParseError(.malformed, "invalid character in reason phrase")
        }
        return (version, status, string(bytes, afterCode + 1, end))
    }

    /// `HTTP/1.0` or `HTTP/1.1` at `at` (8 bytes, bounds checked by the caller).
    static func parseVersion(_ bytes: UnsafeRawBufferPointer, _ at: Int) throws(HTTPParseError) -> HTTPVersion {
        guard bytes[at] == UInt8(ascii: "H"), bytes[at + 1] == UInt8(ascii: "T"),
              bytes[at + 2] == UInt8(ascii: "T"), bytes[at + 3] == UInt8(ascii: "P"),
              bytes[at + 4] == UInt8(ascii: "/"), bytes[at + 6] == UInt8(ascii: "."),
              ByteClass.isDigit(bytes[at + 5]), ByteClass.isDigit(bytes[at + 7]) else {
            throw HTTPParseError(.malformed, "invalid HTTP version")
        }
        let major = bytes[at + 5] - 48, minor = bytes[at + 7] - 48
        guard major == 1, minor <= 1 else { throw HTTPParseError(.malformed, "unsupported HTTP version \(major).\(minor)") }
        return minor == 0 ? .http1_0 : .http1_1
    }

    // MARK: - Fields

    /// Field lines between `from` and the final CRLF before `to`.
    static func parseFields(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int) throws(HTTPParseError) -> HTTPHeaders {
        var fields: [HTTPHeaders.Field] = []
        var lineStart = from
        let sectionEnd = to - 2
        while lineStart < sectionEnd {
            let lineEnd = nextLineEnd(bytes, from: lineStart)
            let first = bytes[lineStart]
            if ByteClass.isOWS(first) { throw HTTPParseError(.malformed, "obsolete line folding") }
            var p = lineStart
            while p < lineEnd && ByteClass.isToken(bytes[p]) { p += 1 }
            guard p < lineEnd, bytes[p] == UInt8(ascii: ":") else {
                if p < lineEnd && ByteClass.isOWS(bytes[p]) {
                    throw HTTPParseError(.malformed, "whitespace between field name and colon")
                }
                throw HTTPParseError(.malformed, "invalid field name")
            }
            guard p > lineStart else { throw HTTPParseError(.malformed, "empty field name") }
            var valueStart = p + 1
            while valueStart < lineEnd && ByteClass.isOWS(bytes[valueStart]) { valueStart += 1 }
            var valueEnd = lineEnd
            while valueEnd > valueStart && ByteClass.isOWS(bytes[valueEnd - 1]) { valueEnd -= 1 }
            var v = valueStart
            while v < valueEnd {
                guard ByteClass.isFieldValue(bytes[v]) else { throw HTTPParseError(.malformed, "invalid character in field value") }
                v += 1
            }
            fields.append(HTTPHeaders.Field(name: string(bytes, lineStart, p), value: string(bytes, valueStart, valueEnd)))
            lineStart = lineEnd + 2
        }
        return HTTPHeaders(fields: fields)
    }

    /// RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0, and
    /// its value must be a uri-host with an optional port.
    static func checkHost(_ headers: HTTPHeaders, version: HTTPVersion) throws(HTTPParseError) {
        var host: String?
        for field in headers where HTTPHeaders.equalNames(field.name, "host") {
            guard host == nil else { throw HTTPParseError(.malformed, "multiple Host fields") }
            host = field.value
        }
        guard let host else {
            if version == .http1_1 { throw HTTPParseError(.malformed, "missing Host") }
            return
        }
        for c in host.utf8 where !isHostFieldByte(c) {
            throw HTTPParseError(.malformed, "invalid Host")
        }
    }

    /// unreserved / pct-encoded / sub-delims, plus ':' and brackets for port and IPv6.
    static func isHostFieldByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~%!$&'()*+,;=:[]".utf8.contains(c)
        }
    }
}
