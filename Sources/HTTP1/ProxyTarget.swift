// CONTRACT (filled in by the HTTP1 work): signatures here are what ProxyEngine calls.

/// Where a proxied request goes, from its request-target.
public struct HTTPAuthority: Sendable, Hashable, CustomStringConvertible {
    public var scheme: String   // "http", "https" (authority-form: "")
    /// Host without brackets: `example.com`, `127.0.0.1`, `::1`.
    public var host: String
    public var port: Int
    public init(scheme: String, host: String, port: Int) { self.scheme = scheme; self.host = host; self.port = port }
    /// `host:port`, bracketing IPv6 literals. Written into the string's storage in one
    /// pass, without interpolation or a generic scan for `:`: it is the Host field of every
    /// forwarded request, made on the event loop.
    public var description: String {
        guard (0...99_999).contains(port) else { return "\(bracketedHost):\(port)" }
        var host = self.host
        return host.withUTF8 { h in
            let bracket = HTTPAuthority.isIPv6Literal(h)
            // The exact length: up to 15 bytes (`127.0.0.1:19000`) the string is stored
            // inline, where a spare 8 made every one a heap allocation.
            let digits = port < 10 ? 1 : port < 100 ? 2 : port < 1000 ? 3 : port < 10000 ? 4 : 5
            return String(unsafeUninitializedCapacity: h.count + (bracket ? 2 : 0) + 1 + digits) { out in
                var i = 0
                if bracket { out[i] = UInt8(ascii: "["); i += 1 }
                for byte in h { out[i] = byte; i += 1 }
                if bracket { out[i] = UInt8(ascii: "]"); i += 1 }
                out[i] = UInt8(ascii: ":")
                i += 1
                guard let base = out.baseAddress else { return i }
                return i + DecimalText.write(UInt64(port), to: base + i)
            }
        }
    }

    /// The host as it appears in a URI or Host field: IPv6 literals in brackets.
    public var bracketedHost: String {
        var text = host
        return text.withUTF8 { HTTPAuthority.isIPv6Literal($0) } ? "[\(host)]" : host
    }

    /// A host holding `:` can only be an IPv6 literal (a reg-name or IPv4 cannot).
    static func isIPv6Literal(_ host: UnsafeBufferPointer<UInt8>) -> Bool {
        host.contains(UInt8(ascii: ":"))
    }

