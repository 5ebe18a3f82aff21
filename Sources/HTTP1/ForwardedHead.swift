// The heads a proxy forwards: its own version, the target's Host, no hop-by-hop fields;
// written straight into the engine's output buffer, or built as values.

extension HTTPRequestHead {
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
    /// - Parameter host: the Host value to send instead of the authority's (a reverse
    ///   listener's `keepHost` passes the client's own).
    public func writeForwardedWireForm(authority: HTTPAuthority, originTarget: String, keepUpgrade: Bool,
                                       host hostOverride: String? = nil, to sink: WireFormSink) {
        let headers = self.headers
        let hostValue = hostOverride ?? authority.hostFieldValue
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
}

extension HTTPResponseHead {
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
                    out.putStatusLine(version: .http1_1, status: status, reason: reason)
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
