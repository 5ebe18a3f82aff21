public enum HeadParseResult<Head: Sendable>: Sendable {
    /// No complete head yet (no CRLFCRLF) and the limit is not reached: read more.
    case incomplete
    /// A complete head; `length` bytes (including any leading empty lines and the
    /// final CRLFCRLF) belong to it and can be dropped from the input.
    case complete(Head, length: Int)
}

/// A strict HTTP/1 head parser (RFC 9112 §2-5) that resumes where it stopped.
///
/// A connection keeps one parser and hands it its whole unconsumed input on every
/// read. While the result is `.incomplete` the parser remembers how far it has
/// looked for the empty line, so a head that arrives a few bytes at a time costs
/// work linear in its size rather than a rescan from byte 0 per read.
///
/// Invariant the caller keeps: between an `.incomplete` result and the next call,
/// the input only grows at its end (the first bytes are the same bytes). After a
/// `.complete` result or a thrown error the parser starts afresh, so the caller
/// drops the head's `length` bytes and calls again for the next head; `reset()`
/// is for input replaced by other means. Results are those of the one-shot static
/// functions on the same bytes, however the bytes were split into reads.
public struct HTTPHeadParser: Sendable {
    /// Bytes the parser has looked at over its life, the line search and the
    /// parse of each complete head: what makes the linear bound checkable.
    public private(set) var bytesExamined = 0
    /// Everything before `scanned` has been searched for a line end; no LF lies in
    /// `lineStart..<scanned`.
    private var scanned = 0
    private var lineStart = 0
    private var headStart = 0

    public init() {}

    /// Forgets a partly scanned head, for when the input was replaced.
    public mutating func reset() {
        scanned = 0
        lineStart = 0
        headStart = 0
    }

