import Foundation
import XCTest

/// Whether `file` holds `text` within 10 s (the writer batches, so a record lands a little late).
func fileEventually(_ file: URL, contains text: String) -> Bool {
    eventually(every: 0.05) { ((try? String(contentsOf: file, encoding: .utf8)) ?? "").contains(text) }
}

/// Every line of every log file in `directory` (rotated, compressed, active), oldest first.
func logLines(_ directory: URL) throws -> [String] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
    var lines: [String] = []
    for name in names.sorted() where name.hasSuffix(".jsonl") || name.hasSuffix(".jsonl.gz") {
        let text = String(data: try logFileContents(directory.appendingPathComponent(name)), encoding: .utf8) ?? ""
        lines += text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }
    return lines
}

/// A log file's bytes, decompressed when it is a .gz archive; a plain file that cannot be
/// read is empty (it may have been rotated away meanwhile).
func logFileContents(_ url: URL) throws -> Data {
    if url.pathExtension == "gz" { return Data(try runCommand("gzip", ["-dc", url.path]).text.utf8) }
    return (try? Data(contentsOf: url)) ?? Data()
}

/// The size or interval rotations in a log directory (`tapwire-<time>.jsonl[.gz]`).
func rotatedLogFiles(_ directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("tapwire-") }
}

/// Waits until the log holds a line for which `predicate` holds.
func waitForRecord(_ directory: URL, timeout: Double = 10, _ predicate: (String) -> Bool) throws -> String? {
    var found: String?
    try eventually(timeout: timeout, every: 0.05) {
        found = try logLines(directory).first(where: predicate)
        return found != nil
    }
    return found
}

