#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest

/// The manager's end of NOTIFY_SOCKET: a bound AF_UNIX datagram socket the tests read from.
final class DatagramReceiver {
    let fd: Int32
    /// The value to put in NOTIFY_SOCKET to reach this socket.
    let notifySocket: String
    private let directory: String?

    /// A socket bound to a path in a fresh temporary directory.
    init() throws {
        var base = NSTemporaryDirectory()
        // sun_path holds 108 bytes; a long TMPDIR would not fit.
        if base.utf8.count > 60 { base = "/tmp/" }
        let directory = (base as NSString).appendingPathComponent("tw-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/notify"
        self.directory = directory
        notifySocket = path
        fd = try Self.bind(Array(path.utf8) + [0])
    }

    /// A socket in the abstract namespace, named `@name`.
    init(abstractName name: String) throws {
        directory = nil
        notifySocket = "@" + name
        fd = try Self.bind([0] + Array(name.utf8))
    }

    deinit {
        close(fd)
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// The next queued datagram, or nil when none is queued. Unix datagrams are queued
    /// by the sender's sendto itself, so there is nothing to wait for.
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    private static func bind(_ pathBytes: [UInt8]) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        guard pathBytes.count <= MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw POSIXError(.ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: pathBytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + pathBytes.count)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
        return fd
    }
}
