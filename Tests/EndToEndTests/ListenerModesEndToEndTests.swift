import Foundation
import XCTest

/// The ports of every listener, in `listen` order ("listening on" lines).
func listeningPorts(_ proxy: TapwireProcess, count: Int) throws -> [Int] {
    XCTAssertTrue(proxy.stdout.waitFor(count: count) { $0.hasPrefix("listening on ") })
    return proxy.stdout.all.filter { $0.hasPrefix("listening on ") }.compactMap { $0.split(separator: ":").last.flatMap { Int($0) } }
}

/// curl with no proxy from the environment, bounded.
func curlDirect(_ args: [String], timeout: Double = 20) throws -> CommandResult {
    var env = ProcessInfo.processInfo.environment
    for k in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"] { env[k] = nil }
    return try runCommand("curl", ["-sS", "--max-time", String(Int(timeout))] + args, environment: env, timeout: timeout + 5)
}

/// Reverse listeners and SOCKS5 inbound, with curl and git as the clients.
final class ListenerModesEndToEndTests: XCTestCase {
    var origin: OriginServer!
    var work: URL!

    override func setUpWithError() throws {
        origin = try OriginServer()
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-modes-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    override func tearDown() {
        origin = nil
        try? FileManager.default.removeItem(at: work)
    }

    func testReverseListenerSendsOriginFormRequestsToItsUpstreamWithHostRewritten() throws {
        let proxy = try TapwireProcess(config: ["listen": [
            ["address": "127.0.0.1:0", "mode": "reverse", "upstream": origin.base],
            ["address": "127.0.0.1:0", "mode": "reverse", "upstream": origin.base, "keepHost": true],
        ]])
        defer { proxy.stop() }
        let ports = try listeningPorts(proxy, count: 2)
        let r = try curlDirect(["-i", "-H", "X-Case: rewrite", "http://127.0.0.1:\(ports[0])/echo?q=1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("X-Host: 127.0.0.1:\(origin.port)\r\n"), "Host is the upstream's: \(r.text)")
        let kept = try curlDirect(["-i", "-H", "Host: app.test:8443", "http://127.0.0.1:\(ports[1])/echo"])
        XCTAssertTrue(kept.text.contains("X-Host: app.test:8443\r\n"), "keepHost sends the client's Host: \(kept.text)")
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("X-Case") })
        let record = try parseRecord(line)
        XCTAssertEqual((record["request"] as? [String: Any])?["url"] as? String, "\(origin.base)/echo?q=1", "the upstream URL")
        XCTAssertEqual((record["response"] as? [String: Any])?["status"] as? Int, 200)
        // A proxy request is not served: this listener is not an open proxy.
        let proxied = try curlDirect(["-i", "-x", "http://127.0.0.1:\(ports[0])", "http://example.com/"])
        XCTAssertTrue(proxied.text.hasPrefix("HTTP/1.1 400"), proxied.text)
    }

    /// `protocols: ["http/1.1", "h2c"]`: curl's HTTP/2 with prior knowledge is served as
    /// HTTP/2 (streams multiplexed on one connection, one record each), HTTP/1.1 clients on
    /// the same port as before, and `Upgrade: h2c` is not honoured.
    func testReverseListenerWithH2CServesPriorKnowledgeHTTP2AndHTTP11() throws {
        let proxy = try TapwireProcess(config: ["listen": [
            ["address": "127.0.0.1:0", "mode": "reverse", "upstream": origin.base, "protocols": ["http/1.1", "h2c"]],
            ["address": "127.0.0.1:0", "mode": "reverse", "upstream": origin.base, "keepHost": true, "protocols": ["http/1.1", "h2c"]],
        ]])
        defer { proxy.stop() }
        let ports = try listeningPorts(proxy, count: 2)
        // nghttp (Debian nghttp2-client) sends its URIs as streams of one connection; curl 7.88
        // fails on a second stream of a prior-knowledge connection, even to nghttpd.
        let urls = (1...6).map { "http://127.0.0.1:\(ports[0])/echo?h2c=\($0)" }
        let r = try runCommand("nghttp", ["-n", "-s", "-t", "20"] + urls, timeout: 25)
        XCTAssertEqual(r.status, 0, r.stderr)
        let done = r.text.split(separator: "\n").filter { $0.contains(" 200 ") && $0.contains("/echo?h2c=") }
        XCTAssertEqual(done.count, 6, "six streams answered on one connection: \(r.text)")
        for i in 1...6 {
            let rec = try parseRecord(try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("h2c=\(i)\"") }))
            let request = try XCTUnwrap(rec["request"] as? [String: Any])
            XCTAssertEqual(request["httpVersion"] as? String, "HTTP/2")
            XCTAssertEqual(request["url"] as? String, "\(origin.base)/echo?h2c=\(i)", "the upstream URL")
            XCTAssertEqual((rec["response"] as? [String: Any])?["status"] as? Int, 200)
        }
        // The Host the origin saw: the upstream's, or with keepHost the client's :authority.
        let rewritten = try curlDirect(["--http2-prior-knowledge", "-i", "http://127.0.0.1:\(ports[0])/echo?host=1"])
        XCTAssertTrue(rewritten.text.lowercased().contains("x-host: 127.0.0.1:\(origin.port)\r\n"), rewritten.text)
        let kept = try curlDirect(["--http2-prior-knowledge", "-i", "-H", "Host: app.test:8443", "http://127.0.0.1:\(ports[1])/echo"])
        XCTAssertTrue(kept.text.lowercased().contains("x-host: app.test:8443\r\n"), kept.text)
        // HTTP/1.1 on the same port; an Upgrade: h2c request stays HTTP/1.1.
        let plain = try curlDirect(["-i", "--http1.1", "http://127.0.0.1:\(ports[0])/echo?h1=1"])
        XCTAssertTrue(plain.text.hasPrefix("HTTP/1.1 200"), plain.text)
        let upgrade = try curlDirect(["-i", "--http2", "http://127.0.0.1:\(ports[0])/echo?upgrade=1"])
        XCTAssertTrue(upgrade.text.hasPrefix("HTTP/1.1 200"), "Upgrade: h2c is not honoured: \(upgrade.text)")
        let h1 = try parseRecord(try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("upgrade=1") }))
        XCTAssertEqual((h1["request"] as? [String: Any])?["httpVersion"] as? String, "HTTP/1.1")
    }

    func testUpgradeH2CIsNotPassedOnEvenToAnOriginThatHonoursIt() throws {
        guard (try? runCommand("python3", ["-c", "import h2"]))?.status == 0 else {
            throw XCTSkip("this test needs Python's h2 module (make test-deps installs it)")
        }
        let port = try unusedLoopbackPort()
        let h2cOrigin = Process()
        h2cOrigin.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        h2cOrigin.arguments = ["python3", packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/h2c_upgrade_origin.py").path,
                               String(port)]
        h2cOrigin.standardOutput = FileHandle.nullDevice
        h2cOrigin.standardError = FileHandle.nullDevice
        try h2cOrigin.run()
        defer { h2cOrigin.terminate(); h2cOrigin.waitUntilExit() }
        XCTAssertTrue(eventually { (try? RawClient(port: port)) != nil }, "the h2c origin did not listen")
        // Asked directly, the origin does switch (curl --http2 on http:// sends Upgrade: h2c).
        let direct = try curlDirect(["--http2", "http://127.0.0.1:\(port)/direct"])
        XCTAssertEqual(direct.text, #"{"via":"h2c-upgrade"}"#, direct.stderr)

        let proxy = try TapwireProcess(config: ["listen": [
            ["address": "127.0.0.1:0", "mode": "reverse", "upstream": "http://127.0.0.1:\(port)", "protocols": ["http/1.1", "h2c"]],
        ]])
        defer { proxy.stop() }
        let r = try curlDirect(["-i", "--http2", "http://127.0.0.1:\(proxy.port)/via?upgrade=h2c"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 200"), r.text)
        XCTAssertTrue(r.text.hasSuffix(#"{"via":"h1","upgrade":null}"#), "the origin saw no Upgrade: \(r.text)")
        let record = try parseRecord(try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("upgrade=h2c") }))
        XCTAssertEqual(record["kind"] as? String, "http", "an exchange, not a relayed upgrade")
        XCTAssertEqual((record["response"] as? [String: Any])?["status"] as? Int, 200)
    }

    func testReverseListenerToAnHTTPSUpstreamVerifiesIt() throws {
        let pki = try TestPKI(in: work)
        let tlsOrigin = try OriginServer(tls: (pki.certificate, pki.key))
        let upstream = "https://127.0.0.1:\(tlsOrigin.port)"
        let proxy = try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "reverse", "upstream": upstream]],
                                                "tls": ["upstreamCAFile": pki.caCertificate]])
        let r = try curlDirect(["http://127.0.0.1:\(proxy.port)/json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("12345678901234567890"), r.text)
        proxy.stop()
        // Without the origin's CA it is refused, as any unverified origin is.
        let untrusting = try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "reverse", "upstream": upstream]]])
        defer { untrusting.stop() }
        let refused = try curlDirect(["-i", "http://127.0.0.1:\(untrusting.port)/json"])
        XCTAssertTrue(refused.text.hasPrefix("HTTP/1.1 502"), refused.text)
        XCTAssertNotNil(try waitForRecord(untrusting.logDirectory) { $0.contains("\"tlsFailed\"") })
    }

    func testSOCKS5InboundCarriesCurlForHTTPAndInterceptedHTTPS() throws {
        let pki = try TestPKI(in: work)
        let tlsOrigin = try OriginServer(tls: (pki.certificate, pki.key))
        let caDirectory = work.appendingPathComponent("ca").path
        let proxy = try TapwireProcess(config: [
            "listen": [["address": "127.0.0.1:0", "mode": "socks5"]],
            "tls": ["intercept": ["localhost"], "caDirectory": caDirectory, "upstreamCAFile": pki.caCertificate],
        ])
        defer { proxy.stop() }
        let socks = "127.0.0.1:\(proxy.port)"
        // Plain HTTP through the SOCKS CONNECT, the name resolved by the proxy.
        let plain = try curlDirect(["--socks5-hostname", socks, "http://localhost:\(origin.port)/json?via=socks"])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertTrue(plain.text.contains("12345678901234567890"), plain.text)
        // Parsed and recorded as after an HTTP CONNECT: an http record with the URL.
        let plainLine = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("via=socks") })
        XCTAssertTrue(plainLine.contains(#""kind":"http""#) && plainLine.contains(#""url":"http://localhost:\#(origin.port)/json?via=socks""#), plainLine)
        // HTTPS to an intercepted host: decrypted and recorded as an http record.
        let tls = try curlDirect(["--socks5-hostname", socks, "--cacert", "\(caDirectory)/ca.pem",
                                  "https://localhost:\(tlsOrigin.port)/json?tls=socks"])
        XCTAssertEqual(tls.status, 0, tls.stderr)
        XCTAssertTrue(tls.text.contains("12345678901234567890"), tls.text)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("tls=socks") })
        XCTAssertTrue(line.contains(#""url":"https://localhost:\#(tlsOrigin.port)/json?tls=socks""#), line)
        // A target nothing listens on: the SOCKS reply says so (curl reports it), and a record says why.
        let closed = try unusedLoopbackPort()
        let refused = try curlDirect(["--socks5-hostname", socks, "http://127.0.0.1:\(closed)/"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("127.0.0.1:\(closed)") && $0.contains("upstreamConnectFailed") })
    }

    func testSOCKS5UsersFileIsEnforced() throws {
        let users = work.appendingPathComponent("users")
        try Data("ada:s3cret\n".utf8).write(to: users)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: users.path)
        let proxy = try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "socks5", "users": users.path]]])
        defer { proxy.stop() }
        let url = "http://127.0.0.1:\(origin.port)/json"
        let ok = try curlDirect(["--socks5-hostname", "127.0.0.1:\(proxy.port)", "--proxy-user", "ada:s3cret", url])
        XCTAssertEqual(ok.status, 0, ok.stderr)
        XCTAssertTrue(ok.text.contains("12345678901234567890"))
        let wrong = try curlDirect(["--socks5-hostname", "127.0.0.1:\(proxy.port)", "--proxy-user", "ada:nope", url])
        XCTAssertNotEqual(wrong.status, 0)
        let none = try curlDirect(["--socks5-hostname", "127.0.0.1:\(proxy.port)", url])
        XCTAssertNotEqual(none.status, 0)
        // The password reaches no record and no output.
        proxy.stop()
        let logs = try logLines(proxy.logDirectory).joined()
        XCTAssertFalse(logs.contains("s3cret") || logs.contains("nope"))
        XCTAssertFalse((proxy.stderr.all + proxy.stdout.all).joined().contains("s3cret"))

        // Readable by others: refused at start with exit 2, naming the field.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: users.path)
        let config = work.appendingPathComponent("open.json")
        try JSONSerialization.data(withJSONObject: ["listen": [["address": "127.0.0.1:0", "mode": "socks5", "users": users.path]]])
            .write(to: config)
        let r = try runCommand(try tapwireBinary(), ["run", "--config", config.path], timeout: 20)
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("listen[0].users:"), r.stderr)
    }

    func testAccessAllowAppliesToSOCKSListeners() throws {
        let proxy = try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "socks5"]],
                                                "access": ["allow": ["10.0.0.0/8"]]])
        defer { proxy.stop() }
        let r = try curlDirect(["--socks5-hostname", "127.0.0.1:\(proxy.port)", "http://127.0.0.1:\(origin.port)/json"])
        XCTAssertNotEqual(r.status, 0, "a client outside access.allow is closed")
        XCTAssertFalse(r.text.contains("12345678901234567890"))
    }

    func testGitThroughSOCKS5() throws {
        // A bare repository served as static files (git's dumb HTTP), on loopback.
        let repo = work.appendingPathComponent("src")
        let env = ["HOME": work.path, "GIT_CONFIG_NOSYSTEM": "1", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        for args in [["init", "-q", "-b", "main", repo.path],
                     ["-C", repo.path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one"],
                     ["clone", "-q", "--bare", repo.path, work.appendingPathComponent("served/repo.git").path],
                     ["-C", work.appendingPathComponent("served/repo.git").path, "update-server-info"]] {
            let r = try runCommand("git", args, environment: env, timeout: 30)
            XCTAssertEqual(r.status, 0, "git \(args): \(r.stderr)")
        }
        let head = try runCommand("git", ["-C", repo.path, "rev-parse", "HEAD"], environment: env).text
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let port = try unusedLoopbackPort()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory",
                            work.appendingPathComponent("served").path, String(port)]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { server.terminate(); server.waitUntilExit() }
        XCTAssertTrue(eventually(timeout: 10, every: 0.05) {
            (try? curlDirect(["-o", "/dev/null", "http://127.0.0.1:\(port)/"], timeout: 2).status) == 0
        })

        let proxy = try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "socks5"]]])
        defer { proxy.stop() }
        var gitEnv = env
        gitEnv["ALL_PROXY"] = "socks5h://127.0.0.1:\(proxy.port)"
        gitEnv["GIT_TERMINAL_PROMPT"] = "0"
        let r = try runCommand("git", ["ls-remote", "http://127.0.0.1:\(port)/repo.git"], environment: gitEnv, timeout: 30)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("\(head)\trefs/heads/main"), r.text)
        // It went through Tapwire: the tunnel (or the requests in it) is recorded.
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("127.0.0.1:\(port)") })
    }

    /// ssh through the SOCKS listener with `ProxyCommand` (OpenBSD nc's SOCKS5 client), to
    /// a real sshd on loopback: the server speaks first, so the connection is a tunnel record.
    func testSSHProxyCommandThroughSOCKS5() throws {
        func keygen(_ name: String) throws -> URL {
            let key = work.appendingPathComponent(name)
            let r = try runCommand("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key.path], timeout: 20)
            XCTAssertEqual(r.status, 0, r.stderr)
            return key
        }
        let hostKey = try keygen("host_key"), userKey = try keygen("user_key")
        let authorized = work.appendingPathComponent("authorized_keys")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: userKey.path + ".pub"), to: authorized)
        let sshPort = try unusedLoopbackPort()
        let sshdConfig = work.appendingPathComponent("sshd_config")
        try """
            Port \(sshPort)
            ListenAddress 127.0.0.1
            HostKey \(hostKey.path)
            AuthorizedKeysFile \(authorized.path)
            PasswordAuthentication no
            KbdInteractiveAuthentication no
            UsePAM no
            StrictModes no
            PidFile \(work.appendingPathComponent("sshd.pid").path)

            """.write(to: sshdConfig, atomically: true, encoding: .utf8)
        // Privilege separation wants its empty directory (a package install makes it at boot).
        try? FileManager.default.createDirectory(atPath: "/run/sshd", withIntermediateDirectories: true)
        // sshd detaches (no -D): a long-lived child of the test process would hold its pipes.
        let started = try runCommand("/usr/sbin/sshd", ["-f", sshdConfig.path], timeout: 20)
        XCTAssertEqual(started.status, 0, started.stderr)
        let pidFile = work.appendingPathComponent("sshd.pid")
        defer {
            if let text = try? String(contentsOf: pidFile, encoding: .utf8), let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                kill(pid, SIGTERM)
            }
        }
        XCTAssertTrue(eventually(timeout: 10, every: 0.05) { (try? RawClient(port: sshPort)) != nil }, "sshd did not start")

        let proxy = try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "socks5"]]])
        defer { proxy.stop() }
        let user = try runCommand("id", ["-un"]).text.trimmingCharacters(in: .whitespacesAndNewlines)
        let r = try runCommand("ssh", ["-F", "/dev/null", "-i", userKey.path, "-o", "IdentitiesOnly=yes",
                                       "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                                       "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10",
                                       "-o", "ProxyCommand=nc -X 5 -x 127.0.0.1:\(proxy.port) %h %p",
                                       "-p", String(sshPort), "\(user)@127.0.0.1", "echo", "through-socks"], timeout: 30)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.text.trimmingCharacters(in: .whitespacesAndNewlines), "through-socks")
        let record = try XCTUnwrap(try waitForRecord(proxy.logDirectory) { $0.contains("127.0.0.1:\(sshPort)") })
        XCTAssertTrue(record.contains(#""kind":"tunnel""#), record)
    }
}
