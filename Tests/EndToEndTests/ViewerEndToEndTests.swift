import Foundation
import XCTest

/// The web viewer against the release binary: headless Chromium driven by selenium
/// (Resources/viewer_browser.py, Debian's python3 with python3-selenium, chromium and
/// chromium-driver, which `make test` installs) for what a person sees and does, plain HTTP
/// for what the viewer refuses. Screenshots of the list, a detail, a diff and the history go
/// to .build/test-output/ViewerEndToEndTests/ on every run.
final class ViewerEndToEndTests: XCTestCase {
    private static let script = packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/viewer_browser.py").path
    private static let harSchema = packageRoot.appendingPathComponent("Tests/LogToolsTests/Resources/har-1.2.schema.json").path

    /// Debian's interpreter (its python3-selenium), not whatever python3 is first on PATH.
    private var python: String { ProcessInfo.processInfo.environment["TAPWIRE_VIEWER_PYTHON"] ?? "/usr/bin/python3" }

    private func outputDirectory(_ name: String) throws -> URL {
        let url = packageRoot.appendingPathComponent(".build/test-output/ViewerEndToEndTests/\(name)")
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    private func requireBrowser() throws {
        for path in ["/usr/bin/chromium", "/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: path) {
            throw XCTSkip("\(path) is missing: `make test-deps` installs chromium and chromium-driver")
        }
        let probe = try runCommand(python, ["-c", "import selenium, jsonschema"])
        if probe.status != 0 { throw XCTSkip("\(python) cannot import selenium and jsonschema (make test-deps): \(probe.stderr)") }
    }

    /// Runs the browser script; its lines are printed, and a failure names its check.
    private func browse(_ arguments: [String], timeout: Double) throws {
        var environment = ProcessInfo.processInfo.environment
        environment["TAPWIRE_HAR_SCHEMA"] = Self.harSchema
        let result = try runCommand(python, [Self.script] + arguments, environment: environment, timeout: timeout)
        print(result.text)
        XCTAssertEqual(result.status, 0, "browser checks failed:\n\(result.text)\n\(result.stderr)")
        XCTAssertTrue(result.text.contains("PASS"), result.text)
    }

    func testRowsFollowLiveTrafficAndTheQueryDetailAndActionsWork() throws {
        try requireBrowser()
        let origin = try OriginServer()
        // A form rule and a validating rule, for the detail's form tree and failure banner.
        let proxy = try TapwireProcess(config: ["rules": [
            ["name": "form-echo", "match": ["path": "/echo", "contentType": ["application/x-www-form-urlencoded"]], "serializer": ["type": "form"]],
            ["name": "json-only", "match": ["path": "/close-delimited"], "serializer": ["type": "string"], "validate": ["contentType": ["application/json"]]],
        ]])
        defer { proxy.stop() }
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("viewer on http://127.0.0.1:\(proxy.port)/") })
        let out = try outputDirectory("live")
        try browse(["live", "http://127.0.0.1:\(proxy.port)/", proxy.proxyURL, origin.base, out.path], timeout: 240)
        for shot in ["list.png", "detail.png", "diff.png"] {
            XCTAssertTrue(FileManager.default.fileExists(atPath: out.appendingPathComponent(shot).path), shot)
        }
        print("screenshots in \(out.path)")
    }

    func testAHundredThousandHistoricalRecordsLoadAndScrollWithoutBlocking() throws {
        try requireBrowser()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-viewer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let count = 100_000
        let generate = try runCommand(python, [Self.script, "generate", work.path, String(count)], timeout: 120)
        XCTAssertEqual(generate.status, 0, generate.stderr)
        let view = try ViewProcess(logDirectory: work.path)
        defer { view.stop() }
        let out = try outputDirectory("history")
        try browse(["history", view.url, String(count), out.path, work.path], timeout: 400)
        print("screenshots in \(out.path)")
    }

    /// The live stream breaks (here `tapwire view` stops and starts again on its port): the
    /// page reconnects and fills in from the log the record written while nothing served it.
    /// A hidden page closes its stream, and does the same when shown again.
    func testALiveListThatReconnectsGetsTheRecordsWrittenWhileItWasDown() throws {
        try requireBrowser()
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-viewer-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        let out = try outputDirectory("reconnect")
        try browse(["reconnect", try tapwireBinary(), work.path, out.path], timeout: 120)
    }

    // MARK: refusals (plain HTTP)

    private struct Answer {
        var status: Int
        var headers: String
        var body: String
    }

    /// One request straight to the viewer (never through a proxy), with the given fields.
    private func request(_ port: Int, _ path: String, method: String = "GET", headers: [String] = [], body: String? = nil) throws -> Answer {
        var arguments = ["-s", "--noproxy", "*", "--max-time", "10", "-D", "-", "-X", method]
        for header in headers { arguments += ["-H", header] }
        if let body { arguments += ["--data-binary", body] }
        let result = try runCommand("curl", arguments + ["http://127.0.0.1:\(port)\(path)"])
        let text = result.text
        guard let split = text.range(of: "\r\n\r\n") else { return Answer(status: 0, headers: text, body: "") }
        let head = String(text[..<split.lowerBound])
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return Answer(status: status, headers: head, body: String(text[split.upperBound...]))
    }

    private func token(_ port: Int) throws -> String {
        let page = try request(port, "/")
        let marker = "name=\"tapwire-token\" content=\""
        let start = try XCTUnwrap(page.body.range(of: marker), page.body)
        return String(page.body[start.upperBound...].prefix { $0 != "\"" })
    }

    func testARebindingHostACrossOriginPostAndAPostWithoutTheTokenAreRefused() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        defer { proxy.stop() }
        let port = proxy.port
        _ = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "\(origin.base)/json"])
        XCTAssertTrue(try eventually { try self.request(port, "/api/records").body.contains("/json") })
        let secret = try token(port)
        XCTAssertGreaterThan(secret.count, 40)

        // DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own name.
        for path in ["/", "/api/records", "/api/live", "/api/har"] {
            let rebound = try request(port, path, headers: ["Host: evil.example:\(port)"])
            XCTAssertEqual(rebound.status, 421, path)
            XCTAssertFalse(rebound.body.contains("/json") || rebound.body.contains(secret), rebound.body)
        }
        XCTAssertEqual(try request(port, "/api/records", headers: ["Host: 127.0.0.1:\(port + 1)"]).status, 421, "another port")
        for host in ["localhost:\(port)", "127.0.0.1:\(port)", "[::1]:\(port)"] {
            XCTAssertEqual(try request(port, "/api/records", headers: ["Host: \(host)"]).status, 200, host)
        }

        // Acting needs POST, the page's token and a matching Origin.
        let id = try XCTUnwrap(try request(port, "/api/records?limit=1").body.split(separator: "\"").dropFirst(5).first.map(String.init))
        let own = "Origin: http://127.0.0.1:\(port)"
        let crossOrigin = try request(port, "/api/replay", method: "POST", headers: ["Origin: http://evil.example", "X-Tapwire-Token: \(secret)"], body: "id=\(id)")
        XCTAssertEqual(crossOrigin.status, 403, crossOrigin.body)
        let noToken = try request(port, "/api/replay", method: "POST", headers: [own], body: "id=\(id)")
        XCTAssertEqual(noToken.status, 403, noToken.body)
        let wrongToken = try request(port, "/api/replay", method: "POST", headers: [own, "X-Tapwire-Token: \(secret)x"], body: "id=\(id)")
        XCTAssertEqual(wrongToken.status, 403)
        let noOrigin = try request(port, "/api/replay", method: "POST", headers: ["X-Tapwire-Token: \(secret)"], body: "id=\(id)")
        XCTAssertEqual(noOrigin.status, 403)
        XCTAssertEqual(try request(port, "/api/replay?id=\(id)").status, 405, "GET never acts")
        XCTAssertEqual(try request(port, "/api/replay", method: "OPTIONS", headers: ["Origin: http://evil.example"]).status, 403)
        let records = { try self.request(port, "/api/records").body.components(separatedBy: "\"replayOf\"").count - 1 }
        XCTAssertEqual(try records(), 0, "no refused request replayed anything")
        let allowed = try request(port, "/api/replay", method: "POST", headers: [own, "X-Tapwire-Token: \(secret)"], body: "id=\(id)")
        XCTAssertEqual(allowed.status, 200, allowed.body)
        XCTAssertTrue(try eventually { try records() == 1 }, "the replay is recorded, linked to its original")

        // The live stream checks Origin; nothing carries CORS headers.
        let foreignLive = try request(port, "/api/live", headers: ["Origin: http://evil.example"])
        XCTAssertEqual(foreignLive.status, 403)
        XCTAssertEqual(try request(port, "/api/records", headers: ["Sec-Fetch-Site: cross-site"]).status, 403)
        // A shared link to a view, clicked on another site: the page, and nothing else.
        let navigate = ["Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"]
        let linked = try request(port, "/?q=status%3D200", headers: navigate)
        XCTAssertEqual(linked.status, 200)
        XCTAssertTrue(linked.headers.contains("Cross-Origin-Opener-Policy: same-origin"), linked.headers)
        // ...which holds its query until the reader runs it (the browser test checks the page).
        XCTAssertTrue(linked.body.contains(#"<meta name="tapwire-linked" content="elsewhere">"#), linked.body)
        let sameSite = try request(port, "/?q=status%3D200", headers: ["Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"])
        XCTAssertTrue(sameSite.body.contains(#"content="elsewhere""#), "another port on this host is another page too")
        for own in [["Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: document"], ["Sec-Fetch-Site: same-origin"]] {
            XCTAssertTrue(try request(port, "/?q=status%3D200", headers: own).body.contains(#"<meta name="tapwire-linked" content="here">"#), "\(own)")
        }
        XCTAssertTrue(try request(port, "/?q=status%3D200").body.contains(#"content="elsewhere""#), "a browser that does not say cannot be told apart")
        XCTAssertEqual(try request(port, "/api/records", headers: navigate).status, 403, "only the page")
        XCTAssertEqual(try request(port, "/", headers: ["Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors", "Sec-Fetch-Dest: empty"]).status, 403)
        XCTAssertEqual(try request(port, "/", headers: ["Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate", "Sec-Fetch-Dest: iframe"]).status, 403)
        for path in ["/", "/viewer.js", "/api/records", "/api/record?id=\(id)", "/api/curl?id=\(id)"] {
            let answer = try request(port, path, headers: ["Origin: http://127.0.0.1:\(port)"])
            XCTAssertEqual(answer.status, 200, path)
            XCTAssertFalse(answer.headers.lowercased().contains("access-control-"), "\(path): \(answer.headers)")
        }
        // A bad query is a 400 naming the column.
        let bad = try request(port, "/api/records?q=status%3E%3D")
        XCTAssertEqual(bad.status, 400)
        XCTAssertTrue(bad.body.contains("\"column\":9"), bad.body)
        let badRows = try request(port, "/api/live?rows=0")
        XCTAssertEqual(badRows.status, 400)
        XCTAssertTrue(badRows.body.contains("rows:"), badRows.body)
        let badEvery = try request(port, "/api/live?every=soon")
        XCTAssertEqual(badEvery.status, 400)
        XCTAssertTrue(badEvery.body.contains("every:"), badEvery.body)

        // The proxy's own endpoints and loops are as before.
        XCTAssertEqual(try request(port, "/healthz").body, "ok\n")
        XCTAssertTrue(try request(port, "/metrics").body.contains("tapwire_"))
        let loop = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/"])
        XCTAssertEqual(loop.text, "508", "an absolute-form request to the proxy's own address is a loop")
    }

    func testViewerLimitsMaxConnectionsAndIdleTimeout() throws {
        let proxy = try TapwireProcess(config: ["viewer": ["maxConnections": 1, "idleTimeout": 1]])
        defer { proxy.stop() }
        // A live stream holds the one connection allowed.
        let live = try RawClient(port: proxy.port)
        live.send("GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\n\r\n")
        XCTAssertTrue(live.read { $0.contains(": live") }.text.hasPrefix("HTTP/1.1 200"))
        let refused = try request(proxy.port, "/api/records")
        XCTAssertEqual(refused.status, 503, refused.body)
        XCTAssertTrue(refused.body.contains("viewer.maxConnections"), refused.body)
        withExtendedLifetime(live) {}

        // A keep-alive connection that sends nothing more is closed after viewer.idleTimeout.
        let started = Date()
        let idle = try TapwireProcess(config: ["viewer": ["idleTimeout": 1]])
        defer { idle.stop() }
        let quiet = try RawClient(port: idle.port)
        quiet.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(idle.port)\r\n\r\n")
        XCTAssertTrue(quiet.read { $0.contains("</html>") }.text.hasPrefix("HTTP/1.1 200"))
        XCTAssertTrue(quiet.read(timeout: 10).eof, "a keep-alive viewer connection that stays silent is closed")
        XCTAssertLessThan(Date().timeIntervalSince(started), 9)
    }

    /// `/api/live?every=S`: a row after a quiet spell is sent at once; after an event the next
    /// waits S, carrying every row of the looks in between.
    func testLiveEventsArePacedByEvery() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        defer { proxy.stop() }
        let live = try RawClient(port: proxy.port)
        live.send("GET /api/live?every=3 HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\n\r\n")
        XCTAssertTrue(live.read { $0.contains(": live") }.text.hasPrefix("HTTP/1.1 200"))
        _ = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "\(origin.base)/json"])
        XCTAssertTrue(live.read { $0.contains("data: [") }.text.contains("/json"), "a row after a quiet spell goes at once")
        for _ in 0..<4 { _ = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "\(origin.base)/json"]) }
        // A slow machine only delays events, so nothing arriving this soon is not luck.
        let soon = live.readWithin(1)
        XCTAssertFalse(soon.contains("data: ["), "an event within 1 s of the last, with every=3: \(soon)")
        let rest = soon + live.read(timeout: 15) { (soon + $0).components(separatedBy: "/json").count - 1 >= 4 }.text
        XCTAssertEqual(rest.components(separatedBy: "/json").count - 1, 4, rest)
        XCTAssertEqual(rest.components(separatedBy: "data: [").count - 1, 1, "the four rows in one event: \(rest)")
    }

    /// viewer.maxQueuedRows under a paced stream: the rows that come while it waits are kept
    /// up to that many, the newest; the older ones are a gap, which says how many rows follow.
    func testAPacedStreamKeepsTheNewestQueuedRowsAfterAGap() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["viewer": ["maxRowsPerLook": 1, "maxQueuedRows": 1]])
        defer { proxy.stop() }
        let one = try RawClient(port: proxy.port)
        one.send("GET /api/live?every=3&rows=1 HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\n\r\n")
        XCTAssertTrue(one.read { $0.contains(": live") }.text.hasPrefix("HTTP/1.1 200"))
        _ = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "\(origin.base)/json?first"])
        XCTAssertTrue(one.read { $0.contains("data: [") }.text.contains("/json"))
        for n in 1...4 { _ = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "\(origin.base)/json?n=\(n)"]) }
        let gapped = one.read(timeout: 15) { $0.contains("data: [") }.text
        XCTAssertTrue(gapped.contains("event: gap\ndata: {\"skipped\":3,\"rows\":1}"), gapped)
    }

    /// viewer.maxRequestBytes bounds bodies (413) and the heads the viewer reads itself (431);
    /// viewer.heartbeatInterval paces the keep-alive comments of an idle live stream.
    func testViewerLimitsRequestBytesAndHeartbeat() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-viewer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let configFile = work.appendingPathComponent("tapwire.json")
        try Data(#"{"viewer": {"maxRequestBytes": 2048}}"#.utf8).write(to: configFile)
        let view = try ViewProcess(logDirectory: work.path, configFile: configFile.path)
        defer { view.stop() }
        let filler = "X-Filler: " + String(repeating: "a", count: 4096)
        let big = try request(view.port, "/api/records", headers: [filler])
        XCTAssertEqual(big.status, 431, big.body)
        XCTAssertTrue(big.body.contains("viewer.maxRequestBytes"), big.body)
        XCTAssertEqual(try request(view.port, "/api/records").status, 200)

        let proxy = try TapwireProcess(config: ["viewer": ["maxRequestBytes": 2048, "heartbeatInterval": 0.2]])
        defer { proxy.stop() }
        let secret = try token(proxy.port)
        let body = try request(proxy.port, "/api/replay", method: "POST",
                               headers: ["Origin: http://127.0.0.1:\(proxy.port)", "X-Tapwire-Token: \(secret)"],
                               body: "id=" + String(repeating: "0", count: 4096))
        XCTAssertEqual(body.status, 413, body.body)
        XCTAssertEqual(try request(proxy.port, "/healthz").body, "ok\n", "the refusals closed only their own connections")

        let live = try RawClient(port: proxy.port)
        live.send("GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\n\r\n")
        // Three keep-alive comments arrive long before the default 15 s would give one.
        let text = live.read(timeout: 10) { $0.components(separatedBy: ": keep-alive").count > 3 }.text
        XCTAssertGreaterThan(text.components(separatedBy: ": keep-alive").count, 3, text)
    }

    /// With two listen addresses, the viewer answers on each, and the Host must name the one
    /// the request came to.
    func testTheViewerAnswersOnEveryListenAddress() throws {
        let proxy = try TapwireProcess(config: ["listen": ["127.0.0.1:0", "127.0.0.1:0"]])
        defer { proxy.stop() }
        let ports = try listeningPorts(proxy, count: 2)
        for port in ports {
            XCTAssertEqual(try request(port, "/api/records").status, 200, "port \(port)")
            XCTAssertEqual(try request(port, "/").status, 200, "port \(port)")
        }
        XCTAssertEqual(try request(ports[1], "/api/records", headers: ["Host: 127.0.0.1:\(ports[0])"]).status, 421,
                       "a Host naming the other listener")
    }

    /// `access.allow` applies to `tapwire view` as to the proxy: a client outside it gets 403
    /// and no data.
    func testViewAppliesAccessAllow() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-viewer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        try Data(#"{"id":"0000018c2b1f4a1e-000001","kind":"http","secret":"VIEW-SECRET-1"}"#.utf8 + [10]).write(to: work.appendingPathComponent("tapwire.jsonl"))
        let configFile = work.appendingPathComponent("tapwire.json")
        try Data(#"{"access": {"allow": ["10.0.0.0/8"]}}"#.utf8).write(to: configFile)
        let view = try ViewProcess(logDirectory: work.path, configFile: configFile.path)
        defer { view.stop() }
        for path in ["/", "/api/records", "/api/record?id=0000018c2b1f4a1e-000001"] {
            let answer = try request(view.port, path)
            XCTAssertEqual(answer.status, 403, path)
            XCTAssertTrue(answer.body.contains("access.allow"), answer.body)
            XCTAssertFalse(answer.body.contains("VIEW-SECRET-1"), path)
        }
        try Data(#"{"access": {"allow": ["127.0.0.1/32"]}}"#.utf8).write(to: configFile)
        let allowed = try ViewProcess(logDirectory: work.path, configFile: configFile.path)
        defer { allowed.stop() }
        XCTAssertEqual(try request(allowed.port, "/api/records").status, 200, "the control: a listed client is answered")
    }

    func testViewIsReadOnlyAndTheViewerCanBeTurnedOff() throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tapwire-viewer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let line = #"{"id":"0000018c2b1f4a1e-000001","kind":"http","client":"127.0.0.1:1","request":{"method":"GET","url":"http://127.0.0.1:9/x","httpVersion":"HTTP/1.1","headers":[],"bodySize":0},"response":null,"error":{"code":"upstreamConnectFailed","message":"refused"}}"#
        try Data((line + "\n").utf8).write(to: work.appendingPathComponent("tapwire.jsonl"))
        let view = try ViewProcess(logDirectory: work.path)
        defer { view.stop() }
        let port = view.port
        XCTAssertTrue(try request(port, "/api/records").body.contains("0000018c2b1f4a1e-000001"))
        let secret = try token(port)
        let replay = try request(port, "/api/replay", method: "POST",
                                 headers: ["Origin: http://127.0.0.1:\(port)", "X-Tapwire-Token: \(secret)"], body: "id=0000018c2b1f4a1e-000001")
        XCTAssertEqual(replay.status, 403)
        XCTAssertTrue(replay.body.contains("read-only"), replay.body)
        XCTAssertEqual(try request(port, "/", headers: ["Host: evil.example:\(port)"]).status, 421)

        let missing = try runCommand(try tapwireBinary(), ["view", "--log-dir", work.path + "/nothing-here", "--listen", "127.0.0.1:0"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("cannot read log directory"), missing.stderr)
        let badListen = try runCommand(try tapwireBinary(), ["view", "--log-dir", work.path, "--listen", "localhost:x"])
        XCTAssertEqual(badListen.status, 2, "a bad --listen is bad usage")

        let off = try TapwireProcess(config: ["viewer": ["enabled": false]])
        defer { off.stop() }
        let answer = try request(off.port, "/")
        XCTAssertEqual(answer.status, 400, "viewer.enabled false: origin-form requests are answered as before")
        XCTAssertEqual(try request(off.port, "/healthz").status, 200)
    }
}

/// `tapwire view --log-dir DIR --listen 127.0.0.1:0`, its URL read from the line it prints.
final class ViewProcess {
    let process = Process()
    let url: String
    let port: Int

    init(logDirectory: String, configFile: String? = nil) throws {
        process.executableURL = URL(fileURLWithPath: try tapwireBinary())
        process.arguments = ["view", "--log-dir", logDirectory, "--listen", "127.0.0.1:0"] + (configFile.map { ["--config", $0] } ?? [])
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let stdout = LineReader(out.fileHandleForReading)
        let stderr = LineReader(err.fileHandleForReading)
        try process.run()
        guard let line = stdout.waitFor({ $0.contains("open http://") }),
              let found = line.split(separator: " ").first(where: { $0.hasPrefix("http://") }),
              let port = found.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: CharacterSet(charactersIn: "/"))) }) else {
            if process.isRunning { process.terminate() }
            throw NSError(domain: "tapwire", code: 1, userInfo: [NSLocalizedDescriptionKey: "tapwire view did not start: \(stderr.all)"])
        }
        url = String(found)
        self.port = port
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}
