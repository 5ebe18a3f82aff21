import HTTP1

/// An origin-form request to the proxy itself for a path other than `/healthz` and `/metrics`
/// (the web viewer's), with the connection it came on. The loop gives the socket away at once:
/// whatever serves it (reading log files, querying) costs CPU per byte and must not run on an
/// event loop.
///
/// The receiver owns `socket` and closes it. `buffered` are the bytes the client sent after
/// the head (a body's start, a pipelined request), `unsent` the bytes of an earlier answer on
/// this connection not yet written; both come before anything read from or written to
/// `socket` afterwards.
public struct ViewerHandoff: Sendable {
    public let socket: Int32
    public let head: HTTPRequestHead
    public let buffered: [UInt8]
    public let unsent: [UInt8]
    /// The client's address, `ip:port`.
    public let peer: String
}