    /// The default port of `scheme` (80 for http, 443 for https), nil for others.
    public var defaultPort: Int? {
        switch scheme {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    /// The Host field value: the port is left out when it is the scheme's default.
    public var hostFieldValue: String { port == defaultPort ? bracketedHost : description }

    /// `scheme://host[:port]originTarget`, as a log record's `url` shows an
    /// absolute-form request (authority-form ones are logged as `description`).
    public func url(originTarget: String) -> String {
        "\(scheme)://\(hostFieldValue)\(originTarget)"
    }
}

public enum ProxyRequestForm: Sendable, Equatable {
    /// `GET http://host[:port]/path?q HTTP/1.1`: forward. `originTarget` is `/path?q` (`/` when empty).
    case absolute(HTTPAuthority, originTarget: String)
    /// `CONNECT host:port`.
    case authority(HTTPAuthority)
    /// `GET /path`: addressed to the proxy itself (admin endpoints).
    case origin(path: String)
    /// `OPTIONS *`.
    case asterisk
}

extension HTTPRequestHead {
    /// Classifies the request-target. Throws `.malformed` for a target that fits no
    /// form, an absolute-form with a scheme other than http/https, a missing or
    /// invalid host or port (0, > 65535, non-digits), userinfo, or CONNECT without
    /// authority-form.
    public func proxyForm() throws(HTTPParseError) -> ProxyRequestForm {
        // On the target's bytes where they are: `Array(target.utf8)` would allocate and copy
        // per request, on the event loop.
        let method = self.method, target = self.target
        return try HTTPHeaders.withUTF8(target) { t in
            Result { () throws(HTTPParseError) -> ProxyRequestForm in
                if method == "CONNECT" {
                    let (host, port) = try RequestTarget.parseHostPort(t, scheme: "").get()
                    return .authority(HTTPAuthority(scheme: "", host: host, port: port))
                }
                guard let first = t.first else { throw HTTPParseError(.malformed, "empty request-target") }
                if first == UInt8(ascii: "/") { return .origin(path: target) }
                if t.count == 1 && first == UInt8(ascii: "*") {
                    guard method == "OPTIONS" else { throw HTTPParseError(.malformed, "asterisk-form is only for OPTIONS") }
                    return .asterisk
                }
                return try RequestTarget.parseAbsolute(t)
            }
        }.get()
    }

    /// The head to send upstream for an absolute-form request: origin-form target,
    /// `Host` replaced by the authority from the target (the target wins over a
    /// conflicting Host), hop-by-hop fields removed (see `removingHopByHop`).
    /// The version is ours (RFC 9110 §6.2: an intermediary sends its own version).
    public func forwardedRequestHead(authority: HTTPAuthority, originTarget: String, keepUpgrade: Bool) -> HTTPRequestHead {
        var forwardedHeaders = headers.removingHopByHop(keepUpgrade: keepUpgrade)
        let host = authority.hostFieldValue
        if forwardedHeaders.contains(name: "host") {
            forwardedHeaders.replaceOrAdd(name: "Host", value: host)
        } else {
            forwardedHeaders.insert(name: "Host", value: host, at: 0)
        }
        return HTTPRequestHead(method: method, target: originTarget, version: .http1_1, headers: forwardedHeaders)
    }

    /// `forwardedRequestHead(…).serialized()` in one pass, without building the intermediate
    /// head (replacing Host would copy the field array and the bytes, on the loop, per
    /// request). Equal byte for byte to the two-step path: a test and fuzz invariant.
    public func forwardedWireForm(authority: HTTPAuthority, originTarget: String, keepUpgrade: Bool) -> [UInt8] {
        WireForm.collect { writeForwardedWireForm(authority: authority, originTarget: originTarget, keepUpgrade: keepUpgrade, to: $0) }
    }

    /// `forwardedWireForm` written into memory `sink` provides (the engine's output buffer).
    public func writeForwardedWireForm(authority: HTTPAuthority, originTarget: String, keepUpgrade: Bool,
                                       to sink: WireFormSink) {
        let headers = self.headers
        let hostValue = authority.hostFieldValue
        HTTPHeaders.withUTF8(method) { method in
            HTTPHeaders.withUTF8(originTarget) { target in
                HTTPHeaders.withUTF8(hostValue) { host in
                    headers.bytes.withUnsafeBufferPointer { b in
                        let spans = headers.spans
                        var hasUpgrade = false, hasHost = false
                        for span in spans {
                            switch HopRole(bytes: UnsafeBufferPointer(rebasing: b[span.name])) {
                            case .upgrade: hasUpgrade = true
                            case .keep: if span.nameEnd &- span.nameStart == 4 { hasHost = true }
                            default: break
                            }
                        }
                        let keepsUpgrade = keepUpgrade && hasUpgrade
                        let connectionMayName = HTTPHeaders.connectionMayNameFields(spans: spans, in: b)
                        let hostName: StaticString = "Host", connectionName: StaticString = "Connection"
                        let upgradeValue: StaticString = "upgrade"
                        // Request-line and the fields, plus two allowances: Host's (a Host field
                        // added, or the first one's value replaced by a longer one) and
                        // Connection's (`Connection: upgrade` added, or a shorter value grown to
                        // `upgrade`).
                        let capacity = method.count + target.count + WireForm.versionCapacity + 4
                            + WireForm.fieldsCapacity(headers) + host.count + 8 + 21
                        sink(capacity) { base in WireForm.fill(base, capacity: capacity) { out in
                            out.put(method)
                            out.put(ByteClass.sp)
                            out.put(target)
                            out.put(ByteClass.sp)
                            out.putVersion(.http1_1)
                            out.putCRLF()
                            // The target's authority wins over the client's Host: it takes the
                            // first Host field's place (and name), or leads without one.
                            if !hasHost { out.putField(name: hostName.buffer, value: host) }
                            var hostWritten = false, connectionWritten = false
                            for span in spans {
                                let name = UnsafeBufferPointer(rebasing: b[span.name])
                                var value = UnsafeBufferPointer(rebasing: b[span.value])
                                switch HopRole(bytes: name) {
                                case .keep:
                                    if name.count == 4 {
                                        if hostWritten { continue }
                                        hostWritten = true
                                        value = host
                                    }
                                case .connection:
                                    // Kept only to carry `upgrade` onwards, once.
                                    if !keepsUpgrade || connectionWritten { continue }
                                    connectionWritten = true
                                    value = upgradeValue.buffer
                                case .upgrade:
                                    if !keepsUpgrade { continue }
                                case .drop:
                                    continue
                                case .other:
                                    if connectionMayName && HTTPHeaders.connectionNames(name, spans: spans, in: b) { continue }
                                }
                                out.putField(name: name, value: value)
                            }
                            if keepsUpgrade && !connectionWritten {
                                out.putField(name: connectionName.buffer, value: upgradeValue.buffer)
                            }
                            out.putCRLF()
                        } }
                    }
                }
            }
        }
    }

    /// Whether the client asked to close after this exchange (HTTP/1.0 without
    /// keep-alive, or `Connection: close`).
    public var wantsClose: Bool { ConnectionOptions.wantsClose(version: version, headers: headers) }

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
    public var wantsClose: Bool { ConnectionOptions.wantsClose(version: version, headers: headers) }

    /// The status-line, fields and CRLF, with the head's own version.
    public func serialized() -> [UInt8] {
        HTTPHeaders.withUTF8(reason) { reason in
            WireForm.build(capacity: WireForm.statusLineCapacity(reason) + WireForm.fieldsCapacity(headers)) { out in
                putStatusLine(version: version, reason: reason, to: &out)
                out.putFields(headers)
            }
        }
    }

    private func putStatusLine(version: HTTPVersion, reason: UnsafeBufferPointer<UInt8>, to out: inout WireCursor) {
        out.putVersion(version)
        out.put(ByteClass.sp)
        let code = min(max(status, 0), 999)
        out.put(UInt8(48 + code / 100))
        out.put(UInt8(48 + code / 10 % 10))
        out.put(UInt8(48 + code % 10))
        out.put(ByteClass.sp)
        out.put(reason)
        out.putCRLF()
    }

    /// What the client is sent for this upstream response, in one pass: the same bytes as
    /// `forwardedResponseHead(keepUpgrade: false, …)` with `connection` as an added
    /// Connection field, then `serialized()`, without building the intermediate head
    /// (two field arrays per response, on the loop).
    /// - Parameter droppingTransferEncoding: the body goes out without its chunk framing (to an
    ///   HTTP/1.0 client, which must not be sent Transfer-Encoding: RFC 9112 §6.1).
    public func forwardedWireForm(connection: String?, droppingTransferEncoding: Bool = false) -> [UInt8] {
        WireForm.collect { writeForwardedWireForm(connection: connection, droppingTransferEncoding: droppingTransferEncoding, to: $0) }
    }

    /// `forwardedWireForm` written into memory `sink` provides (the engine's output buffer).
    public func writeForwardedWireForm(connection: String?, droppingTransferEncoding: Bool = false, to sink: WireFormSink) {
        let headers = self.headers
        HTTPHeaders.withUTF8(reason) { reason in
            HTTPHeaders.withUTF8(connection ?? "") { connectionValue in
                // At most every field, plus the added Connection field.
                let capacity = WireForm.statusLineCapacity(reason) + WireForm.fieldsCapacity(headers)
                    + (connection == nil ? 0 : 14 + connectionValue.count)
                sink(capacity) { base in WireForm.fill(base, capacity: capacity) { out in
                    putStatusLine(version: .http1_1, reason: reason, to: &out)
                    headers.bytes.withUnsafeBufferPointer { b in
                        let spans = headers.spans
                        let connectionMayName = HTTPHeaders.connectionMayNameFields(spans: spans, in: b)
                        for span in spans {
                            let name = UnsafeBufferPointer(rebasing: b[span.name])
                            switch HopRole(bytes: name) {
                            case .keep:
                                // Of the kept fields only Transfer-Encoding is 17 bytes long.
                                if droppingTransferEncoding && name.count == 17 { continue }
                            case .connection, .upgrade, .drop:
                                continue
                            case .other:
                                if connectionMayName && HTTPHeaders.connectionNames(name, spans: spans, in: b) { continue }
                            }
                            out.putField(name: name, value: UnsafeBufferPointer(rebasing: b[span.value]))
                        }
                    }
                    if connection != nil {
                        let name: StaticString = "Connection"
                        out.putField(name: name.buffer, value: connectionValue)
                    }
                    out.putCRLF()
                } }
            }
        }
    }

    /// The head to send the client for an upstream response: hop-by-hop fields
    /// removed and our own version (RFC 9110 §6.2); `Connection: close` added
    /// when `closing`, so the client knows not to reuse the connection.
    public func forwardedResponseHead(keepUpgrade: Bool, closing: Bool) -> HTTPResponseHead {
        var forwardedHeaders = headers.removingHopByHop(keepUpgrade: keepUpgrade)
        if closing && !forwardedHeaders.contains(name: "connection") {
            forwardedHeaders.add(name: "Connection", value: "close")
        }
        return HTTPResponseHead(status: status, reason: reason, version: .http1_1, headers: forwardedHeaders)
    }
}

extension HTTPHeaders {
    /// Drops hop-by-hop fields: Connection and every field it names, Proxy-Connection,
    /// Keep-Alive, TE, Trailer, Transfer-Encoding is KEPT (framing is forwarded verbatim),
    /// Proxy-Authorization, Proxy-Authenticate, and Upgrade unless `keepUpgrade`
    /// (then `Connection: upgrade` is kept too).
    /// Fields that carry framing or routing (Transfer-Encoding, Content-Length, Host)
    /// are kept even when Connection names them: dropping them would change how the
    /// next hop delimits the body we forward verbatim.
    public func removingHopByHop(keepUpgrade: Bool) -> HTTPHeaders {
        // Classified on the bytes of each name (no strings): this runs for every request.
        var hasUpgrade = false, anyHop = false
        bytes.withUnsafeBufferPointer { b in
            for span in spans {
                switch HopRole(bytes: UnsafeBufferPointer(rebasing: b[span.name])) {
                case .connection: anyHop = true
                case .upgrade: hasUpgrade = true; anyHop = true
                case .drop: anyHop = true
                case .keep, .other: break
                }
            }
        }
        guard anyHop else { return self }
        let keepsUpgrade = keepUpgrade && hasUpgrade
        var kept = 0
        var connectionAt: Int?
        var result = bytes.withUnsafeBufferPointer { b in
            let connectionMayName = HTTPHeaders.connectionMayNameFields(spans: spans, in: b)
            return filtered { span in
                let name = UnsafeBufferPointer(rebasing: b[span.name])
                let keep: Bool
                switch HopRole(bytes: name) {
                case .keep:
                    keep = true
                case .connection:
                    // Kept (its value replaced below) only to carry `upgrade` onwards.
                    keep = keepsUpgrade && connectionAt == nil
                    if keep { connectionAt = kept }
                case .upgrade:
                    keep = keepsUpgrade
                case .drop:
                    keep = false
                case .other:
                    // A field the Connection header names is hop-by-hop too.
                    keep = !(connectionMayName && HTTPHeaders.connectionNames(name, spans: spans, in: b))
                }
                if keep { kept += 1 }
                return keep
            }
        }
        if keepsUpgrade {
            if let at = connectionAt {
                result.setValue("upgrade", at: at)
            } else {
                result.add(name: "Connection", value: "upgrade")
            }
        }
        return result
    }

    /// Whether some Connection field of these lists a token other than `keep-alive`: only
    /// then can it name a field that `HopRole` lets through (a Keep-Alive field goes anyway).
    /// Most heads carry just `Connection: keep-alive`, so the loop looks the other fields up
    /// in the Connection fields only when this says it must.
    static func connectionMayNameFields(spans: [Span], in b: UnsafeBufferPointer<UInt8>) -> Bool {
        let keepAlive: StaticString = "keep-alive"
        let token = keepAlive.buffer
        for span in spans where span.nameEnd &- span.nameStart == 10
            && HopRole(bytes: UnsafeBufferPointer(rebasing: b[span.name])) == .connection {
            if !list(UnsafeBufferPointer(rebasing: b[span.value]), holdsOnly: token) { return true }
        }
        return false
    }

    /// Whether some Connection field of these (`spans` over `b`) lists `name`.
    static func connectionNames(_ name: UnsafeBufferPointer<UInt8>, spans: [Span], in b: UnsafeBufferPointer<UInt8>) -> Bool {
        for span in spans where span.nameEnd &- span.nameStart == 10
            && HopRole(bytes: UnsafeBufferPointer(rebasing: b[span.name])) == .connection {
            if list(UnsafeBufferPointer(rebasing: b[span.value]), contains: name) { return true }
        }
        return false
    }
}

/// What hop-by-hop removal does with a field, decided by comparing the name's bytes.
enum HopRole {
    /// Framing and routing fields, kept even when Connection names them.
    case keep
    case connection
    case upgrade
    /// Always hop-by-hop.
    case drop
    case other

    init(bytes n: UnsafeBufferPointer<UInt8>) {
        @inline(__always) func named(_ candidate: StaticString) -> Bool {
            let c = candidate.utf8Start
            for i in 0..<n.count where asciiLower(n[i]) != c[i] { return false }
            return true
        }
        switch n.count {
        case 2: self = named("te") ? .drop : .other
        case 4: self = named("host") ? .keep : .other
        case 7: self = named("upgrade") ? .upgrade : named("trailer") ? .drop : .other
        case 10: self = named("connection") ? .connection : named("keep-alive") ? .drop : .other
        case 14: self = named("content-length") ? .keep : .other
        case 16: self = named("proxy-connection") ? .drop : .other
        case 17: self = named("transfer-encoding") ? .keep : .other
        case 18: self = named("proxy-authenticate") ? .drop : .other
        case 19: self = named("proxy-authorization") ? .drop : .other
        default: self = .other
        }
    }
}

enum ConnectionOptions {
    static func wantsClose(version: HTTPVersion, headers: HTTPHeaders) -> Bool {
        if headers.listContains(name: "connection", token: "close") { return true }
        return version == .http1_0 && !headers.listContains(name: "connection", token: "keep-alive")
    }
}

extension StaticString {
    /// The literal's UTF-8 bytes (static storage, valid for the whole run).
    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: utf8Start, count: utf8CodeUnitCount) }
}

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

