import Foundation
import XCTest

/// Whether something accepts TCP connections on a loopback port.
private func accepts(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { Foundation.close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    return withUnsafePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// A parent proxy process from Debian, stopped (SIGTERM, then SIGKILL) when released.
private final class ParentProcess {
    let process = Process()

    init(_ executable: String, _ arguments: [String], readyPort: Int) throws {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw NSError(domain: "parent", code: 1, userInfo: [NSLocalizedDescriptionKey:
                "\(executable) is missing: `make test-deps` installs it (squid, microsocks)"])
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard eventually(timeout: 20, every: 0.05, { accepts(port: readyPort) }) else {
            stop()
            throw NSError(domain: "parent", code: 2, userInfo: [NSLocalizedDescriptionKey: "\(executable) did not start"])
        }
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        if !eventually(timeout: 5, { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Tapwire behind a parent proxy: squid as the HTTP parent (one port open, one behind basic
/// auth checked by `basic_ncsa_auth`) and microsocks as a SOCKS5 parent with a username and
/// password. One of each serves the whole class.
final class ParentProxyEndToEndTests: XCTestCase {
    static let user = "alice"
    static let password = "pa55-Parent-Secret"
    /// What would show if the credentials leaked in encoded form (Proxy-Authorization).
    static var encodedCredentials: String { Data("\(user):\(password)".utf8).base64EncodedString() }

    private static var work: URL!
    private static var squid: ParentProcess?
    private static var socks: ParentProcess?
    private static var squidOpenPort = 0
    private static var squidAuthPort = 0
    private static var squidTLSPort = 0
    private static var socksPort = 0
    private static var pki: TestPKI!
    private static var origin: OriginServer?
    private static var tlsOrigin: OriginServer?
    private static var setUpError: Error?

    override class func setUp() {
        do {
            work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-parent-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            // squid started by root works as its `proxy` user: it writes its logs here.
            chmod(work.path, 0o777)
            pki = try TestPKI(in: work)
            origin = try OriginServer()
            tlsOrigin = try OriginServer(tls: (pki.certificate, pki.key))
            squidOpenPort = try unusedLoopbackPort()
            squidAuthPort = try unusedLoopbackPort()
            squidTLSPort = try unusedLoopbackPort()
            socksPort = try unusedLoopbackPort()
            squid = try startSquid()
            socks = try ParentProcess("/usr/bin/microsocks", ["-i", "127.0.0.1", "-p", String(socksPort), "-u", user, "-P", password],
                                      readyPort: socksPort)
        } catch {
            setUpError = error
        }
    }

    override class func tearDown() {
        squid = nil
        socks = nil
        origin = nil
        tlsOrigin = nil
        if let work { try? FileManager.default.removeItem(at: work) }
    }

    override func setUpWithError() throws {
        if let error = Self.setUpError { throw error }
    }

    private static func startSquid() throws -> ParentProcess {
        let d = work.path
        // basic_ncsa_auth reads crypt(3) hashes; openssl makes an MD5-crypt one.
        let hash = try runCommand("openssl", ["passwd", "-1", password])
        guard hash.status == 0 else { throw NSError(domain: "openssl", code: 1) }
        let passwd = work.appendingPathComponent("squid.passwd")
        try Data("\(user):\(hash.text.trimmingCharacters(in: .whitespacesAndNewlines))\n".utf8).write(to: passwd)
        chmod(passwd.path, 0o644)
        // The https port shows the origin's certificate (for 127.0.0.1), readable by squid's user.
        chmod(pki.key, 0o644)
        let conf = """
        http_port 127.0.0.1:\(squidOpenPort)
        http_port 127.0.0.1:\(squidAuthPort)
        https_port 127.0.0.1:\(squidTLSPort) tls-cert=\(pki.certificate) tls-key=\(pki.key)
        pid_filename \(d)/squid.pid
        access_log stdio:\(d)/squid-access.log
        buffered_logs off
        strip_query_terms off
        cache_log \(d)/squid-cache.log
        cache_store_log none
        coredump_dir \(d)
        cache deny all
        pinger_enable off
        shutdown_lifetime 0 seconds
        visible_hostname tapwire-test-parent
        auth_param basic program /usr/lib/squid/basic_ncsa_auth \(passwd.path)
        auth_param basic realm tapwire-test
        acl authport localport \(squidAuthPort)
        acl authed proxy_auth REQUIRED
        http_access deny authport !authed
        http_access allow all
        """
        let confURL = work.appendingPathComponent("squid.conf")
        try Data(conf.utf8).write(to: confURL)
        // -n: a service name of its own, so its shared memory and pid never meet another squid's.
        return try ParentProcess("/usr/sbin/squid", ["-N", "-n", "tapwire\(getpid())", "-f", confURL.path], readyPort: squidAuthPort)
    }

    // MARK: helpers

    private var originPort: Int { Self.origin?.port ?? 0 }
    private var tlsOriginPort: Int { Self.tlsOrigin?.port ?? 0 }

    private func tapwire(proxy: String?, credentialsFile: String? = nil, noProxy: [String]? = [], intercept: Bool = false,
                         extra: [String: Any] = [:]) throws -> TapwireProcess {
        var upstream: [String: Any] = ["proxy": proxy as Any? ?? NSNull(), "connectTimeout": 5]
        if let noProxy { upstream["noProxy"] = noProxy }
        if let credentialsFile { upstream["proxyCredentialsFile"] = credentialsFile }
        var config = extra
        config["upstream"] = upstream
        if intercept {
            config["tls"] = ["intercept": ["127.0.0.1"], "caDirectory": Self.work.appendingPathComponent("tapwire-ca").path,
                             "upstreamCAFile": Self.pki.caCertificate]
        }
        return try TapwireProcess(config: config)
    }

    private var tapwireCA: String { Self.work.appendingPathComponent("tapwire-ca/ca.pem").path }

    private func record(_ proxy: TapwireProcess, _ predicate: @escaping (String) -> Bool) throws -> [String: Any] {
        let line = try XCTUnwrap(try waitForRecord(proxy.logDirectory, predicate), "no record")
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    private func metrics(_ record: [String: Any]) -> [String: Any] { record["metrics"] as? [String: Any] ?? [:] }
    private func errorCode(_ record: [String: Any]) -> String? { (record["error"] as? [String: Any])?["code"] as? String }

    /// The credentials appear nowhere the proxy writes: not in /metrics, no log file,
    /// stdout or stderr line.
    private func assertNoCredentials(_ proxy: TapwireProcess, file: StaticString = #filePath, line: UInt = #line) throws {
        let metricsText = try runCommand("curl", ["-sS", "--noproxy", "*", "\(proxy.proxyURL)/metrics"]).text
        XCTAssertTrue(metricsText.contains("tapwire_transport_errors_total{code=\"upstreamProxyAuthFailed\"}"), metricsText,
                      file: file, line: line)
        proxy.stop()
        var texts = proxy.stdout.all + proxy.stderr.all + [metricsText]
        for name in try FileManager.default.contentsOfDirectory(atPath: proxy.logDirectory.path) {
            let url = proxy.logDirectory.appendingPathComponent(name)
            texts.append(String(decoding: try logFileContents(url), as: UTF8.self))
        }
        XCTAssertFalse(texts.isEmpty, file: file, line: line)
        for text in texts {
            XCTAssertFalse(text.contains(Self.password), "the password leaked: \(text.prefix(300))", file: file, line: line)
            XCTAssertFalse(text.contains(Self.encodedCredentials), "the encoded credentials leaked", file: file, line: line)
        }
    }

    /// Rewrites the running proxy's config with `parent` (noProxy empty) and sends SIGHUP;
    /// returns once the proxy says new connections take it.
    private func reload(_ proxy: TapwireProcess, parent: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = proxy.workDirectory.appendingPathComponent("tapwire.json")
        var config = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        config["upstream"] = ["proxy": parent, "noProxy": []]
        try JSONSerialization.data(withJSONObject: config).write(to: url)
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("new upstream connections go through the parent proxy \(parent)") },
                        file: file, line: line)
    }

    private func squidLog() -> String {
        (try? String(contentsOf: Self.work.appendingPathComponent("squid-access.log"), encoding: .utf8)) ?? ""
    }

    // MARK: an HTTP parent

    func testPlainConnectAndInterceptedHTTPSThroughSquidWithBasicAuth() throws {
        let via = "http://127.0.0.1:\(Self.squidAuthPort)"
        let proxy = try tapwire(proxy: "http://\(Self.user):\(Self.password)@127.0.0.1:\(Self.squidAuthPort)", intercept: true)
        let plain = try curlViaProxy(proxy.proxyURL, ["http://127.0.0.1:\(originPort)/json?parent=plain"])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertTrue(plain.text.contains("hunter2"), plain.text)
        let plainRecord = try record(proxy) { $0.contains("parent=plain") }
        XCTAssertEqual(metrics(plainRecord)["via"] as? String, via)
        XCTAssertEqual(metrics(plainRecord)["upstream"] as? String, "127.0.0.1:\(originPort)")
        XCTAssertEqual((plainRecord["response"] as? [String: Any])?["status"] as? Int, 200)

        let intercepted = try curlViaProxy(proxy.proxyURL, ["--cacert", tapwireCA, "https://127.0.0.1:\(tlsOriginPort)/json?parent=tls"])
        XCTAssertEqual(intercepted.status, 0, intercepted.stderr)
        let tlsRecord = try record(proxy) { $0.contains("parent=tls") }
        XCTAssertEqual(metrics(tlsRecord)["via"] as? String, via)
        XCTAssertEqual((tlsRecord["request"] as? [String: Any])?["url"] as? String, "https://127.0.0.1:\(tlsOriginPort)/json?parent=tls")

        try assertNoCredentials(proxy)
        // squid saw both, under the user: the requests did go through it. It logs a
        // transaction when it ends, so the tunnel shows once the stop closed it.
        let plainLine = "GET http://127.0.0.1:\(originPort)/json?parent=plain \(Self.user)"
        let tunnelLine = "CONNECT 127.0.0.1:\(tlsOriginPort) \(Self.user)"
        XCTAssertTrue(eventually(timeout: 10, every: 0.05) { squidLog().contains(plainLine) && squidLog().contains(tunnelLine) },
                      squidLog())
    }

    func testTunnelsThroughSquidAndItsRefusalPassedOn() throws {
        let proxy = try tapwire(proxy: "http://127.0.0.1:\(Self.squidOpenPort)")
        let tunnelled = try curlViaProxy(proxy.proxyURL, ["--cacert", Self.pki.caCertificate, "https://127.0.0.1:\(tlsOriginPort)/json?t=1"])
        XCTAssertEqual(tunnelled.status, 0, tunnelled.stderr)
        let tunnel = try record(proxy) { $0.contains(#""kind":"tunnel""#) && $0.contains(":\(self.tlsOriginPort)\"") }
        XCTAssertEqual(tunnel["via"] as? String, "http://127.0.0.1:\(Self.squidOpenPort)")
        XCTAssertEqual(tunnel["status"] as? Int, 200)
        XCTAssertGreaterThan(tunnel["bytesFromUpstream"] as? Int ?? 0, 0)

        // Plain HTTP inside a CONNECT is decoded into exchanges, which go through the parent too.
        let decoded = try curlViaProxy(proxy.proxyURL, ["-p", "http://127.0.0.1:\(originPort)/json?inside=connect"])
        XCTAssertEqual(decoded.status, 0, decoded.stderr)
        XCTAssertEqual(metrics(try record(proxy) { $0.contains("inside=connect") })["via"] as? String, "http://127.0.0.1:\(Self.squidOpenPort)")

        // Nothing listens there: squid's own 503 page reaches the client as squid sent it.
        let closedPort = try unusedLoopbackPort()
        let refused = try curlViaProxy(proxy.proxyURL, ["-v", "-p", "http://127.0.0.1:\(closedPort)/"])
        XCTAssertTrue(refused.stderr.contains("HTTP/1.1 503"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("X-Squid-Error"), refused.stderr)
        let refusal = try record(proxy) { $0.contains("127.0.0.1:\(closedPort)") }
        XCTAssertEqual(refusal["status"] as? Int, 503)
        XCTAssertEqual(errorCode(refusal), "upstreamProxyFailed")

        // The same inside an intercepted TLS stream: the page answers an HTTP/1.1 request;
        // an HTTP/2 one gets a 502 naming the parent's status.
        let intercepting = try tapwire(proxy: "http://127.0.0.1:\(Self.squidOpenPort)", intercept: true)
        let h2 = try curlViaProxy(intercepting.proxyURL, ["--cacert", tapwireCA, "--http2", "-s", "-w", "\n%{http_version} %{http_code}",
                                                          "https://127.0.0.1:\(closedPort)/json?refused=h2"])
        XCTAssertTrue(h2.text.hasSuffix("\n2 502"), h2.text)
        XCTAssertTrue(h2.text.contains("503 Service Unavailable"), h2.text)
        let inside = try curlViaProxy(intercepting.proxyURL, ["--cacert", tapwireCA, "--http1.1", "-i",
                                                              "https://127.0.0.1:\(closedPort)/json?refused=tls"])
        XCTAssertTrue(inside.text.contains("\r\n\r\nHTTP/1.1 503 Service Unavailable\r\n"), inside.text)  // after our 200 to CONNECT
        XCTAssertTrue(inside.text.contains("X-Squid-Error"), inside.text)
        let insideRecord = try record(intercepting) { $0.contains("refused=tls") }
        XCTAssertEqual((insideRecord["response"] as? [String: Any])?["status"] as? Int, 503)
        XCTAssertEqual(errorCode(insideRecord), "upstreamProxyFailed")
    }

    func testWrongOrMissingCredentialsAre502WithUpstreamProxyAuthFailed() throws {
        for proxyURL in ["http://\(Self.user):wrong-\(Self.password)@127.0.0.1:\(Self.squidAuthPort)",
                         "http://127.0.0.1:\(Self.squidAuthPort)"] {
            let proxy = try tapwire(proxy: proxyURL, intercept: true)
            let plain = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(originPort)/json?auth=plain"])
            XCTAssertEqual(plain.text, "502")
            XCTAssertEqual(errorCode(try record(proxy) { $0.contains("auth=plain") }), "upstreamProxyAuthFailed")
            let tunnel = try curlViaProxy(proxy.proxyURL, ["-v", "-p", "http://localhost:\(originPort)/"])
            XCTAssertTrue(tunnel.stderr.contains("HTTP/1.1 502"), tunnel.stderr)
            XCTAssertFalse(tunnel.stderr.contains("HTTP/1.1 407"), "the parent's 407 is not the client's concern")
            XCTAssertEqual(errorCode(try record(proxy) { $0.contains("localhost:\(self.originPort)") }), "upstreamProxyAuthFailed")
            let intercepted = try curlViaProxy(proxy.proxyURL, ["--cacert", tapwireCA, "-o", "/dev/null", "-w", "%{http_code}",
                                                                "https://127.0.0.1:\(tlsOriginPort)/json?auth=tls"])
            XCTAssertEqual(intercepted.text, "502")
            XCTAssertEqual(errorCode(try record(proxy) { $0.contains("auth=tls") }), "upstreamProxyAuthFailed")
            try assertNoCredentials(proxy)
        }
    }

    func testAnHTTPSParentIsVerifiedAsAnOriginAndCarriesEverything() throws {
        let via = "https://127.0.0.1:\(Self.squidTLSPort)"
        // tls.upstreamCAFile (the test PKI's CA) vouches for the parent as for the origin.
        let proxy = try tapwire(proxy: via, intercept: true)
        let plain = try curlViaProxy(proxy.proxyURL, ["http://127.0.0.1:\(originPort)/json?tlsparent=plain"])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(metrics(try record(proxy) { $0.contains("tlsparent=plain") })["via"] as? String, via)
        // TLS with the origin inside TLS with the parent.
        let intercepted = try curlViaProxy(proxy.proxyURL, ["--cacert", tapwireCA, "https://127.0.0.1:\(tlsOriginPort)/json?tlsparent=tls"])
        XCTAssertEqual(intercepted.status, 0, intercepted.stderr)
        XCTAssertTrue(intercepted.text.contains("hunter2"), intercepted.text)
        XCTAssertEqual(metrics(try record(proxy) { $0.contains("tlsparent=tls") })["via"] as? String, via)
        // TLS to a host not intercepted (localhost): a blind tunnel.
        let tunnelled = try curlViaProxy(proxy.proxyURL, ["--cacert", Self.pki.caCertificate, "https://localhost:\(tlsOriginPort)/json?tlsparent=tunnel"])
        XCTAssertEqual(tunnelled.status, 0, tunnelled.stderr)
        XCTAssertEqual(try record(proxy) { $0.contains("\"target\":\"localhost:\(self.tlsOriginPort)\"") }["via"] as? String, via)

        // Without the test CA the parent's certificate is refused: the parent's failure.
        let untrusting = try tapwire(proxy: via)
        let refused = try curlViaProxy(untrusting.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}",
                                                             "http://127.0.0.1:\(originPort)/json?tlsparent=untrusted"])
        XCTAssertEqual(refused.text, "502")
        let failed = try record(untrusting) { $0.contains("tlsparent=untrusted") }
        XCTAssertEqual(errorCode(failed), "upstreamProxyFailed")
        let message = (failed["error"] as? [String: Any])?["message"] as? String ?? ""
        XCTAssertTrue(message.contains("TLS with the parent proxy \(via) failed"), message)
    }

    // MARK: parent down, noProxy, reload

    func testParentDownIsUpstreamProxyFailedAndNoProxyHostsGoDirectAndSIGHUPChangesTheParent() throws {
        let downPort = try unusedLoopbackPort()
        let proxy = try tapwire(proxy: "http://127.0.0.1:\(downPort)", noProxy: nil)
        // The default noProxy is loopback: the origin is reached direct, the dead parent unused.
        let direct = try curlViaProxy(proxy.proxyURL, ["http://127.0.0.1:\(originPort)/json?direct=1"])
        XCTAssertEqual(direct.status, 0, direct.stderr)
        XCTAssertTrue(metrics(try record(proxy) { $0.contains("direct=1") })["via"] is NSNull)
        let viaLocalhost = try curlViaProxy(proxy.proxyURL, ["-p", "http://localhost:\(originPort)/json?direct=2"])
        XCTAssertEqual(viaLocalhost.status, 0, viaLocalhost.stderr)

        // Only a host outside noProxy meets the dead parent: 502, the parent named.
        try reload(proxy, parent: "http://127.0.0.1:\(downPort)")
        let down = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(originPort)/json?down=1"])
        XCTAssertEqual(down.text, "502")
        let failed = try record(proxy) { $0.contains("down=1") }
        XCTAssertEqual(errorCode(failed), "upstreamProxyFailed")
        XCTAssertEqual(metrics(failed)["via"] as? String, "http://127.0.0.1:\(downPort)")
        let tunnel = try curlViaProxy(proxy.proxyURL, ["-v", "-p", "http://127.0.0.1:\(originPort)/"])
        XCTAssertTrue(tunnel.stderr.contains("HTTP/1.1 502"), tunnel.stderr)

        // A parent that works, applied by SIGHUP to new connections.
        try reload(proxy, parent: "http://127.0.0.1:\(Self.squidOpenPort)")
        let up = try curlViaProxy(proxy.proxyURL, ["http://127.0.0.1:\(originPort)/json?reloaded=1"])
        XCTAssertEqual(up.status, 0, up.stderr)
        XCTAssertEqual(metrics(try record(proxy) { $0.contains("reloaded=1") })["via"] as? String, "http://127.0.0.1:\(Self.squidOpenPort)")

        // The first https parent, brought by a reload: TLS with it is set up then, and
        // verifies it (this Tapwire does not trust the test CA, so the parent is refused).
        let tlsVia = "https://127.0.0.1:\(Self.squidTLSPort)"
        try reload(proxy, parent: tlsVia)
        let untrusted = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(originPort)/json?reloaded=2"])
        XCTAssertEqual(untrusted.text, "502")
        let refused = try record(proxy) { $0.contains("reloaded=2") }
        XCTAssertEqual(errorCode(refused), "upstreamProxyFailed")
        let message = (refused["error"] as? [String: Any])?["message"] as? String ?? ""
        XCTAssertTrue(message.contains("TLS with the parent proxy \(tlsVia) failed: certificate verify failed")
                      || message.contains("TLS with the parent proxy \(tlsVia) failed: unable to get local issuer certificate"), message)
    }

    /// A parent that takes the connection and never answers: `upstream.connectTimeout`
    /// covers its handshake too, and the client gets 504.
    func testASilentParentRunsOutTheConnectTimeout() throws {
        let silent = try SilentListener()
        let silentPort = silent.port
        for parent in ["http://127.0.0.1:\(silentPort)", "socks5://127.0.0.1:\(silentPort)"] {
            let proxy = try TapwireProcess(config: ["upstream": ["proxy": parent, "noProxy": [], "connectTimeout": 0.3]])
            let answer = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}", "-p", "http://127.0.0.1:\(originPort)/"])
            XCTAssertTrue(answer.stderr.contains("504") || answer.text.contains("504"), answer.stderr + answer.text)
            let timedOut = try record(proxy) { $0.contains("127.0.0.1:\(self.originPort)") }
            XCTAssertEqual(errorCode(timedOut), "upstreamTimeout")
            let message = (timedOut["error"] as? [String: Any])?["message"] as? String ?? ""
            XCTAssertTrue(message.contains("through the parent proxy \(parent) timed out"), message)
        }
    }

    // MARK: a SOCKS5 parent

    func testPlainConnectAndInterceptedHTTPSThroughSOCKS5WithACredentialsFile() throws {
        let file = Self.work.appendingPathComponent("socks-\(UUID().uuidString.prefix(6)).cred")
        try Data("\(Self.user):\(Self.password)\n".utf8).write(to: file)
        chmod(file.path, 0o600)
        let via = "socks5://127.0.0.1:\(Self.socksPort)"
        let proxy = try tapwire(proxy: via, credentialsFile: file.path, intercept: true)
        let plain = try curlViaProxy(proxy.proxyURL, ["http://127.0.0.1:\(originPort)/json?socks=plain"])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        let plainRecord = try record(proxy) { $0.contains("socks=plain") }
        XCTAssertEqual(metrics(plainRecord)["via"] as? String, via)
        XCTAssertEqual(metrics(plainRecord)["upstream"] as? String, "127.0.0.1:\(originPort)")

        let intercepted = try curlViaProxy(proxy.proxyURL, ["--cacert", tapwireCA, "https://127.0.0.1:\(tlsOriginPort)/json?socks=tls"])
        XCTAssertEqual(intercepted.status, 0, intercepted.stderr)
        XCTAssertEqual(metrics(try record(proxy) { $0.contains("socks=tls") })["via"] as? String, via)

        // A name the parent resolves (socks5h), through a blind tunnel.
        let tunnelled = try curlViaProxy(proxy.proxyURL, ["--cacert", Self.pki.caCertificate, "https://localhost:\(tlsOriginPort)/json?socks=tunnel"])
        XCTAssertEqual(tunnelled.status, 0, tunnelled.stderr)
        let tunnel = try record(proxy) { $0.contains("\"target\":\"localhost:\(self.tlsOriginPort)\"") }
        XCTAssertEqual(tunnel["via"] as? String, via)
        XCTAssertEqual(tunnel["status"] as? Int, 200)

        // The origin refuses: the parent's reply 5, the origin's failure.
        let closedPort = try unusedLoopbackPort()
        let refused = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(closedPort)/"])
        XCTAssertEqual(refused.text, "502")
        XCTAssertEqual(errorCode(try record(proxy) { $0.contains("127.0.0.1:\(closedPort)") }), "upstreamConnectFailed")
        try assertNoCredentials(proxy)
    }

    func testWrongSOCKS5CredentialsAreUpstreamProxyAuthFailed() throws {
        let proxy = try tapwire(proxy: "socks5://\(Self.user):not-\(Self.password)@127.0.0.1:\(Self.socksPort)")
        let plain = try curlViaProxy(proxy.proxyURL, ["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(originPort)/json?socksauth=1"])
        XCTAssertEqual(plain.text, "502")
        XCTAssertEqual(errorCode(try record(proxy) { $0.contains("socksauth=1") }), "upstreamProxyAuthFailed")
        let tunnel = try curlViaProxy(proxy.proxyURL, ["-v", "-p", "http://127.0.0.1:\(originPort)/"])
        XCTAssertTrue(tunnel.stderr.contains("HTTP/1.1 502"), tunnel.stderr)
        try assertNoCredentials(proxy)
    }

    func testACredentialsFileOthersCanReadStopsTheStartWithExit2() throws {
        let file = Self.work.appendingPathComponent("open.cred")
        try Data("\(Self.user):\(Self.password)\n".utf8).write(to: file)
        chmod(file.path, 0o644)
        let config = Self.work.appendingPathComponent("open-cred.json")
        try JSONSerialization.data(withJSONObject: ["upstream": ["proxy": "socks5://127.0.0.1:\(Self.socksPort)",
                                                                 "proxyCredentialsFile": file.path],
                                                    "listen": ["127.0.0.1:0"],
                                                    "log": ["directory": Self.work.appendingPathComponent("never").path]])
            .write(to: config)
        let run = try runCommand(try tapwireBinary(), ["run", "--config", config.path], timeout: 20)
        XCTAssertEqual(run.status, 2, run.stderr)
        XCTAssertTrue(run.stderr.contains("upstream.proxyCredentialsFile: \(file.path) is readable by group or others"), run.stderr)
        XCTAssertFalse(run.stderr.contains(Self.password) || run.text.contains(Self.password))
    }
}
