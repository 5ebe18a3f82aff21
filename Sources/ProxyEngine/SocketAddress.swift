import CLibevent
import Foundation

/// An IPv4 or IPv6 socket address as a value.
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    public static func == (a: SocketAddress, b: SocketAddress) -> Bool {
        a.ipBytes == b.ipBytes && a.port == b.port
    }
    public func hash(into h: inout Hasher) { h.combine(ipBytes); h.combine(port) }

    public init?(_ sa: UnsafePointer<sockaddr>, length: socklen_t) {
        guard length <= MemoryLayout<sockaddr_storage>.size,
              sa.pointee.sa_family == sa_family_t(AF_INET) || sa.pointee.sa_family == sa_family_t(AF_INET6) else { return nil }
        var st = sockaddr_storage()
        withUnsafeMutableBytes(of: &st) { dst in
            dst.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: Int(length)))
        }
        storage = st
        self.length = length
    }

    /// Parses `1.2.3.4:80`, `[::1]:8080`; numeric hosts only, port 0…65535 (0 = any free port).
    public init?(parsing text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = UInt16(portText) else { return nil }
        var st = sockaddr_storage()
        if text.hasPrefix("[") {
            var a = in6_addr()
            guard inet_pton(AF_INET6, String(host), &a) == 1 else { return nil }
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            sin6.sin6_addr = a
            withUnsafeMutableBytes(of: &st) { dst in withUnsafeBytes(of: sin6) { dst.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            var a = in_addr()
            guard inet_pton(AF_INET, String(host), &a) == 1 else { return nil }
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr = a
            withUnsafeMutableBytes(of: &st) { dst in withUnsafeBytes(of: sin) { dst.copyMemory(from: $0) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        }
        storage = st
    }

    public var family: Int32 { Int32(storage.ss_family) }

    public var port: Int {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET {
                return Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
            }
            return Int(UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self)))
        }
    }

    /// The address bytes: 4 for IPv4, 16 for IPv6 (v4-mapped v6 reduced to 4).
    public var ipBytes: [UInt8] {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET {
                return Array(raw[4..<8])
            }
            let b = Array(raw[8..<24])
            if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff { return Array(b[12..<16]) }
            return b
        }
    }

    public var isLoopback: Bool {
        let b = ipBytes
        if b.count == 4 { return b[0] == 127 }
        return b == [UInt8](repeating: 0, count: 15) + [1]
    }

    public var isUnspecified: Bool { ipBytes.allSatisfy { $0 == 0 } }

    public var host: String {
        let b = ipBytes
        var out = [CChar](repeating: 0, count: 64)
        if b.count == 4 {
            var a = in_addr(); withUnsafeMutableBytes(of: &a) { $0.copyBytes(from: b) }
            _ = inet_ntop(AF_INET, &a, &out, 64)
        } else {
            var a = in6_addr(); withUnsafeMutableBytes(of: &a) { $0.copyBytes(from: b) }
            _ = inet_ntop(AF_INET6, &a, &out, 64)
        }
        return String(cString: out)
    }

    public var description: String {
        ipBytes.count == 16 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    public func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, Int32) -> R) -> R {
        var st = storage
        return withUnsafePointer(to: &st) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, Int32(length)) }
        }
    }
}

/// A CIDR block for `access.allow`, e.g. `127.0.0.1/32`, `::1/128`, `10.0.0.0/8`.
public struct AddressRange: Sendable, Hashable, CustomStringConvertible {
    public let prefix: [UInt8]
    public let bits: Int
    public let description: String

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let addr = parts.first else { return nil }
        var bytes = [UInt8](repeating: 0, count: 16)
        let count: Int
        if inet_pton(AF_INET, addr, &bytes) == 1 { count = 4 }
        else if inet_pton(AF_INET6, addr, &bytes) == 1 { count = 16 }
        else { return nil }
        var b = Array(bytes[0..<count])
        if count == 16, b[0..<10].allSatisfy({ $0 == 0 }), b[10] == 0xff, b[11] == 0xff { b = Array(b[12..<16]) }
        let maxBits = b.count * 8
        var n = maxBits
        if parts.count == 2 {
            guard let v = Int(parts[1]), v >= 0, v <= (count == 16 ? 128 : 32) else { return nil }
            n = count == 16 && b.count == 4 ? max(0, v - 96) : v
        }
        prefix = b; bits = n; description = text
    }

    public func contains(_ address: SocketAddress) -> Bool {
        let a = address.ipBytes
        guard a.count == prefix.count else { return false }
        var remaining = bits
        for i in 0..<a.count where remaining > 0 {
            let take = min(8, remaining)
            let mask: UInt8 = take == 8 ? 0xff : UInt8(0xff << (8 - take) & 0xff)
            if a[i] & mask != prefix[i] & mask { return false }
            remaining -= take
        }
        return true
    }
}