/// Request-target syntax (RFC 9112 §3.2, RFC 3986 §3.2).
enum RequestTarget {
    static func parseAbsolute(_ t: UnsafeBufferPointer<UInt8>) throws(HTTPParseError) -> ProxyRequestForm {
        // scheme ":" "//"
        guard let colon = t.firstIndex(of: UInt8(ascii: ":")) else {
            throw HTTPParseError(.malformed, "request-target fits no form")
        }
        // Compared on the bytes: lowercased() allocated a string per request.
        let scheme: String
        if colon == 4 && t[0] | 0x20 == UInt8(ascii: "h") && t[1] | 0x20 == UInt8(ascii: "t")
            && t[2] | 0x20 == UInt8(ascii: "t") && t[3] | 0x20 == UInt8(ascii: "p") {
            scheme = "http"
        } else if colon == 5 && t[0] | 0x20 == UInt8(ascii: "h") && t[1] | 0x20 == UInt8(ascii: "t")
            && t[2] | 0x20 == UInt8(ascii: "t") && t[3] | 0x20 == UInt8(ascii: "p") && t[4] | 0x20 == UInt8(ascii: "s") {
            scheme = "https"
        } else {
            throw HTTPParseError(.malformed, "unsupported scheme in request-target")
        }
        guard t.count >= colon + 3, t[colon + 1] == UInt8(ascii: "/"), t[colon + 2] == UInt8(ascii: "/") else {
            throw HTTPParseError(.malformed, "absolute-form without authority")
        }
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < t.count {
            let c = t[authorityEnd]
            if c == UInt8(ascii: "/") || c == UInt8(ascii: "?") || c == UInt8(ascii: "#") { break }
            authorityEnd += 1
        }
        let (host, port) = try parseHostPort(UnsafeBufferPointer(rebasing: t[authorityStart..<authorityEnd]), scheme: scheme).get()

        // A fragment is never sent on the wire by a correct client; drop it rather than forward it.
        var end = authorityEnd
        while end < t.count && t[end] != UInt8(ascii: "#") { end += 1 }
        var origin = String(decoding: t[authorityEnd..<end], as: UTF8.self)
        if origin.isEmpty || origin.utf8.first == UInt8(ascii: "?") { origin = "/" + origin }
        return .absolute(HTTPAuthority(scheme: scheme, host: host, port: port), originTarget: origin)
    }

