#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// Listening sockets handed over by systemd (a `.socket` unit), per sd_listen_fds(3).
///
/// The descriptors arrive blocking: callers that feed them to an event loop must
/// make them non-blocking themselves.
public enum SocketActivation {
    /// The first passed descriptor; the rest follow consecutively.
    public static let firstDescriptor: Int32 = 3

    /// The passed descriptors (3, 4, …), or none when the variables are absent,
    /// malformed, or meant for another process (`LISTEN_PID` ≠ our pid: the
    /// variables leaked through a fork/exec). Marks each descriptor close-on-exec
    /// so children of the daemon do not inherit the listeners.
    ///
    /// With `unsetEnvironment`, LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are removed
    /// from the process environment whatever the outcome, so child processes do not
    /// see them. (`environment` itself is only read.)
    public static func listenFDs(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        unsetEnvironment: Bool = false
    ) -> [Int32] {
        defer {
            if unsetEnvironment {
                unsetenv("LISTEN_PID")
                unsetenv("LISTEN_FDS")
                unsetenv("LISTEN_FDNAMES")
            }
        }
        guard let pidText = environment["LISTEN_PID"], let pid = Int32(pidText), pid == getpid(),
              let countText = environment["LISTEN_FDS"], let count = Int32(countText),
              count > 0, count <= Int32.max - firstDescriptor else { return [] }
        let descriptors = Array(firstDescriptor..<(firstDescriptor + count))
        for fd in descriptors {
            let flags = fcntl(fd, F_GETFD)
            // A closed descriptor is left for the caller to discover on first use (EBADF),
            // which names the actual fault better than an empty list would.
            if flags >= 0, flags & FD_CLOEXEC == 0 {
                _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC)
            }
        }
        return descriptors
    }

    /// The names from `FileDescriptorName=` (LISTEN_FDNAMES, colon-separated), one per
    /// descriptor of `listenFDs`; `"unknown"` where systemd gave none, as sd_listen_fds_with_names does.
    public static func listenFDNames(
        count: Int,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String] {
        guard count > 0 else { return [] }
        let given = environment["LISTEN_FDNAMES"].map {
            $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        } ?? []
        guard given.count == count else { return Array(repeating: "unknown", count: count) }
        return given
    }
}
