import HTTP1

/// Opening a tunnel through an HTTP parent, without sockets: `CONNECT host:port` (with
/// `Proxy-Authorization` when credentials are set), then the parent's answer.
///
/// Rules:
/// - A 2xx answer opens the tunnel; its head is consumed, any byte after it is the
///   origin's (RFC 9110 §9.3.6: a 2xx CONNECT answer has no body).
/// - 407 is `upstreamProxyAuthFailed`: credentials missing or refused. It is not passed
///   on to the client: a client's own `Proxy-Authorization` is for Tapwire, never the parent.
/// - Any other answer is `upstreamProxyFailed`, carrying the parent's answer (head and
///   body, at most `maxAnswerBytes` in all) to pass on as it is. Its body is waited for
///   until its framing ends it: the Content-Length, a chunked body's last chunk, or (with
///   neither) the parent's close; past `maxAnswerBytes` it is cut there.
/// - A head larger than `maxAnswerBytes`, or bytes that are no HTTP/1 response, fail with
///   `upstreamProxyFailed` and no answer; so does the parent closing before a whole head.
struct HTTPConnectHandshake {
    let target: HTTPAuthority
    let parent: ParentProxy
    /// `limits.maxHeaderBytes`.
    let maxAnswerBytes: Int
    private var refused: (head: HTTPResponseHead, headLength: Int, body: BodyFraming)?

    init(target: HTTPAuthority, parent: ParentProxy, maxAnswerBytes: Int) {
        self.target = target
        self.parent = parent
        self.maxAnswerBytes = maxAnswerBytes
    }

    /// The CONNECT request.
    func request() -> [UInt8] {
        let authority = HTTPAuthority(scheme: "", host: target.host, port: target.port).description
        var head = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let credentials = parent.credentials { head += "Proxy-Authorization: \(credentials.basicAuthorization)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    /// Everything the parent sent so far (the input is only drained once this is done).
    mutating func received(_ bytes: UnsafeRawBufferPointer) -> ParentHandshakeStep {
        if let refused {
            let whole: Int?
            switch refused.body {
            case .none: whole = refused.headLength
            // Past `maxAnswerBytes` the page is cut there anyway; a Content-Length near 2^63
            // must not overflow the sum.
            case .contentLength(let n): whole = n > UInt64(maxAnswerBytes) ? nil : refused.headLength + Int(n)
            // Framed by the chunked decoder over what has come so far (at most maxAnswerBytes,
            // so reading it again on each call stays cheap): a last chunk with extensions or
            // trailers ends the page too, and chunk data that happens to end in "0\r\n" does
            // not. Broken chunking ends the page where it broke.
            case .chunked:
                var framer = BodyFramer(.chunked)
                do {
                    let n = try framer.consume(UnsafeRawBufferPointer(rebasing: bytes[refused.headLength...]), payload: { _ in })
                    whole = framer.isComplete ? refused.headLength + n : nil
                } catch {
                    whole = bytes.count
                }
            case .closeDelimited: whole = nil
            }
            if let whole, whole <= bytes.count { return refusal(bytes, refused.head, length: min(whole, maxAnswerBytes)) }
            if bytes.count >= maxAnswerBytes { return refusal(bytes, refused.head, length: maxAnswerBytes) }
            return .needMore
        }
        let parsed: HeadParseResult<HTTPResponseHead>
        do {
            parsed = try HTTPHeadParser.parseResponseHead(bytes, maxHeadBytes: maxAnswerBytes)
        } catch {
            return .failed(TransportError(.upstreamProxyFailed,
                "the parent proxy \(parent.via) answered CONNECT \(target) with no HTTP response: \(error.reason)"), answer: nil)
        }
        guard case .complete(let head, let length) = parsed else { return .needMore }
        switch head.status {
        case 200...299:
            return .established(consumed: length)
        case 407:
            let why = parent.credentials == nil ? "asks for credentials and none are set" : "refused the credentials"
            return .failed(TransportError(.upstreamProxyAuthFailed,
                "the parent proxy \(parent.via) \(why) (407 \(head.reason))"), answer: nil)
        case 100...199:
            // An interim answer is no answer to CONNECT (nothing is sent to expect it).
            return .failed(TransportError(.upstreamProxyFailed,
                "the parent proxy \(parent.via) answered CONNECT \(target) with \(head.status)"), answer: nil)
        default:
            // Framing the page cannot be read by is taken as ending at the close.
            refused = (head, length, (try? head.bodyFraming(requestMethod: "CONNECT")) ?? .closeDelimited)
            return received(bytes)
        }
    }

    /// The parent closed the connection; `bytes` is what it sent.
    mutating func closed(_ bytes: UnsafeRawBufferPointer) -> ParentHandshakeStep {
        if let refused { return refusal(bytes, refused.head, length: min(bytes.count, maxAnswerBytes)) }
        return .failed(TransportError(.upstreamProxyFailed,
            "the parent proxy \(parent.via) closed the connection before answering CONNECT \(target)"), answer: nil)
    }

    private func refusal(_ bytes: UnsafeRawBufferPointer, _ head: HTTPResponseHead, length: Int) -> ParentHandshakeStep {
        .failed(TransportError(.upstreamProxyFailed,
            "the parent proxy \(parent.via) refused CONNECT \(target): \(head.status) \(head.reason)"),
                answer: Array(bytes.prefix(length)))
    }
}
