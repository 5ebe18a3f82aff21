/// Which parts of a request pick its recorded answer in offline replay (`replay.match`,
/// `replay.ignoreParams`): the same key is made from each record when the index is built and
/// from each request when it is looked up, so both sides must go through `key`.
public struct ReplayMatch: Sendable, Equatable {
    public var method: Bool
    public var url: Bool
    /// Query parameters left out of the URL before comparing (volatile ones: `ts`, `nonce`).
    public var ignoreParams: Set<String>

    public init(method: Bool = true, url: Bool = true, ignoreParams: Set<String> = []) {
        self.method = method; self.url = url; self.ignoreParams = ignoreParams
    }

    /// The fields `replay.match` may name.
    public static let fieldNames = ["method", "url"]

    /// The lookup key: the method (when matched) and the URL without its fragment and without
    /// the ignored query parameters, the others kept in their order.
    public func key(method requestMethod: String, url requestURL: String) -> String {
        var key = method ? requestMethod : ""
        key += " "
        guard url else { return key }
        var text = Substring(requestURL)
        if let hash = text.firstIndex(of: "#") { text = text[..<hash] }
        guard !ignoreParams.isEmpty, let question = text.firstIndex(of: "?") else { return key + text }
        let kept = text[text.index(after: question)...].split(separator: "&", omittingEmptySubsequences: true).filter { pair in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? pair
            return !ignoreParams.contains(String(name))
        }
        key += text[..<question]
        if !kept.isEmpty { key += "?" + kept.joined(separator: "&") }
        return key
    }
}

/// A recorded answer served again in offline replay: what goes on the wire, and the record
/// it came from (`replayedFrom`).
public struct ReplayedResponse: Sendable, Equatable {
    public var recordID: String
    public var status: Int
    public var reason: String
    /// Fields to send, without framing and hop-by-hop fields (the replay frames the body itself).
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// The recorded request was HEAD: `body` is empty, and `headLength` is the recorded
    /// Content-Length of the body it describes (nil when unknown, or when it counted bytes
    /// of a Content-Encoding the replay drops). Used only to answer a HEAD.
    public var fromHEAD: Bool
    public var headLength: String?

    public init(recordID: String, status: Int, reason: String, headers: [(name: String, value: String)], body: [UInt8],
                fromHEAD: Bool = false, headLength: String? = nil) {
        self.recordID = recordID; self.status = status; self.reason = reason; self.headers = headers; self.body = body
        self.fromHEAD = fromHEAD; self.headLength = headLength
    }

    /// A full answer, as opposed to one that only makes sense for a particular request: a
    /// 304 (conditional), a 206 (a range), or the answer to a HEAD.
    public var isFull: Bool { !fromHEAD && status != 304 && status != 206 }

    public static func == (a: ReplayedResponse, b: ReplayedResponse) -> Bool {
        a.recordID == b.recordID && a.status == b.status && a.reason == b.reason && a.body == b.body
            && a.fromHEAD == b.fromHEAD && a.headLength == b.headLength
            && a.headers.map { [$0.name, $0.value] } == b.headers.map { [$0.name, $0.value] }
    }
}