/// How many of the proxy's threads sleep in the kernel function `function` (their wchan).
func threadsWaiting(in proxy: TapwireProcess, at function: String) -> Int {
    let tasks = "/proc/\(proxy.process.processIdentifier)/task"
    let ids = (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []
    return ids.filter { (try? String(contentsOfFile: "\(tasks)/\($0)/wchan", encoding: .utf8)) == function }.count
}

/// Parses one record with Foundation (enough for field checks; exact number text is checked on the raw line).
func parseRecord(_ line: String) throws -> [String: Any] {
    try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
}

final class RecordEndToEndTests: XCTestCase {
    var origin: OriginServer!
    var proxy: TapwireProcess!

    override func setUpWithError() throws {
        origin = try OriginServer()
        // blindTunnels: testTunnelRecord's CONNECT carries plain HTTP, which would be decoded.
        proxy = try TapwireProcess(config: ["upstream": ["readTimeout": 2], "capture": ["blindTunnels": ["127.0.0.1"]]])
    }

    override func tearDown() {
        proxy = nil
        origin = nil
    }

    func testJSONExchangeRecordKeepsNumberTextAndRedactsSecrets() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-H", "Authorization: Bearer SECRET-TOKEN-1", "-H", "Cookie: sid=SECRET-COOKIE-2",
                                                  "\(origin.base)/json?x=1"])
        XCTAssertEqual(r.status, 0)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/json?x=1") })
        XCTAssertTrue(line.contains(#""result":{"success":{"id":12345678901234567890,"ok":true,"name":"tap","items":[1,2,3],"password":"[redacted]"}}"#), line)
        XCTAssertFalse(line.contains("SECRET-TOKEN-1"))
        XCTAssertFalse(line.contains("SECRET-COOKIE-2"))
        XCTAssertFalse(line.contains("hunter2"))
        let rec = try parseRecord(line)
        XCTAssertEqual(rec["kind"] as? String, "http")
        XCTAssertEqual(rec["rule"] as? String, "default")
        XCTAssertEqual(rec["serializer"] as? String, "json")
        let request = try XCTUnwrap(rec["request"] as? [String: Any])
        XCTAssertEqual(request["url"] as? String, "\(origin.base)/json?x=1")
        let response = try XCTUnwrap(rec["response"] as? [String: Any])
        XCTAssertEqual(response["status"] as? Int, 200)
        let timeline = try XCTUnwrap(rec["timeline"] as? [String: Any])
        for key in ["latency", "requestDuration", "serializationDuration", "totalDuration"] {
            XCTAssertGreaterThanOrEqual(try XCTUnwrap(timeline[key] as? Double, key), 0)
        }
        XCTAssertTrue((timeline["requestStartTime"] as? String)?.hasSuffix("Z") ?? false)
        let id = try XCTUnwrap(rec["id"] as? String)
        XCTAssertEqual(id.count, 23, id)
    }

    func testGzipResponseIsDecodedBeforeParsing() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/gzip-json"])
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/gzip-json") })
        XCTAssertTrue(line.contains(#""result":{"success":{"compressed":true,"n":1.50}}"#), line)
        XCTAssertTrue(line.contains(#""contentEncoding":"gzip""#), line)
    }

    func testRequestBodySecretsNeverReachTheDisk() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: application/json",
                                              "--data-binary", #"{"user":"ann","password":"BODY-SECRET-3"}"#, "\(origin.base)/echo"])
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/echo") })
        XCTAssertFalse(line.contains("BODY-SECRET-3"), line)
        XCTAssertTrue(line.contains(#""user":"ann""#), line)
    }

    func testTransportFailureRecord() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/never?s=5"])
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/never") })
        let rec = try parseRecord(line)
        XCTAssertTrue(rec["response"] is NSNull, line)
        let error = try XCTUnwrap(rec["error"] as? [String: Any], line)
        XCTAssertEqual(error["code"] as? String, "upstreamTimeout")
        XCTAssertTrue(line.contains(#""failure""#), line)
    }

    func testTunnelRecord() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-p", "\(origin.base)/json"])
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(#""kind":"tunnel""#) })
        let rec = try parseRecord(line)
        XCTAssertEqual(rec["target"] as? String, "127.0.0.1:\(origin.port)")
        XCTAssertEqual(rec["status"] as? Int, 200)
        XCTAssertGreaterThan(try XCTUnwrap(rec["bytesFromUpstream"] as? Int), 87)
    }

    func testShutdownFlushesEveryAcceptedRecord() throws {
        for i in 0..<50 {
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=200&n=\(i)"])
        }
        XCTAssertEqual(proxy.stop(), 0)
        let lines = try logLines(proxy.logDirectory)
        for i in 0..<50 {
            XCTAssertEqual(lines.filter { $0.contains("&n=\(i)\"") }.count, 1, "record \(i)")
        }
    }

    func testSIGUSR1ReopensAfterARename() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=200&step=before"])
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("step=before") })
        let active = proxy.logDirectory.appendingPathComponent("tapwire.jsonl")
        try FileManager.default.moveItem(at: active, to: proxy.logDirectory.appendingPathComponent("moved.old"))
        kill(proxy.process.processIdentifier, SIGUSR1)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("reopening") })
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=200&step=after"])
        XCTAssertTrue(fileEventually(active, contains: "step=after"), "the reopened file lacks the new record")
    }
}

