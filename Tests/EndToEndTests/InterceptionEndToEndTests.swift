import Foundation
import XCTest

/// A throwaway CA and a server certificate for 127.0.0.1, made with the openssl CLI,
/// standing in for an origin's own PKI.
struct TestPKI {
    let directory: URL
    var caCertificate: String { directory.appendingPathComponent("origin-ca.pem").path }
    var certificate: String { directory.appendingPathComponent("origin.pem").path }
    var key: String { directory.appendingPathComponent("origin.key").path }

    init(in directory: URL) throws {
        self.directory = directory
        let d = directory.path
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
             "-subj", "/CN=Origin Test CA", "-keyout", "\(d)/origin-ca.key", "-out", "\(d)/origin-ca.pem",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"],
            ["req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "\(d)/origin.key", "-out", "\(d)/origin.csr"],
        ]
        for s in steps {
            let r = try runCommand("openssl", s)
            guard r.status == 0 else { throw XCTSkip("openssl failed: \(r.stderr)") }
        }
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n".utf8)
            .write(to: directory.appendingPathComponent("ext.cnf"))
        let sign = try runCommand("openssl", ["x509", "-req", "-in", "\(d)/origin.csr", "-CA", "\(d)/origin-ca.pem",
                                              "-CAkey", "\(d)/origin-ca.key", "-CAcreateserial", "-days", "2",
                                              "-extfile", "\(d)/ext.cnf", "-out", "\(d)/origin.pem"])
        guard sign.status == 0 else { throw XCTSkip("openssl failed: \(sign.stderr)") }
    }
}

/// `tapwire ca export` for a CA in `caDirectory` (made on first use), written to
/// `directory/tapwire-ca.pem` for clients to trust.
func exportTapwireCA(caDirectory: String, into directory: URL, file: StaticString = #filePath, line: UInt = #line) throws -> URL {
    let cfg = directory.appendingPathComponent("export.json")
    try JSONSerialization.data(withJSONObject: ["tls": ["caDirectory": caDirectory]]).write(to: cfg)
    let r = try runCommand(try tapwireBinary(), ["ca", "export", "--config", cfg.path])
    XCTAssertEqual(r.status, 0, r.stderr, file: file, line: line)
    XCTAssertTrue(r.text.hasPrefix("-----BEGIN CERTIFICATE-----"), r.text, file: file, line: line)
    XCTAssertTrue(r.stderr.contains("update-ca-certificates"), r.stderr, file: file, line: line)
    let pem = directory.appendingPathComponent("tapwire-ca.pem")
    try r.stdout.write(to: pem)
    return pem
}

final class InterceptionEndToEndTests: XCTestCase {
    var work: URL!
    var pki: TestPKI!
    var origin: OriginServer!

