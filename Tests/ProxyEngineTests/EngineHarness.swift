import Foundation
import HTTP1
import ProxyEngine
import Synchronization
import XCTest

// What every in-process engine test needs: the engine on an ephemeral loopback
// port, a sink that collects captures across threads, the Python origin the
// end-to-end tests use, and a raw socket client. Everything runs in the test
// process so the address and thread sanitizers see the engine's own code.

/// The package root, found from this file's path, so tests run from any directory.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Collects finished exchanges. The engine calls `accept` on its loop threads;
/// the test thread waits for a count.
final class CollectingSink: ExchangeSink, @unchecked Sendable {
    private let condition = NSCondition()
    private var stored: [CapturedEvent] = []
    /// Stands for a log that fell behind (`log.whenBehind: wait`): see `catchUp`.
    let behind = Atomic<Bool>(false)
    private var caughtUpHandlers: [@Sendable () -> Void] = []

    var isBehind: Bool { behind.load(ordering: .relaxed) }

    func onCaughtUp(_ handler: @escaping @Sendable () -> Void) {
        condition.lock(); caughtUpHandlers.append(handler); condition.unlock()
    }

    /// Lowers `isBehind` and calls the engine's handler from this (non-loop) thread, as the pipeline's workers do.
    func catchUp() {
        behind.store(false, ordering: .relaxed)
        condition.lock(); let handlers = caughtUpHandlers; condition.unlock()
        for h in handlers { h() }
    }

    func accept(_ event: consuming CapturedEvent) {
        condition.lock()
        stored.append(event)
        condition.broadcast()
        condition.unlock()
    }

    var events: [CapturedEvent] {
        condition.lock(); defer { condition.unlock() }
        return stored
    }

    /// Waits until at least `count` events arrived (or the timeout) and returns all of them.
    @discardableResult
    func waitForCount(_ count: Int, timeout: Double = 15) -> [CapturedEvent] {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock(); defer { condition.unlock() }
        while stored.count < count {
            if !condition.wait(until: deadline) { break }
        }
        return stored
    }

    /// The first `count` HTTP exchanges, failing the test when fewer arrive.
    func exchanges(_ count: Int, file: StaticString = #filePath, line: UInt = #line) -> [CapturedExchange] {
        let all = waitForCount(count).compactMap { if case .http(let x) = $0 { return x } else { return nil } }
        XCTAssertGreaterThanOrEqual(all.count, count, "captured exchanges", file: file, line: line)
        return all
    }

    /// The first `count` tunnel records, a WebSocket's end (the record it carries) included.
    func tunnels(_ count: Int, file: StaticString = #filePath, line: UInt = #line) -> [CapturedTunnel] {
        func all() -> [CapturedTunnel] {
            events.compactMap { event -> CapturedTunnel? in
                switch event {
                case .tunnel(let t): return t
                case .webSocket(let piece): if case .end(let t) = piece.content { return t } else { return nil }
                case .http: return nil
                }
            }
        }
        let deadline = Date().addingTimeInterval(15)
        while all().count < count && Date() < deadline { _ = waitForCount(events.count + 1, timeout: 0.05) }
        let found = all()
        XCTAssertGreaterThanOrEqual(found.count, count, "captured tunnels", file: file, line: line)
        return found
    }

    /// The pieces a WebSocket's tunnel handed over, in the order accepted.
    var webSocketPieces: [CapturedWebSocketPiece] {
        events.compactMap { if case .webSocket(let piece) = $0 { return piece } else { return nil } }
    }
}

/// A started engine with its sink; stopped (drained) on `stop()` or deinit.
struct EveryHostBlind: BlindTunnelPolicy {
    func keepsBlind(host: String) -> Bool { true }
}

final class RunningEngine {
    let engine: ProxyEngine
    let sink = CollectingSink()
    let port: Int
    private var stopped = false

    /// `blindTunnels`: every CONNECT is relayed unread, as `capture.blindTunnels: ["*"]` does.
    init(loops: Int = 2, blindTunnels: Bool = false, tlsInterceptor: TLSInterceptor? = nil,
         _ adjust: (inout EngineConfiguration) -> Void = { _ in },
         beforeStart: (ProxyEngine) -> Void = { _ in }) throws {
        var config = EngineConfiguration()
        config.listen = ["127.0.0.1:0"]
        config.loops = loops
        // A test that leaves a request hanging must not hold the next one up for the default 10 s.
        config.drainTimeout = 3
        adjust(&config)
        engine = ProxyEngine(configuration: config, sink: sink, tlsInterceptor: tlsInterceptor,
                             blindTunnels: blindTunnels ? EveryHostBlind() : nil)
        beforeStart(engine)
        try engine.start()
        guard let bound = engine.boundAddresses.first, bound.port != 0 else {
            engine.shutdown()
            engine.waitUntilStopped()
            throw NSError(domain: "engine", code: 1, userInfo: [NSLocalizedDescriptionKey: "no bound address"])
        }
        port = bound.port
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        engine.shutdown()
        engine.waitUntilStopped()
    }

    deinit { stop() }
}

/// The Python origin of the end-to-end tests (Tests/EndToEndTests/Resources/origin.py)
/// on an ephemeral loopback port; it exits when its stdin closes.
final class OriginServer {
    let process = Process()
    let port: Int
    private let stdin = Pipe()

