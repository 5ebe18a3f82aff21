import HTTP1
import ResponseSerialization
#if canImport(Glibc)
import Glibc
#endif

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
        return rules.first { !$0.match.websocket && RuleSet.matches($0.match, exchange, target, contentType) }
    }

    /// The first `websocket: true` rule whose match the connection's upgrade exchange meets:
    /// what its messages are serialized with (nil: the defaults). Status and Content-Type
    /// patterns describe an answer with a body, so they are not checked here.
    public func matchWebSocket(_ upgrade: CapturedExchange) -> Rule? {
        guard !rules.isEmpty else { return nil }
        let target = URLTarget(url: upgrade.url, hostHeader: upgrade.request.headers.first(name: "Host"))
        return rules.first { rule in
            guard rule.match.websocket else { return false }
            var match = rule.match
            match.status = nil
            match.contentType = nil
            return RuleSet.matches(match, upgrade, target, nil)
        }
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
    /// | `application/msgpack`, `application/x-msgpack` | msgpack |
    /// | `application/grpc`, `application/grpc+proto`, `application/grpc+json` | grpc |
    /// | `application/x-protobuf`, `application/protobuf`, `application/vnd.google.protobuf`, `application/x-google-protobuf` | protobuf |
    /// | `text/*`, `*/xml`, `*/*+xml`, `application/x-www-form-urlencoded`, `application/javascript`, `application/x-javascript`, `application/ecmascript` | string |
    /// | anything else, or no Content-Type | data |
    public static func defaultSerializer(contentType: String?, body: [UInt8]) -> SerializerSpec.Kind {
        defaultSerializer(ContentTypeFields(contentType), body: body)
    }

    static func defaultSerializer(_ contentType: ContentTypeFields, body: [UInt8]) -> SerializerSpec.Kind {
        if body.starts(with: bplistMagic) { return .propertyList }
        guard let mediaType = contentType.mediaType else { return .data }
        if mediaType == "application/json" { return .json }  // the usual case, without substrings
        let type = contentType.type, subtype = contentType.subtype
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
        case ("application", "msgpack"), ("application", "x-msgpack"):
            return .msgpack
        case ("application", "x-protobuf"), ("application", "protobuf"), ("application", "vnd.google.protobuf"),
             ("application", "x-google-protobuf"):
            return .protobuf
        case ("application", "grpc"), ("application", "grpc+proto"), ("application", "grpc+json"):
            // Before the `+json` suffix below: gRPC frames its JSON messages.
            return .grpc
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
        // `api.example.com.` is the same host (an absolute name); nginx drops the dot too.
        if host.utf8.count > 1 && host.utf8.last == UInt8(ascii: ".") { host.removeLast() }
        let pathEnd = rest.utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? rest.endIndex
        let bare = rest[..<pathEnd]
        path = bare.isEmpty ? "/" : String(bare)
    }
}

/// A Content-Type value taken apart on its bytes. Foundation's string trimming
/// and splitting (what `MIMEType` and `Charset.charsetParameter` use) cost more
/// than the rest of a record together, and every record needs these fields.
public struct ContentTypeFields: Sendable, Equatable {
    /// `type/subtype`, lower-cased, parameters and surrounding blanks dropped; nil when blank.
    public var mediaType: String?
    /// Before the first `/` (the whole media type when there is none), lower-cased.
    /// Computed: only the default serializer's less common cases read it.
    public var type: String {
        guard let mediaType else { return "" }
        guard let slash = mediaType.utf8.firstIndex(of: UInt8(ascii: "/")) else { return mediaType }
        return String(mediaType[..<slash])
    }
    /// After the last `/` (empty when there is none), lower-cased.
    public var subtype: String {
        guard let mediaType, let slash = mediaType.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(mediaType[mediaType.utf8.index(after: slash)...])
    }
    /// The `charset` parameter's value (quotes removed, case kept), nil without one.
    public var charsetParameter: String?

    public init(_ value: String?) {
        self.init()
        guard var value else { return }
        // On the string's own bytes: no array copy, and `application/json` as sent (the
        // usual case: already lower-case, no parameters) is the same string, not a new one.
        let whole = value
        value.withUTF8 { parse($0, whole: whole) }
    }

