import HTTP1

/// The head of a plain-HTTP request sent to an HTTP(S) parent: absolute-form (RFC 9112
/// §3.2.2), the same fields the origin would get, and the parent's `Proxy-Authorization`
/// when credentials are set. The client's own `Proxy-Authorization` (for Tapwire) is
/// hop-by-hop and already dropped.
enum ParentRequestHead {
    static func write(_ head: HTTPRequestHead, authority: HTTPAuthority, originTarget: String, parent: ParentProxy,
                      keepUpgrade: Bool, host: String? = nil, to sink: WireFormSink) {
        let target = authority.url(originTarget: originTarget)
        guard let credentials = parent.credentials else {
            head.writeForwardedWireForm(authority: authority, originTarget: target, keepUpgrade: keepUpgrade, host: host, to: sink)
            return
        }
        let field = Array("Proxy-Authorization: \(credentials.basicAuthorization)\r\n".utf8)
        head.writeForwardedWireForm(authority: authority, originTarget: target, keepUpgrade: keepUpgrade, host: host) { capacity, fill in
            // The sink runs `fill` before it returns: it never really escapes.
            withoutActuallyEscaping(fill) { fill in
                sink(capacity + field.count) { base in
                    let written = fill(base)
                    // A head ends with its empty line (CRLF): the field goes in before it.
                    guard written >= 2 else { return written }
                    let end = base + written - 2
                    for (i, byte) in field.enumerated() { end[i] = byte }
                    end[field.count] = UInt8(ascii: "\r")
                    end[field.count + 1] = UInt8(ascii: "\n")
                    return written + field.count
                }
            }
        }
    }
}