final class ReloadEndToEndTests: XCTestCase {
    func testSIGHUPAppliesAGoodConfigAndRefusesABadOne() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["rules": [["name": "first", "match": ["path": "/json"], "serializer": ["type": "string"]]]])
        let configURL = proxy.workDirectory.appendingPathComponent("tapwire.json")
        func logged(_ tag: String) throws -> [String: Any] {
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json?tag=\(tag)"])
            return try parseRecord(try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("tag=\(tag)") }))
        }
        XCTAssertEqual(try logged("a")["rule"] as? String, "first")

        // A bad config is refused; the old rules keep running.
        try Data(#"{"rules": [{"name": "x", "serializer": {"type": "yaml"}}]}"#.utf8).write(to: configURL)
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("rules[0].serializer.type") })
        XCTAssertEqual(try logged("b")["rule"] as? String, "first")

        // A good one replaces them at once.
        var good: [String: Any] = ["listen": ["127.0.0.1:0"], "log": ["directory": proxy.logDirectory.path],
                                   "rules": [["name": "second", "match": ["path": "/json"], "serializer": ["type": "data"]]]]
        good["upstream"] = ["readTimeout": 5]
        try JSONSerialization.data(withJSONObject: good).write(to: configURL)
        kill(proxy.process.processIdentifier, SIGHUP)
        // The summary names the listener still serving, not the file's 127.0.0.1:0.
        let reloaded = proxy.stderr.waitFor { $0.contains("config reloaded") }
        XCTAssertNotNil(reloaded)
        XCTAssertFalse(reloaded?.contains("127.0.0.1:0)") ?? true, reloaded ?? "")
        let rec = try logged("c")
        XCTAssertEqual(rec["rule"] as? String, "second")
        XCTAssertEqual(rec["serializer"] as? String, "data")

        // A log directory that cannot be made is refused like a bad value: the writer would
        // close the old file first and lose every record until the next reload.
        var unusable = good
        unusable["log"] = ["directory": "/proc/tapwire-no-such-dir/logs"]
        try JSONSerialization.data(withJSONObject: unusable).write(to: configURL)
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("cannot write logs in /proc/tapwire-no-such-dir/logs") })
        XCTAssertEqual(try logged("d")["rule"] as? String, "second", "the old config keeps logging")
        XCTAssertEqual(proxy.stop(), 0)
    }
}

extension ReloadEndToEndTests {
    /// A reload swaps redaction and log settings along with the rules: the next records are
    /// redacted by the new lists (which replace the defaults) and rotate at the new size.
    func testSIGHUPAppliesNewRedactionAndLogSettings() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: [:])
        let configURL = proxy.workDirectory.appendingPathComponent("tapwire.json")
        func logged(_ tag: String) throws -> String {
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "X-Api-Key: KEY-\(tag)",
                                                  "-H", "Authorization: Bearer AUTH-\(tag)", "\(origin.base)/json?tag=\(tag)"])
            return try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("tag=\(tag)") })
        }
        let before = try logged("before")
        XCTAssertTrue(before.contains(#""name":"tap""#) && before.contains("KEY-before"), before)
        XCTAssertFalse(before.contains("AUTH-before") || before.contains("hunter2"), before)

        let config: [String: Any] = ["listen": ["127.0.0.1:0"],
                                     "log": ["directory": proxy.logDirectory.path, "maxFileBytes": 4096, "maxFiles": 1000],
                                     "redact": ["headers": ["x-api-key"], "jsonKeys": ["name"]]]
        try JSONSerialization.data(withJSONObject: config).write(to: configURL)
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("config reloaded") })
        let after = try logged("after")
        XCTAssertTrue(after.contains(#"["X-Api-Key","[redacted]"]"#) && after.contains(#""name":"[redacted]""#), after)
        XCTAssertFalse(after.contains("KEY-after"), after)
        XCTAssertTrue(after.contains("AUTH-after") && after.contains("hunter2"), "the new lists replace the defaults: \(after)")

        XCTAssertEqual(try rotatedLogFiles(proxy.logDirectory), [], "64 MiB files rotated already")
        for i in 0..<12 {
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json?fill=\(i)"])
        }
        XCTAssertEqual(proxy.stop(), 0)
        let rotated = try rotatedLogFiles(proxy.logDirectory)
        XCTAssertGreaterThanOrEqual(rotated.count, 2, "log.maxFileBytes did not take effect: \(rotated)")
        XCTAssertEqual(try logLines(proxy.logDirectory).filter { $0.contains("fill=") }.count, 12)
    }

    /// Settings that apply only at a restart are named in the reload's log line: a narrowed
    /// access.allow or a changed tls block must not pass as "config reloaded" alone.
    func testSIGHUPNamesTheSettingsThatWaitForARestart() throws {
        let proxy = try TapwireProcess(config: [:])
        let configURL = proxy.workDirectory.appendingPathComponent("tapwire.json")
        let changed: [String: Any] = ["listen": ["127.0.0.1:0"], "log": ["directory": proxy.logDirectory.path, "enabled": false],
                                      "access": ["allow": ["127.0.0.1/32"]], "tls": ["insecureUpstream": true]]
        try JSONSerialization.data(withJSONObject: changed).write(to: configURL)
        let phrase = "differ from the running values, which stay until a restart"
        kill(proxy.process.processIdentifier, SIGHUP)
        let line = proxy.stderr.waitFor { $0.contains(phrase) }
        XCTAssertNotNil(line)
        for name in ["access.allow", "tls", "log.enabled"] {
            XCTAssertTrue(line?.contains(name) ?? false, "\(name) missing: \(line ?? "")")
        }
        XCTAssertFalse(line?.contains("listen") ?? true, line ?? "")
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("config reloaded") })

        // The same file again: still not applied, so said again (it was compared with the
        // previous file, and a second reload said only "config reloaded").
        let before = proxy.stderr.all.filter { $0.contains(phrase) }.count
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertTrue(proxy.stderr.waitFor(count: before + 1) { $0.contains(phrase) },
                      "a second reload of the same file no longer names the settings still waiting")

        // Back to the running values: nothing waits, nothing is named.
        let running: [String: Any] = ["listen": ["127.0.0.1:0"], "log": ["directory": proxy.logDirectory.path]]
        try JSONSerialization.data(withJSONObject: running).write(to: configURL)
        let reloads = proxy.stderr.all.filter { $0.contains("config reloaded") }.count
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertTrue(proxy.stderr.waitFor(count: reloads + 1) { $0.contains("config reloaded") })
        XCTAssertEqual(proxy.stderr.all.filter { $0.contains(phrase) }.count, before + 1, proxy.stderr.all.joined(separator: "\n"))
        XCTAssertEqual(proxy.stop(), 0)
    }
}

