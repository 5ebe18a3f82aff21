import CLibevent
import HTTP1

/// The client side of one `Exchange`: where its request bytes come from and where its
/// answer goes. A `ClientSession` is one (HTTP/1.1: the head and body are written to the
/// connection with their framing); so is an `HTTP2Stream` (one stream of an HTTP/2
/// connection: the head becomes a HEADERS frame, the body DATA frames).
///
/// The request body arrives in `clientInput` framed as HTTP/1.1 (the exchange's
/// `BodyFramer` finds its end); the response body goes to `clientOutput` framed as the
/// exchange was told, or as payload only when `takesPayloadOnly`.
protocol ExchangeClient: AnyObject {
    var loop: EventLoop { get }
    var engine: ProxyEngine { get }
    var peerText: String { get }
    /// Requests go to an intercepted origin (decrypted TLS): upgrades are not tunnelled.
    var isIntercepting: Bool { get }
    /// False once the client side is gone (closed, reset, handed over).
    var isOpen: Bool { get }
    /// Request body bytes not yet taken by the exchange.
    var clientInput: OpaquePointer? { get }
    /// Where response body bytes go until the next `flush()`.
    var clientOutput: OpaquePointer? { get }
    /// Response bytes not yet taken by the client: what backpressure is decided on.
    var queuedOutputLength: Int { get }
    /// The answer being sent is the client's last (it half-closed).
    var sentItsLastRequest: Bool { get }
    /// Response bodies go without their HTTP/1.1 framing (chunk sizes, trailers).
    var takesPayloadOnly: Bool { get }

    /// The exchange moved request bytes out of `clientInput` (HTTP/2 reopens its windows).
    func requestBodyTaken()
    func pauseReading()
    func resumeReading()
    func setClientReadTimeout(_ seconds: Double?)
    func flush()
    /// The final response head, hop-by-hop fields already the client's business to drop.
    func forwardResponseHead(_ head: HTTPResponseHead, connection: String?, droppingTransferEncoding: Bool)
    /// The response's trailer fields, once its body is whole and before `exchangeFinished`.
    func forwardTrailers(_ trailers: HTTPHeaders)
    /// A 1xx answer (not 101).
    func forwardInterim(_ head: HTTPResponseHead)
    /// Calls the exchange's `clientWritable` once `queuedOutputLength` drops to `bytes`;
    /// nil stops watching.
    func watchOutputDrain(below bytes: Int?)
    /// Answers with a short error of Tapwire's own, before any response head was sent.
    func respondError(_ status: ProxyStatus, _ detail: String, close: Bool)
    /// Ends the client side once what is queued is sent: the answer was cut.
    func closeAfterFlush()
    /// The exchange is over and its answer whole.
    func exchangeFinished(keepAlive: Bool)
    /// Ends the client side now.
    func close()
    /// Bytes of Tapwire's own for the client (a CONNECT's or an upgrade's answer).
    func write(_ bytes: [UInt8])
    /// Gives the connection to a tunnel (CONNECT, WebSocket). Only an HTTP/1.1 session
    /// is ever asked: an intercepted request's upgrade is not tunnelled, and HTTP/2
    /// streams exist only inside interception.
    func handOver(to tunnelBuilder: (HandedOverSocket) -> Void)
    /// A CONNECT's target is reached: its answer (200, or a SOCKS5 success reply). Only an
    /// HTTP/1.1 session is asked, as for `awaitFirstBytes`.
    func answerConnectEstablished()
    /// A CONNECT failed before its answer: the client learns why (an error status, or a
    /// SOCKS5 reply) and the connection closes. `parentAnswer`: a parent proxy's own answer
    /// to the CONNECT, passed on as it came to a client that speaks HTTP.
    func refuseConnect(_ status: ProxyStatus, _ error: TransportError, parentAnswer: [UInt8]?)
    /// A CONNECT's upstream is ready: the client's first bytes decide what follows. Only an
    /// HTTP/1.1 session is asked (HTTP/2 streams refuse CONNECT before an exchange starts).
    func awaitFirstBytes(head: HTTPRequestHead, authority: HTTPAuthority, upstream: HandedOverSocket, start: Double)
}
