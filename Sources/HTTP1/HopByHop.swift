// Hop-by-hop fields (RFC 9110 §7.6.1): what a proxy must not forward, decided on the
// bytes of each field name.

extension HTTPHeaders {
    /// Drops hop-by-hop fields: Connection and every field it names, Proxy-Connection,
    /// Keep-Alive, TE, Trailer, Transfer-Encoding is KEPT (framing is forwarded verbatim),
    /// Proxy-Authorization, Proxy-Authenticate, X-Tapwire-Replay-Of (`ReplayOfField`), and Upgrade unless `keepUpgrade`
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
        @inline(__always) func named(_ candidate: StaticString) -> Bool { HTTPHeaders.name(n, is: candidate) }
        switch n.count {
        case 2: self = named("te") ? .drop : .other
        case 4: self = named("host") ? .keep : .other
        case 7: self = named("upgrade") ? .upgrade : named("trailer") ? .drop : .other
        case 10: self = named("connection") ? .connection : named("keep-alive") ? .drop : .other
        case 14: self = named("content-length") ? .keep : .other
        case 16: self = named("proxy-connection") ? .drop : .other
        case 17: self = named("transfer-encoding") ? .keep : .other
        case 18: self = named("proxy-authenticate") ? .drop : .other
        case 19: self = named("proxy-authorization") || named("x-tapwire-replay-of") ? .drop : .other
        default: self = .other
        }
    }
}