extension ReloadEndToEndTests {
    /// logrotate's `postrotate systemctl reload` sends SIGHUP after renaming the file: with a
    /// broken edit pending in the config, the refusal must still reopen the log files, or
    /// every later record goes into the renamed one.
    func testSIGHUPRefusingAConfigStillReopensTheLogFiles() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: [:])
        let configURL = proxy.workDirectory.appendingPathComponent("tapwire.json")
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=200&step=before"])
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("step=before") })
        let active = proxy.logDirectory.appendingPathComponent("tapwire.jsonl")
        try FileManager.default.moveItem(at: active, to: proxy.logDirectory.appendingPathComponent("rotated.old"))
        try Data(#"{"log": {"maxFiles": "many"}}"#.utf8).write(to: configURL)
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("log.maxFiles") })
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=200&step=after"])
        XCTAssertTrue(fileEventually(active, contains: "step=after"), "the record went to the renamed file")
        XCTAssertEqual(proxy.stop(), 0)
    }
}

extension ReloadEndToEndTests {
    /// logrotate can send SIGHUP or SIGUSR1 at any moment, also just as the proxy starts:
    /// once it says "listening on", neither may kill it (the default action) any more.
    func testSignalsRightAfterStartDoNotKill() throws {
        let origin = try OriginServer()
        for signo in [SIGHUP, SIGUSR1] {
            let proxy = try TapwireProcess(config: [:])
            kill(proxy.process.processIdentifier, signo)
            // Handled once it says so; if the signal killed it, its stderr ends instead.
            let handled = proxy.stderr.waitFor { $0.contains(signo == SIGHUP ? "SIGHUP: config reloaded" : "SIGUSR1: reopening") }
            if handled == nil { eventually { !proxy.process.isRunning } }
            XCTAssertTrue(proxy.process.isRunning, "signal \(signo) killed it")
            guard proxy.process.isRunning else { continue }
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=200&signal=\(signo)"])
            XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("signal=\(signo)") })
            XCTAssertEqual(proxy.stop(), 0)
        }
    }
}

