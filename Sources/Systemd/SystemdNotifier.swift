#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import Synchronization

/// Talks to the service manager through `$NOTIFY_SOCKET` (the sd_notify protocol:
/// one datagram of newline-separated `KEY=VALUE` fields per message).
///
/// Written by hand rather than linking libsystemd so the binary runs unchanged
/// where systemd is absent. Every send is non-blocking: a stalled or vanished
/// manager must never stall an event loop. Failures are counted, not thrown,
/// because there is nothing useful a proxy can do about a lost notification.
public final class SystemdNotifier: Sendable {
    /// The socket address bytes as they go into `sun_path`: a filesystem path, or
    /// for an abstract socket a leading NUL followed by the name.
    private let pathBytes: [UInt8]
    private let isAbstract: Bool
    private let fd: Int32
    private let failures = Atomic<Int>(0)

    /// `sun_path` capacity (108 on Linux), computed once so sends do not recompute it.
    private static let sunPathCapacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)

    /// Returns nil when not started by systemd with `Type=notify` (`NOTIFY_SOCKET`
    /// unset or empty) or when the address is neither an absolute path nor an
    /// abstract name (`@name`), or too long for `sun_path`.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let address = environment["NOTIFY_SOCKET"], !address.isEmpty else { return nil }
        var bytes = Array(address.utf8)
        switch bytes.first {
        case UInt8(ascii: "/"):
            isAbstract = false
            // A filesystem path needs its terminating NUL inside sun_path.
            guard bytes.count < Self.sunPathCapacity else { return nil }
        case UInt8(ascii: "@"):
            isAbstract = true
            bytes[0] = 0
            guard bytes.count > 1, bytes.count <= Self.sunPathCapacity else { return nil }
        default:
            return nil
        }
        pathBytes = bytes
        // A failed socket() leaves fd = -1: every later send then fails and is counted,
        // which is how all other delivery failures are reported too.
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Messages that could not be delivered (manager gone, queue full, bad socket).
    public var failureCount: Int { failures.load(ordering: .relaxed) }

    /// `READY=1`: startup finished, every listener is bound.
    @discardableResult
    public func ready() -> Bool { send("READY=1") }

    /// `READY=1` together with a status line, in one datagram.
    @discardableResult
    public func ready(status text: String) -> Bool {
        send("READY=1\nSTATUS=" + Self.singleLine(text))
    }

    /// `RELOADING=1` plus `MONOTONIC_USEC`: a reload began; send `ready()` when done.
    /// systemd 252 ignores the timestamp for `Type=notify`; newer managers
    /// (`Type=notify-reload`) require it, so it is always sent.
    @discardableResult
    public func reloading() -> Bool {
        send("RELOADING=1\nMONOTONIC_USEC=\(Self.monotonicMicroseconds())")
    }

    /// `STOPPING=1`: shutdown began (drain in progress).
    @discardableResult
    public func stopping() -> Bool { send("STOPPING=1") }

    /// `STATUS=…`, shown by `systemctl status`. Newlines become spaces so the
    /// text cannot inject further fields.
    @discardableResult
    public func status(_ text: String) -> Bool { send("STATUS=" + Self.singleLine(text)) }

    /// `WATCHDOG=1`: the keep-alive ping; send every `watchdogInterval` seconds.
    @discardableResult
    public func watchdog() -> Bool { send("WATCHDOG=1") }

    /// `EXTEND_TIMEOUT_USEC=…`: asks for more time for the current start, reload or stop
    /// (a long drain), counted from now.
    @discardableResult
    public func extendTimeout(seconds: Double) -> Bool {
        let microseconds = seconds > 0 ? UInt64(min(seconds, 1e12) * 1_000_000) : 0
        return send("EXTEND_TIMEOUT_USEC=\(microseconds)")
    }

    /// Sends the fields in key order, one datagram. Newlines in values become spaces;
    /// a key that is empty or contains `=` or a newline is refused (counted as a failure)
    /// since systemd would misparse the whole message.
    @discardableResult
    public func send(_ fields: [String: String]) -> Bool {
        var lines: [String] = []
        lines.reserveCapacity(fields.count)
        for key in fields.keys.sorted() {
            guard !key.isEmpty, !key.contains("="), !key.contains("\n"), let value = fields[key] else {
                failures.add(1, ordering: .relaxed)
                return false
            }
            lines.append(key + "=" + Self.singleLine(value))
        }
        return send(lines.joined(separator: "\n"))
    }

    /// Sends `text` as one datagram, verbatim.
    @discardableResult
    public func send(_ text: String) -> Bool {
        guard fd >= 0, !text.isEmpty else {
            failures.add(1, ordering: .relaxed)
            return false
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        // Abstract names are exactly as long as given (no terminator); paths carry their NUL.
        let length = pathOffset + pathBytes.count + (isAbstract ? 0 : 1)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        let payload = Array(text.utf8)
        let sent = payload.withUnsafeBytes { body in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(fd, body.baseAddress, body.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL),
                           socketAddress, socklen_t(length))
                }
            }
        }
        if sent != payload.count {
            failures.add(1, ordering: .relaxed)
            return false
        }
        return true
    }

    /// How often to call `watchdog()`: half of `WATCHDOG_USEC`, in seconds, as
    /// sd_watchdog_enabled(3) advises. Nil when no watchdog is configured for
    /// this process (`WATCHDOG_USEC` unset, zero or malformed, or `WATCHDOG_PID`
    /// naming another process, e.g. a parent that forked us).
    public static func watchdogInterval(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Double? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text),
              microseconds > 0 else { return nil }
        if let pidText = environment["WATCHDOG_PID"], !pidText.isEmpty {
            guard let pid = Int32(pidText), pid == getpid() else { return nil }
        }
        return Double(microseconds) / 2 / 1_000_000
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    private static func singleLine(_ text: String) -> String {
        guard text.contains(where: \.isNewline) else { return text }
        return String(text.map { $0.isNewline ? " " : $0 })
    }
}
