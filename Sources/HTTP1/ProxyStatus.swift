/// The statuses Tapwire answers with on its own behalf (not ones it forwards), each with
/// its standard reason phrase (RFC 9110 §15), so that a status line is never paired by hand.
public enum ProxyStatus: Int, Sendable, CaseIterable {
    case ok = 200
    case badRequest = 400
    case forbidden = 403
    case notFound = 404
    case requestTimeout = 408
    case requestHeaderFieldsTooLarge = 431
    case notImplemented = 501
    case badGateway = 502
    case serviceUnavailable = 503
    case gatewayTimeout = 504
    case loopDetected = 508

    public var code: Int { rawValue }

    public var reasonPhrase: String {
        switch self {
        case .ok: return "OK"
        case .badRequest: return "Bad Request"
        case .forbidden: return "Forbidden"
        case .notFound: return "Not Found"
        case .requestTimeout: return "Request Timeout"
        case .requestHeaderFieldsTooLarge: return "Request Header Fields Too Large"
        case .notImplemented: return "Not Implemented"
        case .badGateway: return "Bad Gateway"
        case .serviceUnavailable: return "Service Unavailable"
        case .gatewayTimeout: return "Gateway Timeout"
        case .loopDetected: return "Loop Detected"
        }
    }

    /// `HTTP/1.1 <code> <phrase>` with its CRLF.
    public var statusLine: String { "HTTP/1.1 \(rawValue) \(reasonPhrase)\r\n" }

    /// The answer to a CONNECT whose tunnel is open. Its phrase is the customary one
    /// (clients ignore it), not `OK`; the head has no fields, the tunnel follows.
    public static let connectionEstablishedHead = "HTTP/1.1 200 Connection established\r\n\r\n"
}