extension ReloadEndToEndTests {
    /// A second `tapwire run` on the live config's log (to try a change, on another port)
    /// stops with a clear error instead of running recovery in the live log directory.
    func testASecondProxyOnTheSameLogDirectoryIsRefused() throws {
        let live = try TapwireProcess(config: [:])
        XCTAssertThrowsError(try TapwireProcess(config: [:], logDirectory: live.logDirectory)) { error in
            XCTAssertTrue("\(error)".contains("another tapwire process writes this log"), "\(error)")
        }
        XCTAssertTrue(live.process.isRunning)
        XCTAssertEqual(live.stop(), 0)
    }
}

extension ReloadEndToEndTests {
    /// SIGHUP reads the config file and opens the new log location: on a hung mount that
    /// blocks. It ran on the first event loop, so every client that loop served hung too
    /// (and the watchdog would kill the service). A FIFO as the new log file stands in
    /// for the hung mount: opening it for writing waits for a reader.
    func testAReloadBlockedOnTheNewLogFileLeavesTrafficFlowing() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: [:])
        let hung = proxy.workDirectory.appendingPathComponent("hung-logs")
        try FileManager.default.createDirectory(at: hung, withIntermediateDirectories: true)
        let fifo = hung.appendingPathComponent("tapwire.jsonl").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let config: [String: Any] = ["listen": ["127.0.0.1:0"], "log": ["directory": hung.path]]
        try JSONSerialization.data(withJSONObject: config).write(to: proxy.workDirectory.appendingPathComponent("tapwire.json"))
        var reader: Int32 = -1
        // A reader lets the open finish; kept open so the writer's records fit in the pipe.
        func unblock() { if reader < 0 { reader = open(fifo, O_RDONLY | O_NONBLOCK) } }
        defer { unblock(); _ = proxy.stop(); close(reader) }
        kill(proxy.process.processIdentifier, SIGHUP)
        // The reload is under way once a thread waits in the FIFO's open for a reader.
        XCTAssertTrue(eventually { threadsWaiting(in: proxy, at: "wait_for_partner") > 0 }, "the reload never opened the FIFO")
        // New connections land on either loop (SO_REUSEPORT): with the reload on a loop,
        // about half of them hung.
        for i in 0..<8 {
            let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "3",
                                                      "\(origin.base)/status?code=200&n=\(i)"])
            XCTAssertEqual(r.text, "200", "request \(i) while the reload waits")
        }
        unblock()
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("config reloaded") })
    }
}

extension ReloadEndToEndTests {
    /// Forwarding only (`log.enabled: false`) touches no log file: two such proxies can share
    /// a working directory, and neither creates, locks or recovers the log directory.
    func testForwardingOnlyProxiesLeaveTheLogDirectoryAlone() throws {
        let origin = try OriginServer()
        let first = try TapwireProcess(config: ["log": ["enabled": false]])
        let second = try TapwireProcess(config: ["log": ["enabled": false]], logDirectory: first.logDirectory)
        for proxy in [first, second] {
            let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(origin.base)/json"])
            XCTAssertEqual(r.text, "200")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.logDirectory.path), "the log directory was created")
        XCTAssertEqual(first.stop(), 0)
        XCTAssertEqual(second.stop(), 0)
    }
}