    /// `host[:port]` (absolute-form, port defaults by scheme) or `host:port`
    /// (authority-form, scheme "", port required). Host is lowercased.
    ///
    /// Index loops over the bytes rather than generic slice searches and `lowercased()`
    /// (Unicode-aware, a new string), since this runs on the loop per request. Every byte a
    /// host may hold is ASCII, so lowering ASCII letters is the same as `lowercased()`.
    static func parseHostPort(_ a: UnsafeBufferPointer<UInt8>, scheme: String) -> Result<(String, Int), HTTPParseError> {
        let n = a.count
        for i in 0..<n where a[i] == UInt8(ascii: "@") {
            return .failure(HTTPParseError(.malformed, "userinfo in request-target"))
        }
        let hostStart: Int, hostEnd: Int, restStart: Int
        if n > 0 && a[0] == UInt8(ascii: "[") {
            var close = 1
            while close < n && a[close] != UInt8(ascii: "]") { close += 1 }
            guard close < n else { return .failure(HTTPParseError(.malformed, "unterminated IPv6 literal")) }
            hostStart = 1
            hostEnd = close
            restStart = close + 1
            var sawColon = false
            for i in hostStart..<hostEnd {
                let c = a[i]
                if c == UInt8(ascii: ":") {
                    sawColon = true
                } else if ByteClass.hexValue(c) == nil && c != UInt8(ascii: ".") {
                    return .failure(HTTPParseError(.malformed, "invalid IPv6 literal"))
                }
            }
            guard sawColon else { return .failure(HTTPParseError(.malformed, "invalid IPv6 literal")) }
        } else {
            var colon = 0
            while colon < n && a[colon] != UInt8(ascii: ":") { colon += 1 }
            hostStart = 0
            hostEnd = colon
            restStart = colon
            for i in 0..<colon where !isRegNameByte(a[i]) {
                return .failure(HTTPParseError(.malformed, "invalid host"))
            }
        }
        guard hostEnd > hostStart else { return .failure(HTTPParseError(.malformed, "missing host")) }
        let host = String(unsafeUninitializedCapacity: hostEnd - hostStart) { out in
            for i in hostStart..<hostEnd { out[i - hostStart] = asciiLower(a[i]) }
            return hostEnd - hostStart
        }

        let rest = n - restStart
        if rest == 0 || (rest == 1 && a[restStart] == UInt8(ascii: ":")) {
            // RFC 3986 §3.2.3: an empty port means the scheme's default.
            switch scheme {
            case "http": return .success((host, 80))
            case "https": return .success((host, 443))
            default: return .failure(HTTPParseError(.malformed, "CONNECT target without port"))
            }
        }
        guard a[restStart] == UInt8(ascii: ":") else { return .failure(HTTPParseError(.malformed, "invalid authority")) }
        guard rest - 1 <= 5 else { return .failure(HTTPParseError(.malformed, "invalid port")) }
        var port = 0
        for i in (restStart + 1)..<n {
            guard ByteClass.isDigit(a[i]) else { return .failure(HTTPParseError(.malformed, "invalid port")) }
            port = port * 10 + Int(a[i] - 48)
        }
        guard (1...65535).contains(port) else { return .failure(HTTPParseError(.malformed, "invalid port")) }
        return .success((host, port))
    }

    /// unreserved / pct-encoded / sub-delims (RFC 3986 reg-name and IPv4).
    static func isRegNameByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        // Spelled out: `"-._~%…".utf8.contains(c)` was a generic search per dot of every host.
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"),
             UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
             UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
             UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }
}
