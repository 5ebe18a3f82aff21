import Foundation

/// The four clock points of one exchange and the durations between them, as in
/// Alamofire's `Timeline`. Times are seconds since 1970 taken from one clock per
/// exchange; durations are computed once here so every reader sees the same numbers.
///
/// In a proxy the points mean: request head fully received from the client;
/// first response byte from upstream; last response byte (or the failure);
/// the serializer returned.
public struct Timeline: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The request head was fully received from the client.
    public let requestStartTime: TimeInterval
    /// The first response byte arrived from upstream.
    ///
    /// Falls back to `requestCompletedTime` when no byte ever arrived (given as 0).
    public let initialResponseTime: TimeInterval
    /// The last response byte arrived, or the exchange failed.
    public let requestCompletedTime: TimeInterval
    /// The serializer returned (for `DefaultDataResponse`: the response was made).
    public let serializationCompletedTime: TimeInterval

    /// initialResponseTime − requestStartTime
    public let latency: TimeInterval
    /// requestCompletedTime − requestStartTime
    public let requestDuration: TimeInterval
    /// serializationCompletedTime − requestCompletedTime
    public let serializationDuration: TimeInterval
    /// serializationCompletedTime − requestStartTime
    public let totalDuration: TimeInterval

    /// Every point defaults to 0; the durations are worked out here, once.
    /// - Parameters:
    ///   - requestStartTime: Seconds since 1970; default 0.
    ///   - initialResponseTime: Seconds since 1970; default 0, which means "no byte arrived"
    ///     and makes it `requestCompletedTime`.
    ///   - requestCompletedTime: Seconds since 1970; default 0.
    ///   - serializationCompletedTime: Seconds since 1970; default 0.
    public init(requestStartTime: TimeInterval = 0,
                initialResponseTime: TimeInterval = 0,
                requestCompletedTime: TimeInterval = 0,
                serializationCompletedTime: TimeInterval = 0) {
        let initial = initialResponseTime == 0 ? requestCompletedTime : initialResponseTime
        self.requestStartTime = requestStartTime
        self.initialResponseTime = initial
        self.requestCompletedTime = requestCompletedTime
        self.serializationCompletedTime = serializationCompletedTime
        self.latency = initial - requestStartTime
        self.requestDuration = requestCompletedTime - requestStartTime
        self.serializationDuration = serializationCompletedTime - requestCompletedTime
        self.totalDuration = serializationCompletedTime - requestStartTime
    }

    /// Alamofire's wording, kept so output can be compared with a client's own logs.
    public var description: String {
        let timings = [
            "\"Latency\": " + Timeline.threeDecimals(latency) + " secs",
            "\"Request Duration\": " + Timeline.threeDecimals(requestDuration) + " secs",
            "\"Serialization Duration\": " + Timeline.threeDecimals(serializationDuration) + " secs",
            "\"Total Duration\": " + Timeline.threeDecimals(totalDuration) + " secs",
        ]
        return "Timeline: { " + timings.joined(separator: ", ") + " }"
    }

    /// The four points and the four durations, in Alamofire's wording.
    public var debugDescription: String {
        let points = [
            "\"Request Start Time\": " + Timeline.threeDecimals(requestStartTime),
            "\"Initial Response Time\": " + Timeline.threeDecimals(initialResponseTime),
            "\"Request Completed Time\": " + Timeline.threeDecimals(requestCompletedTime),
            "\"Serialization Completed Time\": " + Timeline.threeDecimals(serializationCompletedTime),
        ]
        let timings = [
            "\"Latency\": " + Timeline.threeDecimals(latency) + " secs",
            "\"Request Duration\": " + Timeline.threeDecimals(requestDuration) + " secs",
            "\"Serialization Duration\": " + Timeline.threeDecimals(serializationDuration) + " secs",
            "\"Total Duration\": " + Timeline.threeDecimals(totalDuration) + " secs",
        ]
        return "Timeline: { " + (points + timings).joined(separator: ", ") + " }"
    }

    static func threeDecimals(_ value: Double) -> String { String(format: "%.3f", value) }
}

/// Where the time of an upstream exchange went, in seconds (nil: the phase did
/// not happen, e.g. no DNS for a literal address, no TLS for plain HTTP, or a
/// reused connection).
public struct ExchangeMetrics: Sendable, Equatable {
    // `connectionReused` is declared first so that the synthesized memberwise initializer has
    // a signature of its own, for the public one below to delegate to. Inside this module (and
    // with `@testable import`) a call naming only some trailing arguments, such as
    // `ExchangeMetrics(connectionReused: true)`, matches both and is ambiguous: name `dns:` too.
    /// The request went over a pooled connection (no DNS, connect or TLS phase).
    public var connectionReused: Bool
    /// Resolving the origin's name.
    public var dns: TimeInterval?
    /// The TCP connect.
    public var connect: TimeInterval?
    /// The TLS handshake with the origin (intercepted HTTPS only).
    public var tls: TimeInterval?
    /// Sending the request head (and body) upstream.
    public var send: TimeInterval?
    /// From the request sent to the first response byte.
    public var wait: TimeInterval?
    /// From the first response byte to the last.
    public var receive: TimeInterval?
    /// The upstream address actually used, `host:port`; through a parent proxy, the origin as named.
    public var upstream: String?
    /// What was spoken to the origin, "HTTP/1.1" or "HTTP/2" (nil: no upstream used).
    public var upstreamHTTPVersion: String? = nil
    /// The parent proxy the exchange went through (`http://host:port`, never credentials); nil for direct.
    public var via: String?
}

extension ExchangeMetrics {
    /// Delegates to the memberwise initializer, which is built in place: assigning the fields
    /// one by one left the value copied out and the original destroyed (a worker makes one per
    /// logged exchange).
    /// - Parameters:
    ///   - dns: Seconds; default nil (the phase did not happen).
    ///   - connect: Seconds; default nil.
    ///   - tls: Seconds; default nil.
    ///   - send: Seconds; default nil.
    ///   - wait: Seconds; default nil.
    ///   - receive: Seconds; default nil.
    ///   - connectionReused: Default false.
    ///   - upstream: The address used, `host:port`; default nil.
    ///   - upstreamHTTPVersion: What was spoken to the origin; default nil.
    ///   - via: The parent proxy, `scheme://host:port`; default nil (direct).
    public init(dns: TimeInterval? = nil, connect: TimeInterval? = nil, tls: TimeInterval? = nil,
                send: TimeInterval? = nil, wait: TimeInterval? = nil, receive: TimeInterval? = nil,
                connectionReused: Bool = false, upstream: String? = nil, upstreamHTTPVersion: String? = nil,
                via: String? = nil) {
        self.init(connectionReused: connectionReused, dns: dns, connect: connect, tls: tls, send: send, wait: wait,
                  receive: receive, upstream: upstream, upstreamHTTPVersion: upstreamHTTPVersion, via: via)
    }
}
