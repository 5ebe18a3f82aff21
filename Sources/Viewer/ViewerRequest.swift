import ResponseSerialization
import HTTP1

/// A request to the viewer: the head, its path and decoded query parameters, and the body.
struct ViewerRequest {
    let head: HTTPRequestHead
    let path: String
    let parameters: [String: String]
    let body: [UInt8]

    init(head: HTTPRequestHead, body: [UInt8]) {
        self.head = head
        self.body = body
        let target = head.target
        if let q = target.firstIndex(of: "?") {
            path = String(target[..<q])
            parameters = ViewerRequest.form(String(target[target.index(after: q)...]))
        } else {
            path = target
            parameters = [:]
        }
    }

    var method: String { head.method }
    func header(_ name: String) -> String? { head.headers.first(name: name) }

    /// `application/x-www-form-urlencoded` pairs (a URL's query, a form body); the first of a
    /// repeated name wins.
    static func form(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = percentDecoded(String(parts[0])) else { continue }
            let value = parts.count > 1 ? percentDecoded(String(parts[1])) : ""
            if let value, out[name] == nil { out[name] = value }
        }
        return out
    }

    /// `+` as space and `%XX` escapes; nil when an escape is malformed or the bytes are not UTF-8.
    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(32)
            case UInt8(ascii: "%"):
                guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else { return nil }
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// A whole answer (streamed ones, the live list and HAR, write to the socket themselves).
struct ViewerResponse {
    var status: Int
    var reason: String
    var contentType: String
    var body: [UInt8]
    var extraHeaders: [(String, String)] = []

    static func json(_ body: [UInt8], status: Int = 200, reason: String = "OK") -> ViewerResponse {
        ViewerResponse(status: status, reason: reason, contentType: "application/json", body: body)
    }

    static func text(_ text: String, status: Int = 200, reason: String = "OK") -> ViewerResponse {
        ViewerResponse(status: status, reason: reason, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// `{"error": message}` (and `"column"` for a query error).
    static func error(_ status: Int, _ reason: String, _ message: String, column: Int? = nil) -> ViewerResponse {
        var out = Array("{\"error\":".utf8)
        JSONWriter.appendQuoted(message, into: &out)
        if let column { out += Array(",\"column\":\(column)".utf8) }
        out.append(UInt8(ascii: "}"))
        return json(out, status: status, reason: reason)
    }

    /// Headers every answer carries: nothing cached, nothing framed or sniffed, scripts only
    /// from this origin. Never an `Access-Control-Allow-*`: no other origin may read.
    static let commonHeaders: [(String, String)] = [
        ("Cache-Control", "no-store"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
        ("Referrer-Policy", "no-referrer"),
        ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"),
    ]

    func head(keepAlive: Bool, headOnly: Bool = false) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in ViewerResponse.commonHeaders + extraHeaders { text += "\(name): \(value)\r\n" }
        text += keepAlive ? "\r\n" : "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }
}
