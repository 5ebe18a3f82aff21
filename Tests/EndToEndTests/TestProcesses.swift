import Foundation
import XCTest

/// The package root, found from this file's path, so tests run from any directory.
let packageRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The tapwire binary under test: `TAPWIRE_BIN` (set by `make test` to the release
/// build it has just made), else whatever `swift build` left in .build — the release
/// one first, which may be older than the sources when run by hand.
func tapwireBinary() throws -> String {
    if let p = ProcessInfo.processInfo.environment["TAPWIRE_BIN"], FileManager.default.isExecutableFile(atPath: p) { return p }
    for c in ["release", "debug"] {
        let p = packageRoot.appendingPathComponent(".build/\(c)/tapwire").path
        if FileManager.default.isExecutableFile(atPath: p) { return p }
    }
    throw XCTSkip("tapwire binary not built: run `make test` (or `swift build`) first")
}

/// Whether `condition` holds within `timeout` seconds, checked every `interval`: the one
/// place these tests poll. Waiting for the effect itself (a log line, a record, a process
/// exit, a metric) keeps a loaded machine from failing a test that a fixed pause would.
@discardableResult
func eventually(timeout: Double = 10, every interval: Double = 0.01, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try condition() { return true }
        if Date() >= deadline { return false }
        usleep(useconds_t(interval * 1_000_000))
    }
}

/// Reads a child's output line by line on a background thread.
final class LineReader: @unchecked Sendable {
    private let lock = NSCondition()
    private var lines: [String] = []
    private var buffer = Data()
    private(set) var closed = false

    init(_ handle: FileHandle) {
        let t = Thread { [self] in
            while true {
                let d = handle.availableData
                lock.lock()
                if d.isEmpty { closed = true; lock.broadcast(); lock.unlock(); return }
                buffer.append(d)
                while let nl = buffer.firstIndex(of: 10) {
                    lines.append(String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...nl)
                }
                lock.broadcast()
                lock.unlock()
            }
        }
        t.start()
    }

    /// Waits until a line satisfies `predicate` (looking at all lines so far).
    func waitFor(timeout: Double = 20, _ predicate: (String) -> Bool) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock(); defer { lock.unlock() }
        while true {
            if let l = lines.first(where: predicate) { return l }
            if closed { return nil }
            if !lock.wait(until: deadline) { return nil }
        }
    }

    var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }

    /// Waits until at least `count` lines satisfy `predicate`.
    func waitFor(count: Int, timeout: Double = 20, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock(); defer { lock.unlock() }
        while true {
            if lines.filter(predicate).count >= count { return true }
            if closed { return false }
            if !lock.wait(until: deadline) { return false }
        }
    }
}

/// A `tapwire run` child process on an ephemeral loopback port.
final class TapwireProcess {
    let process = Process()
    let stdout: LineReader
    let stderr: LineReader
    let port: Int
    let logDirectory: URL
    let workDirectory: URL