/// The default redaction, end to end: each secret it names, wherever it comes from, reaches
/// no file at all (the active log, rotated plain files, their .gz archives), not only the
/// exchange's own line.
final class RedactionEndToEndTests: XCTestCase {
    func testDefaultRedactionKeepsEverySecretOutOfEveryFile() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["log": ["maxFileBytes": 4096, "maxFiles": 1000, "compress": true]])
        let secrets = ["AUTH-SECRET-1", "PROXYAUTH-SECRET-2", "COOKIE-SECRET-3", "BODY-SECRET-4",
                       "SETCOOKIE-SECRET-5", "NESTED-SECRET-6", "ARRAY-SECRET-7"]
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}",
                                                  "-H", "Authorization: Bearer AUTH-SECRET-1",
                                                  "-H", "Proxy-Authorization: Basic PROXYAUTH-SECRET-2",
                                                  "-H", "Cookie: sid=COOKIE-SECRET-3", "-H", "Content-Type: application/json",
                                                  "--data-binary", #"{"login":{"user":"ann","password":"BODY-SECRET-4"}}"#,
                                                  "\(origin.base)/secrets?tag=s"])
        XCTAssertEqual(r.text, "200")
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/secrets?tag=s") })
        // The record is there with each value replaced, not dropped: the check below is not vacuous.
        for kept in [#"["Authorization","[redacted]"]"#, #"["Proxy-Authorization","[redacted]"]"#, #"["Cookie","[redacted]"]"#, #"["Set-Cookie","[redacted]"]"#,
                     #""user":"ann","password":"[redacted]""#, #""profile":{"password":"[redacted]"}"#,
                     #"[{"token":"[redacted]"}]"#] {
            XCTAssertTrue(line.contains(kept), "\(kept) not in \(line)")
        }
        // Later records rotate that one out of the active file and into an archive.
        for i in 0..<40 {
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json?fill=\(i)"])
        }
        XCTAssertEqual(proxy.stop(), 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: proxy.logDirectory.path)
        XCTAssertTrue(names.contains { $0.hasSuffix(".jsonl.gz") }, "no archive to search: \(names)")
        var searched = 0
        for name in names {
            let url = proxy.logDirectory.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let bytes = try logFileContents(url)
            searched += bytes.count
            for secret in secrets {
                XCTAssertNil(bytes.range(of: Data(secret.utf8)), "\(secret) reached \(name)")
            }
        }
        XCTAssertTrue(try logLines(proxy.logDirectory).contains { $0.contains("/secrets?tag=s") }, "the record itself was lost")
        XCTAssertGreaterThan(searched, 8192)
    }
}

