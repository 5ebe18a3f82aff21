import HTTP1
import ResponseSerialization

/// The config's `rules`, tried in order: the first rule whose every present
/// `match` field matches an exchange decides how its body is logged.
///
/// - `host`: glob against the URL's host (no port, no brackets, no user info),
///   case-insensitive.
/// - `path`: glob against the URL's path without query or fragment (`/` when empty).
/// - `method`: the request method is one of the list (methods are case-sensitive,
///   the config upper-cases them).
/// - `status`: the response status matches a pattern; never matches without a response.
/// - `contentType`: the response's media type (parameters dropped) matches a pattern.
/// - `headers`: every named header is present in the request or the response
///   (names compared case-insensitively).
public struct RuleSet: Sendable {
    /// The rule name recorded when no rule matched.
    public static let defaultRuleName = "default"

    public let rules: [Rule]

    public init(rules: [Rule]) {
        self.rules = rules
    }

    /// The first matching rule, or nil (then the default serializer applies).
    public func match(_ exchange: CapturedExchange) -> Rule? {
        guard !rules.isEmpty else { return nil }
        let target = URLTarget(url: exchange.url, hostHeader: exchange.request.headers.first(name: "Host"))
        let contentType = exchange.response?.headers.first(name: "Content-Type")
        return rules.first { RuleSet.matches($0.match, exchange, target, contentType) }
    }

    private static func matches(_ match: RuleMatch, _ exchange: CapturedExchange, _ target: URLTarget,
                                _ contentType: String?) -> Bool {
        if let methods = match.methods, !methods.contains(exchange.request.method) { return false }
        if let host = match.host, !host.matches(target.host) { return false }
        if let path = match.path, !path.matches(target.path) { return false }
        if let patterns = match.status {
            guard let status = exchange.response?.status, patterns.contains(where: { $0.matches(status) }) else { return false }
        }
        if let patterns = match.contentType {
            guard contentType != nil, patterns.contains(where: { $0.matches(contentType) }) else { return false }
        }
        if let names = match.headers {
            for name in names {
                let present = exchange.request.headers.contains(name: name)
                    || exchange.response?.headers.contains(name: name) == true
                if !present { return false }
            }
        }
        return true
    }

    /// The serializer used when no rule matches, chosen by media type (and by the
    /// `bplist00` magic, which identifies a binary property list whatever it is labelled):
    ///
    /// | media type | serializer |
    /// |---|---|
    /// | `application/json`, `text/json`, `*/*+json` | json |
    /// | `application/x-ndjson`, `application/ndjson`, `application/jsonl`, `application/x-jsonlines`, `application/jsonlines` | jsonLines |
    /// | `application/x-plist`, `application/x-bplist`, `application/plist`, or body `bplist00…` | propertyList |
    /// | `text/event-stream` | eventStream |
    /// | `text/*`, `*/xml`, `*/*+xml`, `application/x-www-form-urlencoded`, `application/javascript`, `application/x-javascript`, `application/ecmascript` | string |
    /// | anything else, or no Content-Type | data |
    public static func defaultSerializer(contentType: String?, body: [UInt8]) -> SerializerSpec.Kind {
        if body.starts(with: bplistMagic) { return .propertyList }
        guard let contentType, let mime = MIMEType(contentType) else { return .data }
        let type = mime.type, subtype = mime.subtype
        switch (type, subtype) {
        case ("application", "json"), ("text", "json"):
            return .json
        case ("application", "x-ndjson"), ("application", "ndjson"), ("application", "jsonl"),
             ("application", "x-jsonlines"), ("application", "jsonlines"):
            return .jsonLines
        case ("application", "x-plist"), ("application", "x-bplist"), ("application", "plist"):
            return .propertyList
        case ("text", "event-stream"):
            return .eventStream
        case ("application", "x-www-form-urlencoded"), ("application", "javascript"),
             ("application", "x-javascript"), ("application", "ecmascript"):
            return .string
        default:
            break
        }
        if subtype.hasSuffix("+json") { return .json }
        if type == "text" || subtype == "xml" || subtype.hasSuffix("+xml") { return .string }
        return .data
    }

    static let bplistMagic: [UInt8] = Array("bplist00".utf8)
}

/// The host and path of a request, for rule matching.
struct URLTarget {
    var host: String
    var path: String

    /// `url` is absolute (`http://user@host:port/path?q#f`); for an origin-form
    /// target the host comes from the Host header.
    init(url: String, hostHeader: String?) {
        let utf8 = url.utf8
        var authority: Substring
        var rest: Substring
        if let schemeEnd = url.range(of: "://") {
            let afterScheme = url[schemeEnd.upperBound...]
            let end = afterScheme.utf8.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
                ?? afterScheme.endIndex
            authority = afterScheme[..<end]
            rest = afterScheme[end...]
        } else {
            authority = (hostHeader ?? "")[...]
            rest = url[utf8.startIndex...]
        }
        if let at = authority.utf8.lastIndex(of: UInt8(ascii: "@")) {
            authority = authority[authority.index(after: at)...]
        }
        if authority.utf8.first == UInt8(ascii: "["), let close = authority.utf8.firstIndex(of: UInt8(ascii: "]")) {
            host = String(authority[authority.index(after: authority.startIndex)..<close])
        } else if let colon = authority.utf8.firstIndex(of: UInt8(ascii: ":")) {
            host = String(authority[..<colon])
        } else {
            host = String(authority)
        }
        let pathEnd = rest.utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        let bare = rest[..<pathEnd]
        path = bare.isEmpty ? "/" : String(bare)
    }
}
