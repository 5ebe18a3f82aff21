import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TLS client session over a connected blocking socket, for command-line
/// tools (`tapwire replay`), never for the event loop. The socket's
/// `SO_RCVTIMEO`/`SO_SNDTIMEO` bound every wait: a timed-out read or write
/// surfaces as `SSL_ERROR_WANT_READ`/`WANT_WRITE`, reported as a timeout.
///
/// Owns its `SSL` (freed in `deinit`); the socket stays the caller's, and
/// must outlive this object.
public final class BlockingTLSStream {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var message: String
        /// The socket's timeout expired (not an error of the peer's).
        public var timedOut: Bool
        public var description: String { message }
    }

    private let ssl: OpaquePointer
    private let host: String

    /// Handshakes with `host` (SNI and certificate check as `context` sets them up).
    public init(fd: Int32, context: UpstreamTLSContext, host: String) throws(Failure) {
        let ssl: OpaquePointer
        do {
            ssl = try context.makeSSL(host: host)
        } catch {
            throw Failure(message: "\(error)", timedOut: false)
        }
        self.ssl = ssl
        self.host = host
        // From here on deinit frees ssl, also when the handshake below throws.
        // A peer closing without close_notify after a `Connection: close` response is
        // the end of that response, not an attack on it: the HTTP framing ends it.
        tw_SSL_set_ignore_unexpected_eof(ssl)
        guard SSL_set_fd(ssl, fd) == 1 else {
            throw Failure(message: "SSL_set_fd failed: \(drainOpenSSLErrors())", timedOut: false)
        }
        while true {
            let rc = SSL_connect(ssl)
            if rc == 1 { break }
            let failure = self.failure(rc, doing: "TLS handshake with \(host)")
            if failure == nil { continue }
            if var failure {
                let verify = SSL_get_verify_result(ssl)
                if verify != Int(X509_V_OK) && !context.insecure {
                    failure.message = "TLS handshake with \(host): certificate not trusted: \(UpstreamTLSContext.describeVerifyError(ssl))"
                }
                throw failure
            }
        }
    }

    deinit { SSL_free(ssl) }

    /// Writes all of `bytes`.
    public func write(_ bytes: [UInt8]) throws(Failure) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                SSL_write(ssl, raw.baseAddress.map { $0 + sent }, Int32(clamping: bytes.count - sent))
            }
            if n > 0 { sent += Int(n); continue }
            if let failure = failure(n, doing: "writing to \(host)") { throw failure }
        }
    }

    /// Reads into `buffer`; 0 at the end of the stream.
    public func read(into buffer: inout [UInt8]) throws(Failure) -> Int {
        while true {
            let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32(clamping: $0.count)) }
            if n > 0 { return Int(n) }
            if SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN { return 0 }
            if let failure = failure(n, doing: "reading from \(host)") { throw failure }
        }
    }

    /// nil when the call should simply be retried (an interrupted system call).
    private func failure(_ rc: Int32, doing what: String) -> Failure? {
        let code = SSL_get_error(ssl, rc)
        let savedErrno = errno
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return Failure(message: "\(what): nothing moved within the timeout (--timeout)", timedOut: true)
        case SSL_ERROR_SYSCALL:
            if savedErrno == EINTR { return nil }
            if savedErrno == EAGAIN || savedErrno == EWOULDBLOCK {
                return Failure(message: "\(what): nothing moved within the timeout (--timeout)", timedOut: true)
            }
            let details = drainOpenSSLErrors()
            let reason = savedErrno != 0 ? String(cString: strerror(savedErrno)) : (details.isEmpty ? "connection closed" : details)
            return Failure(message: "\(what): \(reason)", timedOut: false)
        case SSL_ERROR_ZERO_RETURN:
            return Failure(message: "\(what): the peer closed the TLS session", timedOut: false)
        default:
            return Failure(message: "\(what): \(drainOpenSSLErrors())", timedOut: false)
        }
    }
}
