/// Why an exchange or a tunnel ended without completing: the `error` object of a
/// log record (`{"code":…,"message":…}`), what `tapwire tail` prints, and the
/// `transportFailed` reason a serializer sees.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The one vocabulary of transport-failure codes. The raw values are the record's
    /// `error.code` strings: scripts filter on them, so a case is never renamed, and a
    /// case exists only while the engine produces it.
    public enum Code: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// TCP connect to every address of the origin failed.
        case upstreamConnectFailed
        /// The origin's name did not resolve.
        case upstreamDNSFailed
        /// The origin did not connect, or sent nothing, within its timeout.
        case upstreamTimeout
        /// The origin reset or closed the connection before the response was complete.
        case upstreamReset
        /// The origin sent bytes that are not an HTTP/1 response.
        case malformedResponse
        /// The request would reach the proxy itself.
        case loopDetected
        /// The client closed the connection mid-exchange.
        case clientAborted
        /// The client sent nothing within `limits.clientIdleTimeout`.
        case clientTimeout
        /// The client sent bytes that are not an HTTP/1 request (answered with a 4xx when possible).
        case malformedRequest
        /// TLS with the origin failed (handshake, verification, setup).
        case tlsFailed
        /// The client's TLS handshake with the intercepting proxy failed.
        case clientTLSFailed
        /// The proxy stopped while the exchange was in flight.
        case shuttingDown
        /// An HTTP/2 client broke the protocol (a malformed frame or header block, a
        /// flow-control or stream-state violation): its connection was closed with GOAWAY.
        case http2ProtocolError
        /// An HTTP/2 client's header list passed `limits.maxHeaderBytes` (an HPACK bomb, or
        /// simply too large): its connection was closed with GOAWAY ENHANCE_YOUR_CALM.
        case http2HeaderListTooLarge
        /// An HTTP/2 client reset streams faster than `limits.http2ResetsPerSecond` allows
        /// (rapid reset, CVE-2023-44487): closed with GOAWAY ENHANCE_YOUR_CALM.
        case http2RapidReset
        /// An HTTP/2 client flooded the connection: SETTINGS past
        /// `limits.http2SettingsPerSecond`, CONTINUATION frames past
        /// `limits.http2MaxContinuations`, or control frames whose answers it did not read.
        case http2Flood
        /// The parent proxy (`upstream.proxy`) could not be reached, broke its protocol, or
        /// refused to open the tunnel (its own answer, if any, is passed on).
        case upstreamProxyFailed
        /// The parent proxy asked for credentials or refused them (HTTP 407, SOCKS5 auth).
        case upstreamProxyAuthFailed

        public var description: String { rawValue }

        /// The status (and its reason phrase) a proxy answers a client with when the
        /// exchange failed this way before any response head reached it.
        public var statusForClient: ProxyStatus {
            switch self {
            case .upstreamTimeout: return .gatewayTimeout
            case .loopDetected: return .loopDetected
            default: return .badGateway
            }
        }
    }

    public var code: Code
    public var message: String

    /// - Parameters:
    ///   - code: The stable code the record stores.
    ///   - message: Text for people; may name hosts, timeouts and errno text.
    public init(_ code: Code, _ message: String) { self.code = code; self.message = message }

    /// The labelled form of `init(_:_:)`.
    public init(code: Code, message: String) { self.init(code, message) }

    /// `code: message`, or only the code when there is no message.
    public var description: String { message.isEmpty ? code.rawValue : "\(code.rawValue): \(message)" }
}