    /// Parses a request head at the start of `bytes`, resuming the previous scan.
    /// Throws `.headTooLarge` once `bytes` holds more than `maxHeadBytes` without a
    /// complete head, `.malformed` for any syntax error.
    public mutating func parseRequestHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        guard let span = try findHead(bytes, maxHeadBytes: maxHeadBytes, skipLeadingEmptyLines: true) else {
            return .incomplete
        }
        bytesExamined += span.end - span.start
        let firstLineEnd = try Self.lineEnd(bytes, from: span.start, end: span.end)
        let (method, target, version) = try Self.parseRequestLine(bytes, span.start, firstLineEnd)
        var hosts = HostFields()
        let headers = try Self.parseFields(bytes, from: firstLineEnd + 2, to: span.end, hosts: &hosts)
        try Self.checkHost(bytes, hosts, version: version)
        return .complete(HTTPRequestHead(method: method, target: target, version: version, headers: headers),
                         length: span.end)
    }

    /// Parses a response head (status-line + fields) at the start of `bytes`,
    /// resuming the previous scan. Leading empty lines are not skipped here: a server
    /// that sends them is out of step with its own framing, which a proxy must not
    /// paper over.
    public mutating func parseResponseHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPResponseHead> {
        guard let span = try findHead(bytes, maxHeadBytes: maxHeadBytes, skipLeadingEmptyLines: false) else {
            return .incomplete
        }
        bytesExamined += span.end - span.start
        let firstLineEnd = try Self.lineEnd(bytes, from: span.start, end: span.end)
        let (version, status, reason) = try Self.parseStatusLine(bytes, span.start, firstLineEnd)
        var hosts = HostFields()
        let headers = try Self.parseFields(bytes, from: firstLineEnd + 2, to: span.end, hosts: &hosts)
        return .complete(HTTPResponseHead(status: status, reason: reason, version: version, headers: headers),
                         length: span.end)
    }

    /// One-shot: the request head at the start of `bytes`, as a fresh parser sees it.
    public static func parseRequestHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPRequestHead> {
        var parser = HTTPHeadParser()
        return try parser.parseRequestHead(bytes, maxHeadBytes: maxHeadBytes)
    }

    /// One-shot: the response head at the start of `bytes`, as a fresh parser sees it.
    public static func parseResponseHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int) throws(HTTPParseError) -> HeadParseResult<HTTPResponseHead> {
        var parser = HTTPHeadParser()
        return try parser.parseResponseHead(bytes, maxHeadBytes: maxHeadBytes)
    }

    // MARK: - Finding the head

    /// Where the head starts (after skipped empty lines) and ends (just past the
    /// empty line), or nil when more bytes are needed. Every LF must follow a CR
    /// here; a CR not followed by LF is refused by the line parsers, since no
    /// line may contain one. The search resumes at `scanned`; a complete head or
    /// an error resets the state for the next head.
    mutating func findHead(_ bytes: UnsafeRawBufferPointer, maxHeadBytes: Int,
                           skipLeadingEmptyLines: Bool) throws(HTTPParseError) -> (start: Int, end: Int)? {
        // Input shorter than what was scanned cannot be the same input grown: start over.
        if bytes.count < scanned { reset() }
        do throws(HTTPParseError) {
            let scanLimit = min(bytes.count, max(maxHeadBytes, 0))
            while let lf = ByteSearch.firstIndex(of: ByteClass.lf, in: bytes, from: scanned, to: scanLimit) {
                bytesExamined += lf + 1 - scanned
                scanned = lf + 1
                guard lf > lineStart, bytes[lf - 1] == ByteClass.cr else { throw HTTPParseError(.malformed, "bare LF in head") }
                // A line made of CRs is never valid; refusing it here keeps "\r\r\n"
                // from passing for a non-empty line and leaving the head incomplete.
                if bytes[lineStart] == ByteClass.cr && lf - 1 != lineStart {
                    throw HTTPParseError(.malformed, "bare CR in head")
                }
                if lf - 1 == lineStart {
                    if lineStart == headStart {
                        guard skipLeadingEmptyLines else { throw HTTPParseError(.malformed, "empty start-line") }
                        headStart = lf + 1
                    } else {
                        let span = (start: headStart, end: lf + 1)   // lf < scanLimit <= maxHeadBytes
                        reset()
                        return span
                    }
                }
                lineStart = lf + 1
            }
            if scanLimit > scanned {
                bytesExamined += scanLimit - scanned
                scanned = scanLimit
            }
            if bytes.count > maxHeadBytes { throw HTTPParseError(.headTooLarge, "head larger than \(maxHeadBytes) bytes") }
            return nil
        } catch {
            reset()
            throw error
        }
    }

    /// Index of the CR ending the line that starts at `from`; findHead guarantees
    /// a CRLF before `end`. A CR not followed by LF is refused.
    @inline(__always)
    static func lineEnd(_ bytes: UnsafeRawBufferPointer, from: Int, end: Int) throws(HTTPParseError) -> Int {
        guard let cr = ByteSearch.firstIndex(of: ByteClass.cr, in: bytes, from: from, to: end),
              cr + 1 < end, bytes[cr + 1] == ByteClass.lf else {
            throw HTTPParseError(.malformed, "bare CR in head")
        }
        return cr
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

    /// The Host fields seen while parsing, so the check needs no second pass.
    struct HostFields {
        var count = 0
        var firstValue: Range<Int>?
    }

    /// Field lines from `from` up to the final CRLF, which ends at `to`.
    static func parseFields(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int,
                            hosts: inout HostFields) throws(HTTPParseError) -> HTTPHeaders {
        var spans: [HTTPHeaders.Span] = []
        spans.reserveCapacity(16)
        var lineStart = from
        let sectionEnd = to - 2
        // Every loop below stops at the CR of the final CRLF at the latest, so
        // indexes stay below `to` without separate bounds checks.
        while lineStart < sectionEnd {
            if ByteClass.isOWS(bytes[lineStart]) { throw HTTPParseError(.malformed, "obsolete line folding") }
            var p = lineStart
            while ByteClass.isToken(bytes[p]) { p += 1 }
            guard bytes[p] == UInt8(ascii: ":") else {
                if ByteClass.isOWS(bytes[p]) { throw HTTPParseError(.malformed, "whitespace between field name and colon") }
                throw HTTPParseError(.malformed, "invalid field name")
            }
            guard p > lineStart else { throw HTTPParseError(.malformed, "empty field name") }
            var valueStart = p + 1
            while ByteClass.isOWS(bytes[valueStart]) { valueStart += 1 }
            var k = valueStart
            while true {
                k = ByteSearch.firstControl(in: bytes, from: k, to: to)
                let c = bytes[k]
                if c == ByteClass.htab { k += 1; continue }
                guard c == ByteClass.cr else { throw HTTPParseError(.malformed, "invalid character in field value") }
                guard bytes[k + 1] == ByteClass.lf else { throw HTTPParseError(.malformed, "bare CR in head") }
                break
            }
            var valueEnd = k
            while valueEnd > valueStart && ByteClass.isOWS(bytes[valueEnd - 1]) { valueEnd -= 1 }
            if p - lineStart == 4 && isHostName(bytes, lineStart) {
                if hosts.count == 0 { hosts.firstValue = valueStart..<valueEnd }
                hosts.count += 1
            }
            // Spans into the field section, copied once below: no string per name and value.
            spans.append(HTTPHeaders.Span(name: (lineStart - from)..<(p - from), value: (valueStart - from)..<(valueEnd - from)))
            lineStart = k + 2
        }
        return HTTPHeaders(section: UnsafeRawBufferPointer(rebasing: bytes[from..<max(from, sectionEnd)]), spans: spans)
    }

    @inline(__always)
    static func isHostName(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> Bool {
        bytes[at] | 0x20 == UInt8(ascii: "h") && bytes[at + 1] | 0x20 == UInt8(ascii: "o")
            && bytes[at + 2] | 0x20 == UInt8(ascii: "s") && bytes[at + 3] | 0x20 == UInt8(ascii: "t")
    }

    /// RFC 9112 §3.2: exactly one Host in HTTP/1.1, at most one in HTTP/1.0, and
    /// its value must be a uri-host with an optional port.
    static func checkHost(_ bytes: UnsafeRawBufferPointer, _ hosts: HostFields, version: HTTPVersion) throws(HTTPParseError) {
        guard hosts.count <= 1 else { throw HTTPParseError(.malformed, "multiple Host fields") }
        guard let range = hosts.firstValue else {
            if version == .http1_1 { throw HTTPParseError(.malformed, "missing Host") }
            return
        }
        for i in range where !ByteClass.isHostFieldByte(bytes[i]) {
            throw HTTPParseError(.malformed, "invalid Host")
        }
    }
}