    /// `config` is written to a temp file; `listen`/log directory are filled in unless given.
    init(config: [String: Any] = [:], extraArguments: [String] = [], environment: [String: String] = [:],
         logDirectory explicitLogDirectory: URL? = nil, fileLimit: Int? = nil) throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-e2e-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        workDirectory = work
        logDirectory = explicitLogDirectory ?? work.appendingPathComponent("logs")
        var cfg = config
        if cfg["listen"] == nil { cfg["listen"] = ["127.0.0.1:0"] }
        var log = cfg["log"] as? [String: Any] ?? [:]
        if log["directory"] == nil { log["directory"] = logDirectory.path }
        cfg["log"] = log
        let configURL = work.appendingPathComponent("tapwire.json")
        try JSONSerialization.data(withJSONObject: cfg).write(to: configURL)
        if let fileLimit {
            // exec keeps the pid, so signals and /proc still reach tapwire itself.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(fileLimit) && exec \"$0\" \"$@\"", try tapwireBinary(),
                                 "run", "--config", configURL.path] + extraArguments
        } else {
            process.executableURL = URL(fileURLWithPath: try tapwireBinary())
            process.arguments = ["run", "--config", configURL.path] + extraArguments
        }
        process.currentDirectoryURL = work
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        stdout = LineReader(out.fileHandleForReading)
        stderr = LineReader(err.fileHandleForReading)
        try process.run()
        guard let line = stdout.waitFor({ $0.hasPrefix("listening on ") }),
              let p = line.split(separator: ":").last.flatMap({ Int($0) }) else {
            if process.isRunning { process.terminate() }
            throw NSError(domain: "tapwire", code: 1, userInfo: [NSLocalizedDescriptionKey:
                "tapwire did not start: \(stderr.all.joined(separator: "\n"))"])
        }
        port = p
    }

    var proxyURL: String { "http://127.0.0.1:\(port)" }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    func stop(timeout: Double = 20) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        eventually(timeout: timeout) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        return process.terminationStatus
    }

    /// CPU seconds (user + system) used so far, from /proc.
    var cpuSeconds: Double {
        guard let s = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
              let close = s.lastIndex(of: ")") else { return 0 }
        let fields = s[s.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Double(fields[11]), let k = Double(fields[12]) else { return 0 }
        return (u + k) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// CPU seconds (user + system) used so far by the event-loop threads alone (those named
    /// `tapwire-loop-*`), from /proc/PID/task: what the loop spends, without the
    /// serialization and writer threads whose work is the same however bytes arrived.
    var loopCPUSeconds: Double {
        let pid = process.processIdentifier
        guard let tids = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return 0 }
        var ticks = 0.0
        for tid in tids {
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8),
                  comm.hasPrefix("tapwire-loop"),
                  let s = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/stat", encoding: .utf8),
                  let close = s.lastIndex(of: ")") else { continue }
            let fields = s[s.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let u = Double(fields[11]), let k = Double(fields[12]) else { continue }
            ticks += u + k
        }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Runs `body` while sampling RSS every 20 ms; returns its result and the peak
    /// growth over the RSS before it started.
    func measuringRSSGrowth<T>(_ body: () throws -> T) rethrows -> (T, growth: Int) {
        let baseline = rssBytes
        let peak = Locked(baseline)
        let finished = Locked(false)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { [self] in
            eventually(timeout: 3600, every: 0.02) {
                let rss = rssBytes
                peak.update { $0 = max($0, rss) }
                return finished.value
            }
            done.signal()
        }
        defer { finished.update { $0 = true }; done.wait() }
        let result = try body()
        return (result, peak.value - baseline)
    }

    /// Bytes its read(2)-family calls returned so far (`rchar` in /proc/PID/io).
    var bytesRead: Int { procIO("rchar:") }

    /// read(2)-family calls made so far (`syscr` in /proc/PID/io).
    var readCalls: Int { procIO("syscr:") }

    private func procIO(_ key: String) -> Int {
        guard let s = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/io", encoding: .utf8) else { return 0 }
        let line = s.split(separator: "\n").first { $0.hasPrefix(key) }
        return line.flatMap { Int($0.dropFirst(key.count).trimmingCharacters(in: .whitespaces)) } ?? 0
    }

    /// A counter or gauge from /metrics, 0 when missing.
    func metric(_ name: String) -> Int {
        let text = (try? runCommand("curl", ["--noproxy", "*", "-s", "--max-time", "5", "\(proxyURL)/metrics"]).text) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.dropFirst(name.count + 1)) } ?? 0
    }

    /// How many descriptors the process has open, from /proc.
    var openDescriptors: Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd")) ?? []).count
    }

    /// Resident set size in bytes, from /proc.
    var rssBytes: Int {
        guard let s = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/statm", encoding: .utf8) else { return 0 }
        let parts = s.split(separator: " ")
        return parts.count > 1 ? (Int(parts[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: workDirectory)
    }
}

/// The Python origin in Resources/origin.py on an ephemeral loopback port.
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
        let reader = LineReader(out.fileHandleForReading)
        guard let line = reader.waitFor({ Int($0) != nil }), let p = Int(line) else {
            process.terminate()
            throw NSError(domain: "origin", code: 1, userInfo: [NSLocalizedDescriptionKey: "origin did not start"])
        }
        port = p
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// Ends the wait of every `/slow?hold=key` request.
    func release(_ key: String) {
        _ = try? runCommand("curl", ["--noproxy", "*", "-s", "--max-time", "5", "\(base)/release?hold=\(key)"])
    }

    deinit {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

struct CommandResult {
    var status: Int32
    var stdout: Data
    var stderr: String
    var text: String { String(decoding: stdout, as: UTF8.self) }
}

/// Runs a command to completion with a time limit.
func runCommand(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                input: Data? = nil, timeout: Double = 60) throws -> CommandResult {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = [executable] + arguments
    if let environment { p.environment = environment }
    let out = Pipe(), err = Pipe(), inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = input == nil ? FileHandle.nullDevice : inp
    let outData = Locked(Data()), errData = Locked(Data())
    let group = DispatchGroup()
    group.enter(); DispatchQueue.global().async { let d = out.fileHandleForReading.readDataToEndOfFile(); outData.update { $0 = d }; group.leave() }
    group.enter(); DispatchQueue.global().async { let d = err.fileHandleForReading.readDataToEndOfFile(); errData.update { $0 = d }; group.leave() }
    try p.run()
    if let input { inp.fileHandleForWriting.write(input); try? inp.fileHandleForWriting.close() }
    eventually(timeout: timeout) { !p.isRunning }
    if p.isRunning { p.terminate() }
    p.waitUntilExit()
    group.wait()
    return CommandResult(status: p.terminationStatus, stdout: outData.value, stderr: String(decoding: errData.value, as: UTF8.self))
}

/// curl through the proxy using the HTTP_PROXY variable, as users do.
func curlViaProxy(_ proxy: String, _ args: [String], timeout: Double = 60) throws -> CommandResult {
    var env = ProcessInfo.processInfo.environment
    for k in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"] { env[k] = nil }
    env["http_proxy"] = proxy
    env["HTTP_PROXY"] = proxy
    env["https_proxy"] = proxy
    env["HTTPS_PROXY"] = proxy
    return try runCommand("curl", ["-sS", "--max-time", String(Int(timeout))] + args, environment: env, timeout: timeout + 5)
}

/// A loopback port that listens and never accepts: the kernel's backlog completes TCP
/// handshakes, nobody answers. A peer that hangs, until released.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            Foundation.close(fd)
            throw NSError(domain: "listen", code: Int(errno))
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    deinit { Foundation.close(fd) }
}

/// A raw TCP client for what curl will not send: pipelining, malformed heads, trickling.
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

final class RawClient {
    let fd: Int32

    init(port: Int, ipv6: Bool = false) throws {
        let rc: Int32
        if ipv6 {
            fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = UInt16(port).bigEndian
            addr.sin6_addr = in6addr_loopback
            rc = withUnsafePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = UInt16(port).bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            rc = withUnsafePointer(to: &addr) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        if rc != 0 { Foundation.close(fd); throw NSError(domain: "raw", code: Int(errno)) }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ s: String) { send(Array(s.utf8)) }
    func shutdownWrite() { _ = Foundation.shutdown(fd, Int32(SHUT_WR)) }
    func send(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    /// Reads until `predicate` holds for the bytes so far, EOF, or the timeout.
    func read(timeout: Double = 10, until predicate: (String) -> Bool = { _ in false }) -> (text: String, eof: Bool) {
        var data = [UInt8]()
        let deadline = Date().addingTimeInterval(timeout)
        var buf = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return (String(decoding: data, as: UTF8.self), true) }
            if n < 0 { if errno == EAGAIN || errno == EINTR { continue }; return (String(decoding: data, as: UTF8.self), true) }
            data.append(contentsOf: buf[0..<n])
            if predicate(String(decoding: data, as: UTF8.self)) { break }
        }
        return (String(decoding: data, as: UTF8.self), false)
    }

    /// Whatever arrives within `seconds` and no later (`read` may overrun its timeout by the
    /// socket's 10 s receive timeout while a recv waits): for checking that nothing comes.
    func readWithin(_ seconds: Double) -> String {
        var data = [UInt8]()
        let deadline = Date().addingTimeInterval(seconds)
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { break }
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let n = poll(&ready, 1, Int32(left * 1000) + 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            let got = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if got <= 0 { break }
            data.append(contentsOf: buf[0..<got])
        }
        return String(decoding: data, as: UTF8.self)
    }

    deinit { Foundation.close(fd) }
}

/// `[1234567,-0.5e3,"text",…,0]`, about `bytes` long.
func largeJSONArray(bytes: Int) -> String {
    var text = "["
    while text.utf8.count < bytes { text += "1234567,-0.5e3,\"text\"," }
    return text + "0]"
}

/// `clients` keep-alive connections each POST `perClient` JSON bodies of about `bodyBytes`
/// to `url` (`/echo?n=N`, N unique) through the proxy at `port` and read each answer;
/// returns how many did not get a 200.
func postJSONBurst(port: Int, url: String, clients: Int, perClient: Int, bodyBytes: Int = 512 << 10) -> Int {
    let body = largeJSONArray(bytes: bodyBytes)
    let failures = Locked(0)
    let group = DispatchGroup()
    for c in 0..<clients {
        group.enter()
        Thread {
            defer { group.leave() }
            guard let client = try? RawClient(port: port) else { failures.update { $0 += perClient }; return }
            for i in 0..<perClient {
                client.send("POST \(url)?n=\(c * perClient + i) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
                let r = client.read(timeout: 30) { $0.hasSuffix("0]") }
                if !r.text.hasPrefix("HTTP/1.1 200") { failures.update { $0 += 1 } }
            }
        }.start()
    }
    group.wait()
    return failures.value
}

/// Counts occurrences of `needle` in `haystack`.
func occurrences(of needle: String, in haystack: String) -> Int {
    haystack.components(separatedBy: needle).count - 1
}

/// A value shared between a test and its helper threads.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.lock(); defer { lock.unlock() }; return stored }
    func update(_ body: (inout T) -> Void) { lock.lock(); body(&stored); lock.unlock() }
}
