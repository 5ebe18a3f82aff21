import CLibevent
import Foundation
import HTTP1

/// A `socks5` listener's sessions: the handshake runs before any HTTP is parsed, and its
/// CONNECT takes the same path as an HTTP CONNECT (`startSOCKSConnect`: held while the log is
/// behind, then `startTunnel`): TLS for a host in
/// `tls.intercept` is intercepted, anything else goes on from there, and the CONNECT is
/// answered with a SOCKS5 reply instead of an HTTP status (`answerConnectEstablished`,
/// `refuseConnect`). The handshake must complete within `limits.clientIdleTimeout` (the
/// session's head timer).
extension ClientSession {
    /// The SOCKS5 handshake has not yet produced its CONNECT.
    var isNegotiatingSOCKS: Bool {
        guard let socks else { return false }
        switch socks.state {
        case .greeting, .authenticating, .awaitingRequest: return true
        case .connecting, .done, .failed: return false
        }
    }

    /// The longest handshake message: a request naming a 255-byte host (auth is 513 bytes).
    static let socksMessageLimit = 1024

    func socksReadable(_ input: OpaquePointer) {
        // A client may send greeting, authentication and request at once (up to 1,032 bytes
        // in all): each pass copies out at most one message limit's worth, so go on while
        // a pass consumed something and the handshake still reads.
        while isNegotiatingSOCKS {
            let available = evbuffer_get_length(input)
            guard available > 0, var machine = socks else { return }
            let n = min(available, Self.socksMessageLimit)
            var bytes = [UInt8](repeating: 0, count: n)
            _ = evbuffer_copyout(input, &bytes, n)
            let (consumed, actions) = machine.received(bytes)
            socks = machine
            if consumed > 0 {
                evbuffer_drain(input, consumed)
                engine.metrics.bytesFromClients.add(consumed)
            }
            for action in actions {
                switch action {
                case .reply(let reply):
                    write(reply)
                    flush()
                case .connect(let target):
                    cancelHeadTimer()
                    // A CONNECT head as an HTTP client would have sent it: what the tunnel or the
                    // interception records show as the target.
                    let head = HTTPRequestHead(method: "CONNECT", target: target.description,
                                               headers: HTTPHeaders([("Host", target.description)]))
                    startSOCKSConnect(head)
                    return
                case .close:
                    // The reason is for the machine's tests: SOCKS5 has no way to tell the client,
                    // and a line per refused handshake would let anyone fill the log.
                    closeAfterFlush()
                    return
                }
            }
            if consumed == 0 { return }
        }
    }
}