    /// The first `Content-Type` field of `headers`, read on the head's bytes: a common
    /// media type as sent becomes a shared literal, so most records make no string here.
    public init(headers: HTTPHeaders?) {
        switch headers {
        case .some(let headers): self.init(headers: headers)
        case .none: self.init()
        }
    }

    /// The same from a head's headers in place: wrapping them in an Optional copies them.
    public init(headers: borrowing HTTPHeaders) {
        self.init()
        headers.withFirstValue(name: "Content-Type") { bytes in
            if let bytes { parse(bytes, whole: nil) }
        }
    }

    private init() {}

    /// Media types most responses carry, as immortal literals (no allocation, no refcount).
    private static let commonMediaTypes: [String] = [
        "application/json", "text/html", "text/plain", "application/javascript", "text/css",
        "application/xml", "text/xml", "application/octet-stream", "application/x-www-form-urlencoded",
        "text/event-stream", "application/x-ndjson", "image/png", "image/jpeg", "image/svg+xml",
    ]

    private static func common(_ essence: UnsafeBufferPointer<UInt8>) -> String? {
        guard let p = essence.baseAddress else { return nil }
        for candidate in commonMediaTypes where candidate.utf8.count == essence.count {
            // Literals are stored contiguously; elementsEqual went byte by byte through iterators.
            let same = candidate.utf8.withContiguousStorageIfAvailable { c in
                c.baseAddress.map { memcmp($0, p, essence.count) == 0 } ?? false
            }
            if same == true { return candidate }
        }
        return nil
    }

    /// `whole` is the value as a string when the caller has one (kept when nothing is cut).
    private mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>, whole: String?) {
        let end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
        let (from, to) = ContentTypeFields.trimmed(bytes, 0, end)
        if from < to {
            let essence = UnsafeBufferPointer(rebasing: bytes[from..<to])
            let lower = !essence.contains { $0 >= 65 && $0 <= 90 }
            if lower, let whole, from == 0 && to == bytes.count {
                mediaType = whole
            } else if lower {
                mediaType = ContentTypeFields.common(essence) ?? String(decoding: essence, as: UTF8.self)
            } else {
                mediaType = String(decoding: essence.map(HeaderRedaction.asciiLower), as: UTF8.self)
            }
        }
        var start = end + 1
        while start < bytes.count {
            let stop = bytes[start...].firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            if let eq = bytes[start..<stop].firstIndex(of: UInt8(ascii: "=")) {
                let (keyFrom, keyTo) = ContentTypeFields.trimmed(bytes, start, eq)
                if ContentTypeFields.isCharset(bytes[keyFrom..<keyTo]) {
                    var (valueFrom, valueTo) = ContentTypeFields.trimmed(bytes, eq + 1, stop)
                    if valueTo - valueFrom >= 2, bytes[valueFrom] == UInt8(ascii: "\""), bytes[valueTo - 1] == UInt8(ascii: "\"") {
                        valueFrom += 1
                        valueTo -= 1
                    }
                    if valueFrom < valueTo { charsetParameter = String(decoding: bytes[valueFrom..<valueTo], as: UTF8.self) }
                    return
                }
            }
            start = stop + 1
        }
    }

    /// The charset the parameter names, if known (see `Charset.labels`).
    public var knownCharset: Charset? {
        guard let name = charsetParameter else { return nil }
        return Charset.labels[String(decoding: name.utf8.map(HeaderRedaction.asciiLower), as: UTF8.self)]
    }

    /// The parameter as logged: the canonical name when known, else as sent.
    public var charsetName: String? { knownCharset?.name ?? charsetParameter }

    private static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ from: Int, _ to: Int) -> (Int, Int) {
        var from = from, to = to
        while from < to, bytes[from] == 0x20 || bytes[from] == 0x09 { from += 1 }
        while to > from, bytes[to - 1] == 0x20 || bytes[to - 1] == 0x09 { to -= 1 }
        return (from, to)
    }

    private static func isCharset(_ key: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        key.count == 7 && zip(key, "charset".utf8).allSatisfy { HeaderRedaction.asciiLower($0) == $1 }
    }
}
