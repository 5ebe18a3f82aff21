import HTTP1

/// An HTTP/2 request's field list as the head an `Exchange` forwards over HTTP/1.1
/// (RFC 9113 §8.3.1, RFC 9110 §7.2): `:authority` becomes Host (first), `:path` the
/// origin-form target, split `cookie` fields are joined with "; " (§8.2.3), and a body
/// without a Content-Length is framed chunked, with the Transfer-Encoding field that says
/// so added (the record shows it too). The version is 2.0, so the record says `HTTP/2`.
/// Pure: nghttp2 has already checked the pseudo-fields' presence and form.
struct HTTP2RequestHead: Equatable {
    var head: HTTPRequestHead
    var path: String
    var framing: BodyFraming

    struct Refusal: Error, Equatable { var reason: String }

    static func make(fields: [(name: String, value: String)], endStream: Bool) -> Result<HTTP2RequestHead, Refusal> {
        var method: String?, path: String?, authority: String?
        var regular: [(String, String)] = []
        var cookies: [String] = []
        for (name, value) in fields {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case ":authority": authority = value
            case ":scheme": break
            case "cookie": cookies.append(value)
            default:
                if name.hasPrefix(":") { return .failure(Refusal(reason: "unknown pseudo-header field \(name)")) }
                regular.append((name, value))
            }
        }
        guard let method, method != "CONNECT" else {
            return .failure(Refusal(reason: "CONNECT inside an intercepted HTTP/2 connection is not supported"))
        }
        guard let path, path.hasPrefix("/") || (path == "*" && method == "OPTIONS") else {
            return .failure(Refusal(reason: "the request has no origin-form :path"))
        }
        if !cookies.isEmpty { regular.append(("cookie", cookies.joined(separator: "; "))) }
        if let authority, !regular.contains(where: { HTTPHeaders.equalNames($0.0, "host") }) {
            regular.insert(("host", authority), at: 0)
        }
        var head = HTTPRequestHead(method: method, target: path, version: .http2, headers: HTTPHeaders(regular))
        if endStream {
            // Any Content-Length it declared is 0 or nghttp2 refused the stream.
            return .success(HTTP2RequestHead(head: head, path: path, framing: .none))
        }
        if head.headers.contains(name: "content-length") {
            do {
                let framing = try head.bodyFraming()
                return .success(HTTP2RequestHead(head: head, path: path, framing: framing))
            } catch {
                return .failure(Refusal(reason: error.reason))
            }
        }
        head.headers.add(name: "transfer-encoding", value: "chunked")
        return .success(HTTP2RequestHead(head: head, path: path, framing: .chunked))
    }
}