    override func setUpWithError() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        pki = try TestPKI(in: work)
        origin = try OriginServer(tls: (pki.certificate, pki.key))
    }

    override func tearDown() {
        origin = nil
        try? FileManager.default.removeItem(at: work)
    }

    private var caDirectory: String { work.appendingPathComponent("tapwire-ca").path }

    private func exportCA() throws -> URL { try exportTapwireCA(caDirectory: caDirectory, into: work) }

    func testInterceptedHTTPSIsDecodedAndLogged() throws {
        let tapwireCA = try exportCA()
        let attrs = try FileManager.default.attributesOfItem(atPath: caDirectory + "/ca.key")
        XCTAssertEqual((attrs[.posixPermissions] as? NSNumber)?.intValue, 0o600, "the CA key must be private")
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory,
                                                        "upstreamCAFile": pki.caCertificate]])
        // curl trusts only Tapwire's CA, and the origin is reached through the proxy.
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--cacert", tapwireCA.path, "-H", "Authorization: Bearer TLS-SECRET",
                                                  "https://127.0.0.1:\(origin.port)/json?tls=1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("\"hunter2\""), r.text)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("tls=1") })
        XCTAssertTrue(line.contains(#""url":"https://127.0.0.1:\#(origin.port)/json?tls=1""#), line)
        XCTAssertTrue(line.contains(#""result":{"success":{"id":12345678901234567890"#), line)
        XCTAssertFalse(line.contains("TLS-SECRET"))
        let metrics = try XCTUnwrap(parseRecord(line)["metrics"] as? [String: Any])
        XCTAssertNotNil(metrics["tls"] as? Double, "no TLS handshake time: \(line)")
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("HTTPS interception for 127.0.0.1") })
    }

    /// `tapwire replay` of a decrypted exchange: CONNECT, TLS checked against Tapwire's CA, the
    /// request inside with the replay field, so the proxy records it; refused when the config
    /// would tunnel the host blind; `--direct` is TLS to the origin and leaves no record.
    func testInterceptedHTTPSIsReplayedThroughTheProxyAndDirectly() throws {
        let tapwireCA = try exportCA()
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory,
                                                        "upstreamCAFile": pki.caCertificate]])
        let url = "https://127.0.0.1:\(origin.port)/inspect?replay=1"
        let sent = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "--cacert", tapwireCA.path,
                                                     "-H", "Content-Type: application/json", "--data-binary", #"{"n":1.50}"#, url])
        XCTAssertEqual(sent.status, 0, sent.stderr)
        let first = try parseRecord(try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("replay=1") }))
        let id = try XCTUnwrap(first["id"] as? String)
        let bin = try tapwireBinary()
        let config = proxy.workDirectory.appendingPathComponent("tapwire.json").path
        let dir = proxy.logDirectory.path

        let replay = try runCommand(bin, ["replay", id, "--config", config, "--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(replay.status, 0, replay.stderr)
        XCTAssertEqual(replay.text, "\(id) POST \(url) → 200 OK\n")
        let copyLine = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(#""replayOf":"\#(id)""#) })
        let copy = try parseRecord(copyLine)
        XCTAssertEqual((copy["request"] as? [String: Any])?["url"] as? String, url, copyLine)
        func inspected(_ record: [String: Any]) throws -> (method: String, target: String, headers: [String], body: String?) {
            let value = try XCTUnwrap((record["result"] as? [String: Any])?["success"] as? [String: Any], "\(record)")
            let headers = try XCTUnwrap(value["headers"] as? [[String]]).map { "\($0[0].lowercased()): \($0[1])" }.sorted()
            return (try XCTUnwrap(value["method"] as? String), try XCTUnwrap(value["target"] as? String), headers,
                    Data(base64Encoded: try XCTUnwrap(value["body"] as? String)).map { String(decoding: $0, as: UTF8.self) })
        }
        let now = try inspected(copy), then = try inspected(first)
        XCTAssertEqual(now.method, "POST")
        XCTAssertEqual(now.target, then.target)
        XCTAssertEqual(now.body, #"{"n":1.50}"#)
        XCTAssertFalse(now.headers.contains { $0.hasPrefix("x-tapwire-replay-of") }, "the origin never sees it: \(now.headers)")
        XCTAssertEqual(now.headers.filter { !$0.hasPrefix("connection:") }, then.headers.filter { !$0.hasPrefix("connection:") })

        // The proxy's leaf must chain to the config's CA: another CA (a proxy that is not this
        // Tapwire) fails the handshake before the request is sent.
        let otherCA = work.appendingPathComponent("other-ca").path
        let otherConfig = work.appendingPathComponent("other.json")
        try JSONSerialization.data(withJSONObject: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": otherCA,
                                                            "upstreamCAFile": pki.caCertificate]]).write(to: otherConfig)
        XCTAssertEqual(try runCommand(bin, ["ca", "export", "--config", otherConfig.path]).status, 0)
        let mistrusted = try runCommand(bin, ["replay", id, "--config", otherConfig.path, "--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(mistrusted.status, 1, mistrusted.stderr)
        XCTAssertTrue(mistrusted.stderr.contains("replay \(id) failed") && mistrusted.stderr.contains("certificate not trusted"), mistrusted.stderr)
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("clientTLSFailed") }, "the proxy saw the handshake refused")
        XCTAssertEqual(try logLines(proxy.logDirectory).filter { $0.contains(#""replayOf""#) }.count, 1,
                       "the request went out although the proxy was not trusted")

        // The same log under a config that tunnels 127.0.0.1 blind: refused, nothing sent.
        let blindConfig = work.appendingPathComponent("blind.json")
        try JSONSerialization.data(withJSONObject: ["tls": ["intercept": ["*"], "ignore": ["127.0.0.1"], "caDirectory": caDirectory,
                                                            "upstreamCAFile": pki.caCertificate]]).write(to: blindConfig)
        let linesBefore = try logLines(proxy.logDirectory).count
        let refused = try runCommand(bin, ["replay", id, "--config", blindConfig.path, "--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(refused.status, 1, refused.stderr)
        XCTAssertEqual(refused.text, "")
        XCTAssertTrue(refused.stderr.hasPrefix("tapwire: replay \(id) refused: the proxy does not decrypt 127.0.0.1"), refused.stderr)
        XCTAssertTrue(refused.stderr.contains("--direct"), refused.stderr)

        // Straight to the origin over TLS (it speaks nothing else), trusted through
        // tls.upstreamCAFile; the proxy sees nothing, so the log does not grow.
        let direct = try runCommand(bin, ["replay", id, "--direct", "--config", blindConfig.path, "--log-dir", dir])
        XCTAssertEqual(direct.status, 0, direct.stderr)
        XCTAssertEqual(direct.text, "\(id) POST \(url) → 200 OK\n")
        // Without the origin's CA the direct replay fails verification.
        let untrustedConfig = work.appendingPathComponent("untrusted.json")
        try JSONSerialization.data(withJSONObject: ["tls": ["caDirectory": caDirectory]]).write(to: untrustedConfig)
        let untrusted = try runCommand(bin, ["replay", id, "--direct", "--config", untrustedConfig.path, "--log-dir", dir])
        XCTAssertEqual(untrusted.status, 1, untrusted.stderr)
        XCTAssertTrue(untrusted.stderr.contains("replay \(id) failed") && untrusted.stderr.contains("certificate"), untrusted.stderr)
        XCTAssertEqual(try logLines(proxy.logDirectory).count, linesBefore, "a refused or direct replay went through the proxy")
    }

    func testSecondStartReusesTheCA() throws {
        let first = try String(contentsOf: try exportCA(), encoding: .utf8)
        let second = try String(contentsOf: try exportCA(), encoding: .utf8)
        XCTAssertEqual(first, second)
    }

    func testHostsOutsideInterceptStayBlindTunnels() throws {
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["*.example.test"], "caDirectory": caDirectory]])
        // The client sees the origin's own certificate, so it needs the origin's CA.
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--cacert", pki.caCertificate, "https://127.0.0.1:\(origin.port)/json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("hunter2"))
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(#""kind":"tunnel""#) })
        XCTAssertFalse(line.contains("hunter2"))
    }

    func testUntrustedOriginGets502AndATLSErrorRecord() throws {
        let tapwireCA = try exportCA()
        // No upstreamCAFile: the origin's CA is not trusted.
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory]])
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--cacert", tapwireCA.path, "-w", "\n%{http_code}",
                                                  "https://127.0.0.1:\(origin.port)/json?untrusted=1"])
        XCTAssertTrue(r.text.hasSuffix("502"), r.text)
        XCTAssertTrue(r.text.contains("certificate"), r.text)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("untrusted=1") })
        XCTAssertTrue(line.contains(#""code":"tlsFailed""#), line)
    }

    /// Not every CONNECT carries TLS (plain HTTP to port 80, SSH): plain HTTP is decoded as
    /// exchanges to http://host:port, anything else is a blind tunnel, never a failed handshake.
    func testPlainTrafficThroughAnInterceptedConnectIsDecodedOrTunnelled() throws {
        let plain = try OriginServer()
        _ = try exportCA()
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory]])
        let c = try RawClient(port: proxy.port)
        c.send("CONNECT 127.0.0.1:\(plain.port) HTTP/1.1\r\nHost: 127.0.0.1:\(plain.port)\r\n\r\n")
        XCTAssertTrue(c.read(timeout: 5) { $0.contains("\r\n\r\n") }.text.hasPrefix("HTTP/1.1 200"))
        c.send("GET /json HTTP/1.1\r\nHost: 127.0.0.1:\(plain.port)\r\nConnection: close\r\n\r\n")
        let answer = c.read(timeout: 5) { $0.contains("hunter2") }.text
        XCTAssertTrue(answer.hasPrefix("HTTP/1.1 200 OK"), answer)
        XCTAssertTrue(answer.contains("hunter2"), answer)
        c.shutdownWrite()
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(#""kind":"http""#) })
        XCTAssertTrue(line.contains(#""url":"http://127.0.0.1:\#(plain.port)/json""#), line)

        let ssh = try RawClient(port: proxy.port)
        ssh.send("CONNECT 127.0.0.1:\(plain.port) HTTP/1.1\r\nHost: 127.0.0.1:\(plain.port)\r\n\r\n")
        XCTAssertTrue(ssh.read(timeout: 5) { $0.contains("\r\n\r\n") }.text.hasPrefix("HTTP/1.1 200"))
        ssh.send("SSH-2.0-test\r\n")
        ssh.shutdownWrite()
        _ = ssh.read(timeout: 5)
        let tunnel = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(#""kind":"tunnel""#) })
        XCTAssertFalse(tunnel.contains("clientTLSFailed"), tunnel)
        XCTAssertTrue(tunnel.contains(#""bytesFromClient":14"#), tunnel)
    }

    /// A trailing dot names the same host, so it must not escape `tls.ignore`.
    func testIgnoredHostWithATrailingDotStaysABlindTunnel() throws {
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["*"], "ignore": ["localhost"], "caDirectory": caDirectory]])
        // Trusting only the origin's CA: a decrypted connection would fail verification.
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--cacert", pki.caCertificate, "https://localhost.:\(origin.port)/json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("hunter2"), r.text)
    }

    /// CONNECT names one host, SNI another: a certificate for the SNI name would vouch for a
    /// host Tapwire never verified (it connects to the CONNECT host), so the handshake is refused.
    func testSNIOtherThanTheConnectHostIsRefused() throws {
        let tapwireCA = try exportCA()
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["*"], "caDirectory": caDirectory,
                                                        "upstreamCAFile": pki.caCertificate]])
        // curl CONNECTs to 127.0.0.1 but sends SNI bank.example and checks that name.
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--cacert", tapwireCA.path,
                                                  "--connect-to", "bank.example:443:127.0.0.1:\(origin.port)",
                                                  "https://bank.example/json"])
        XCTAssertNotEqual(r.status, 0, "the handshake must fail: \(r.text)")
        XCTAssertFalse(r.text.contains("\"ok\":true"), r.text)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("clientTLSFailed") })
        XCTAssertTrue(line.contains("bank.example"), line)
        XCTAssertTrue(line.contains("\"target\":\"127.0.0.1:\(origin.port)\""), line)
    }

    /// A client that stalls in the handshake leaves a record too.
    func testAStalledClientHandshakeLeavesARecord() throws {
        _ = try exportCA()
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory],
                                                "limits": ["clientIdleTimeout": 1]])
        let c = try RawClient(port: proxy.port)
        c.send("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\n\r\n")
        XCTAssertTrue(c.read(timeout: 5) { $0.contains("\r\n\r\n") }.text.hasPrefix("HTTP/1.1 200"))
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("clientTLSFailed") })
        XCTAssertTrue(line.contains("nothing sent within"), line)
    }

    func testClientRejectingTheCertificateLeavesARecord() throws {
        _ = try exportCA()
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory,
                                                        "upstreamCAFile": pki.caCertificate]])
        // curl trusts the origin's CA only: Tapwire's leaf is refused, as a pinning client would.
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--cacert", pki.caCertificate, "https://127.0.0.1:\(origin.port)/json"])
        XCTAssertEqual(r.status, 60, r.stderr)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("clientTLSFailed") })
        XCTAssertTrue(line.contains(#""kind":"tunnel""#), line)
    }
}
