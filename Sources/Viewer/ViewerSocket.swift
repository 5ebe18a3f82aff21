import ProxyEngine
#if canImport(Glibc)
import Glibc
#endif

/// A blocking socket owned by one viewer connection thread: it closes the descriptor once.
/// Reads and writes time out after `timeout` seconds (SO_RCVTIMEO / SO_SNDTIMEO), so a
/// silent or stuck client frees its thread.
final class ViewerSocket {
    let descriptor: Int32
    private var closed = false

    init(_ descriptor: Int32, timeout: Double) {
        self.descriptor = descriptor
        var flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 && flags & O_NONBLOCK != 0 {
            flags &= ~O_NONBLOCK
            _ = fcntl(descriptor, F_SETFL, flags)
        }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// The address the connection arrived at (the listener's, on the interface the client used).
    func localAddress() -> SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> SocketAddress? in
                getsockname(descriptor, sa, &length) == 0 ? SocketAddress(sa, length: length) : nil
            }
        }
    }

    /// Appends what arrived; 0 at the end of the stream or on an error (timeouts included).
    func read(into buffer: inout [UInt8]) -> Int {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return 0 }
            buffer += chunk[0..<n]
            return n
        }
    }

    /// False when the peer is gone or the write timed out.
    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(descriptor)
    }

    deinit { close() }
}