    /// `tls`: certificate and key files for an HTTPS origin.
    init(tls: (certificate: String, key: String)? = nil) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/origin.py").path]
            + (tls.map { ["--tls", $0.certificate, $0.key] } ?? [])
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = stdin
        process.standardError = FileHandle.standardError
        try process.run()
        // The first line is the port; nothing else is printed, so reading byte by byte is enough.
        var line = [UInt8]()
        let fd = out.fileHandleForReading.fileDescriptor
        var byte: UInt8 = 0
        while Foundation.read(fd, &byte, 1) == 1, byte != 10 { line.append(byte) }
        guard let p = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw NSError(domain: "origin", code: 1, userInfo: [NSLocalizedDescriptionKey: "origin did not start"])
        }
        port = p
    }

    var authority: String { "127.0.0.1:\(port)" }
    func url(_ path: String) -> String { "http://\(authority)\(path)" }

    deinit {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

/// A blocking TCP client on 127.0.0.1, for byte-exact requests (pipelining, CONNECT).
final class RawClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 { let e = errno; Foundation.close(fd); throw NSError(domain: "raw", code: Int(e)) }
        // Short receive slices, so `read` can honour its own deadline.
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ s: String) { send(Array(s.utf8)) }
    func send(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    func shutdownWrite() { _ = Foundation.shutdown(fd, Int32(SHUT_WR)) }

    /// The close at deinit sends a reset instead of a FIN.
    func resetOnClose() {
        var l = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
    }

    /// Reads until `predicate` holds for the bytes so far, EOF, or the timeout.
    func read(timeout: Double = 15, until predicate: ([UInt8]) -> Bool = { _ in false }) -> (bytes: [UInt8], eof: Bool) {
        var data = [UInt8]()
        let deadline = Date().addingTimeInterval(timeout)
        var buf = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return (data, true) }
            if n < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                return (data, true)
            }
            data.append(contentsOf: buf[0..<n])
            if predicate(data) { break }
        }
        return (data, false)
    }

    /// Reads `count` complete responses with Content-Length framing (what the origin's
    /// endpoints used here send, and what the engine's own error answers use).
    func readResponses(_ count: Int, timeout: Double = 15) -> [(head: String, body: [UInt8])] {
        var parsed: [(String, [UInt8])] = []
        _ = read(timeout: timeout) { bytes in
            parsed = RawClient.splitResponses(bytes)
            return parsed.count >= count
        }
        return parsed
    }

    /// Splits a byte stream into Content-Length framed responses; an incomplete tail is left out.
    static func splitResponses(_ bytes: [UInt8]) -> [(head: String, body: [UInt8])] {
        var out: [(String, [UInt8])] = []
        var i = 0
        let separator: [UInt8] = [13, 10, 13, 10]
        while i < bytes.count {
            guard let end = firstIndex(of: separator, in: bytes, from: i) else { break }
            let head = String(decoding: bytes[i..<end], as: UTF8.self)
            let length = head.split(separator: "\r\n").compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
            let bodyStart = end + 4
            guard bytes.count >= bodyStart + length else { break }
            out.append((head, Array(bytes[bodyStart..<bodyStart + length])))
            i = bodyStart + length
        }
        return out
    }

    private static func firstIndex(of needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard hay.count >= needle.count else { return nil }
        var i = from
        while i + needle.count <= hay.count {
            if hay[i..<i + needle.count].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    deinit { Foundation.close(fd) }
}

/// A loopback port nobody listens on: bound, then closed again.
func closedLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { Foundation.close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Int32 in
            _ = bind(fd, sa, len)
            return getsockname(fd, sa, &len)
        }
    }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A listening loopback socket on a free port, for an origin a test plays by hand; the
/// caller closes it.
func loopbackListener() -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa -> Int32 in
            _ = bind(fd, sa, len)
            _ = listen(fd, 1)
            return getsockname(fd, sa, &len)
        }
    }
    return (fd, Int(UInt16(bigEndian: addr.sin_port)))
}

/// Polls `condition` until it holds or the timeout passes; the result is asserted by the caller.
/// The one place engine tests wait by polling: every wait is on a condition, with a deadline.
func eventually(timeout: Double = 10, every interval: Double = 0.01, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(useconds_t(interval * 1_000_000))
    }
    return condition()
}

/// Whether `condition` holds throughout `seconds` (polled): for "nothing happens" checks,
/// which fail as soon as it stops holding.
func stays(for seconds: Double, _ condition: () -> Bool) -> Bool {
    !eventually(timeout: seconds) { !condition() }
}

/// Bytes received on `fd` and not yet read.
func unreadBytes(_ fd: Int32) -> Int {
    var n: Int32 = 0
    return ioctl(fd, UInt(FIONREAD), &n) == 0 ? Int(n) : 0
}

/// Waits until `fd` is writable or `seconds` pass.
func waitWritable(_ fd: Int32, seconds: Double) {
    var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
    _ = poll(&p, 1, Int32(seconds * 1000))
}

extension CapturedBody {
    var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// One origin for the whole test process: it exits by itself when the process
/// ends (its stdin closes then).
let sharedOrigin: Result<OriginServer, Error> = Result { try OriginServer() }

func origin() throws -> OriginServer { try sharedOrigin.get() }

/// A value shared between a test and the engine's threads.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.lock(); defer { lock.unlock() }; return stored }
    func update(_ body: (inout T) -> Void) { lock.lock(); body(&stored); lock.unlock() }
}

/// A loopback port nothing listens on: one is bound, learned and closed.
func unusedLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { Foundation.close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let rc = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
    }
    guard rc == 0 else { throw NSError(domain: "port", code: Int(errno)) }
    return Int(UInt16(bigEndian: addr.sin_port))
}