/// Many exchanges at once across many size rotations: nothing lost, nothing twice.
final class RotationLoadEndToEndTests: XCTestCase {
    /// 3,000 exchanges over 100 connections at once, 131 KB files (five rotations and more),
    /// and halfway through, logrotate's `create`: the active file renamed away, then SIGUSR1.
    func testThreeThousandConcurrentExchangesAcrossRotationsWithSIGUSR1() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["log": ["maxFileBytes": 131_072, "maxFiles": 1000, "compress": true]])
        let total = 3000, connections = 100
        let perConnection = total / connections
        let failures = Locked(0)
        let completed = Locked(0)
        let group = DispatchGroup()
        for w in 0..<connections {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let c = try? RawClient(port: proxy.port) else { failures.update { $0 += perConnection }; return }
                for i in 0..<perConnection {
                    let n = w * perConnection + i
                    c.send("GET \(origin.base)/status?code=200&n=\(n) HTTP/1.1\r\nHost: x\r\n\r\n")
                    let r = c.read { $0.hasSuffix("status body") }
                    if !r.text.hasPrefix("HTTP/1.1 200") { failures.update { $0 += 1 } }
                    completed.update { $0 += 1 }
                }
            }.start()
        }
        // Halfway, counted in answered requests: logrotate moves the file, then signals.
        eventually(timeout: 60, every: 0.001) { completed.value >= total / 2 }
        let atSignal = completed.value
        let active = proxy.logDirectory.appendingPathComponent("tapwire.jsonl")
        let moved = proxy.logDirectory.appendingPathComponent("logrotate-moved.jsonl")
        // The writer's own size rotation renames the file too; between its rename and its
        // reopen the active path is briefly missing.
        let renamed = eventually(timeout: 1, every: 0.001) { (try? FileManager.default.moveItem(at: active, to: moved)) != nil }
        XCTAssertTrue(renamed, "the active file was never there to move")
        kill(proxy.process.processIdentifier, SIGUSR1)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("reopening") }, "no reopen logged")
        group.wait()
        XCTAssertLessThan(atSignal, total * 3 / 4, "the signal came too late to be in the middle of the load")
        XCTAssertEqual(failures.value, 0)
        XCTAssertEqual(proxy.stop(timeout: 30), 0)
        let lines = try logLines(proxy.logDirectory)
        var seen = [Int](repeating: 0, count: total)
        for line in lines {
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(line.utf8)), "torn line: \(line.prefix(200))")
            guard let r = line.range(of: "&n=") else { continue }
            let digits = line[r.upperBound...].prefix { $0.isNumber }
            if let n = Int(digits), n < total { seen[n] += 1 }
        }
        XCTAssertEqual(seen.filter { $0 != 1 }.count, 0, "records missing or doubled: \(seen.enumerated().filter { $0.element != 1 }.prefix(10))")
        // After the reopen the writer went on in a new active file, and rotated again.
        XCTAssertTrue(FileManager.default.fileExists(atPath: active.path), "no new active file after SIGUSR1")
        let rotated = try rotatedLogFiles(proxy.logDirectory)
        XCTAssertGreaterThanOrEqual(rotated.count, 5, "only \(rotated.count) rotations")
    }

    func testKillDashNineLeavesOnlyWholeLines() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["log": ["maxFileBytes": 262_144, "maxFiles": 1000]])
        let stop = Locked(false)
        let group = DispatchGroup()
        for w in 0..<8 {
            group.enter()
            Thread {
                defer { group.leave() }
                guard let c = try? RawClient(port: proxy.port) else { return }
                var i = 0
                while !stop.value {
                    c.send("GET \(origin.base)/json?w=\(w)&i=\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
                    if c.read(timeout: 2, until: { $0.hasSuffix("}") }).eof { return }
                    i += 1
                }
            }.start()
        }
        // Killed in full flow: records written and files rotated (and compressed) meanwhile.
        XCTAssertTrue(eventually(timeout: 60, every: 0.05) { ((try? rotatedLogFiles(proxy.logDirectory)) ?? []).count >= 2 },
                      "the load never rotated the log")
        kill(proxy.process.processIdentifier, SIGKILL)
        stop.update { $0 = true }
        group.wait()
        proxy.process.waitUntilExit()
        let active = proxy.logDirectory.appendingPathComponent("tapwire.jsonl")
        let files = try FileManager.default.contentsOfDirectory(atPath: proxy.logDirectory.path).filter { $0.hasSuffix(".jsonl") }
        var count = 0
        for name in files {
            let text = try String(contentsOf: proxy.logDirectory.appendingPathComponent(name), encoding: .utf8)
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            if lines.last == "" { lines.removeLast() } else if name == active.lastPathComponent { lines.removeLast() }
            for line in lines {
                XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(line.utf8)), "torn line in \(name): \(line.prefix(120))")
                count += 1
            }
        }
        // Rotated files the archiver finished compressing count too: with 256 KiB files it keeps
        // up, and the active file alone may hold only the few records since the last rotation.
        // One it was compressing at the kill may not decompress; its plain file is still counted.
        for name in try FileManager.default.contentsOfDirectory(atPath: proxy.logDirectory.path) where name.hasSuffix(".jsonl.gz") {
            let path = proxy.logDirectory.appendingPathComponent(name).path
            if let text = try? runCommand("gzip", ["-dc", path]).text {
                count += text.split(separator: "\n").count
            }
        }
        XCTAssertGreaterThan(count, 50, "the load produced too few records to mean anything")
    }
}
