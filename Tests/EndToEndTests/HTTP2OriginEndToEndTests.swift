import Foundation
import XCTest

/// HTTP/2 to origins: Tapwire offers `h2` and `http/1.1` to an HTTPS origin and speaks what
/// it picks, whatever the client spoke. The h2 origin is Debian's `nghttpd` (nghttp2-server);
/// the HTTP/1.1-only origin is the tests' own `OriginServer`.
final class HTTP2OriginEndToEndTests: XCTestCase {
    var work: URL!
    var pki: TestPKI!
    var nghttpd: Process?
    var h2Port = 0

    override func setUpWithError() throws {
        guard let found = try? runCommand("/bin/sh", ["-c", "command -v nghttpd"]), found.status == 0 else {
            throw XCTSkip("these tests need nghttpd (Debian nghttp2-server; make test-deps installs it)")
        }
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-h2o-\(UUID().uuidString.prefix(8))")
        let docroot = work.appendingPathComponent("htdocs")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        try #"{"origin":"h2","id":42}"#.write(to: docroot.appendingPathComponent("data.json"), atomically: true, encoding: .utf8)
        pki = try TestPKI(in: work)
        h2Port = try unusedLoopbackPort()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: found.text.trimmingCharacters(in: .whitespacesAndNewlines))
        p.arguments = ["-a", "127.0.0.1", "-d", docroot.path, "--echo-upload", "--trailer=x-origin-trailer: present",
                       String(h2Port), pki.key, pki.certificate]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        nghttpd = p
        let port = h2Port
        XCTAssertTrue(eventually { (try? RawClient(port: port)) != nil }, "nghttpd did not listen")
    }

    override func tearDown() {
        if let nghttpd, nghttpd.isRunning { nghttpd.terminate(); nghttpd.waitUntilExit() }
        if let work { try? FileManager.default.removeItem(at: work) }
    }

    private func startProxy(upstream: [String: Any] = [:]) throws -> (TapwireProcess, String) {
        let caDirectory = work.appendingPathComponent("tapwire-ca").path
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory,
                                                        "upstreamCAFile": pki.caCertificate, "http2": true],
                                                "upstream": upstream])
        let cfg = work.appendingPathComponent("export.json")
        try JSONSerialization.data(withJSONObject: ["tls": ["caDirectory": caDirectory]]).write(to: cfg)
        let exported = try runCommand(try tapwireBinary(), ["ca", "export", "--config", cfg.path])
        XCTAssertEqual(exported.status, 0, exported.stderr)
        let pem = work.appendingPathComponent("tapwire-ca.pem")
        try exported.stdout.write(to: pem)
        return (proxy, pem.path)
    }

    private func line(_ proxy: TapwireProcess, _ marker: String) throws -> String {
        try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(marker) }, "no record for \(marker)")
    }

    private func record(_ proxy: TapwireProcess, _ marker: String) throws -> [String: Any] {
        try parseRecord(try line(proxy, marker))
    }

    private func versions(_ record: [String: Any]) -> (client: String?, origin: String?) {
        let request = record["request"] as? [String: Any]
        let metrics = record["metrics"] as? [String: Any]
        return (request?["httpVersion"] as? String, metrics?["upstreamHTTPVersion"] as? String)
    }

    func testBothClientVersionsReachAnH2Origin() throws {
        let (proxy, ca) = try startProxy()
        for (flag, marker, clientVersion) in [("--http2", "via=h2", "HTTP/2"), ("--http1.1", "via=h1", "HTTP/1.1")] {
            let r = try curlViaProxy(proxy.proxyURL, ["-s", "-i", flag, "--cacert", ca,
                                                      "https://127.0.0.1:\(h2Port)/data.json?\(marker)"])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertTrue(r.text.contains(#"{"origin":"h2","id":42}"#), r.text)
            let rec = try record(proxy, marker)
            XCTAssertEqual(versions(rec).client, clientVersion)
            XCTAssertEqual(versions(rec).origin, "HTTP/2")
            let response = try XCTUnwrap(rec["response"] as? [String: Any])
            XCTAssertEqual(response["status"] as? Int, 200)
            XCTAssertEqual(response["httpVersion"] as? String, "HTTP/2")
            // The origin's trailer went through as a chunked trailer and is recorded.
            XCTAssertTrue(try line(proxy, marker).contains(#""trailers":[["x-origin-trailer","present"]]"#), "\(rec)")
            // The record has the origin's own fields: its Content-Length, not the chunked
            // framing the HTTP/1.1 client was sent because of the trailer.
            let names = (response["headers"] as? [[String]] ?? []).compactMap { $0.first?.lowercased() }
            XCTAssertFalse(names.contains("transfer-encoding"), "\(names)")
            XCTAssertTrue(names.contains("content-length"), "\(names)")
            XCTAssertTrue(names.contains("trailer"), "\(names)")
        }
    }

    /// HTTP/2 on both sides with no interception: h2c prior knowledge on a reverse listener
    /// whose upstream is the h2 origin, several streams at once.
    func testH2CReverseListenerToAnH2Origin() throws {
        let proxy = try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "reverse",
                                                            "upstream": "https://127.0.0.1:\(h2Port)", "protocols": ["http/1.1", "h2c"]]],
                                                "tls": ["upstreamCAFile": pki.caCertificate]])
        defer { proxy.stop() }
        let urls = (1...4).map { "http://127.0.0.1:\(proxy.port)/data.json?both=\($0)" }
        // Streams of one connection (nghttp), one at a time (curl).
        let r = try runCommand("nghttp", ["-t", "20"] + urls, timeout: 25)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(occurrences(of: #""origin":"h2""#, in: r.text), 4, r.text)
        let one = try curlDirect(["--http2-prior-knowledge", "-s", "http://127.0.0.1:\(proxy.port)/data.json?both=curl"])
        XCTAssertTrue(one.text.contains(#""origin":"h2""#), one.text)
        for i in 1...4 {
            let rec = try record(proxy, "both=\(i)")
            XCTAssertEqual(versions(rec).client, "HTTP/2")
            XCTAssertEqual(versions(rec).origin, "HTTP/2")
            XCTAssertEqual((rec["request"] as? [String: Any])?["url"] as? String, "https://127.0.0.1:\(h2Port)/data.json?both=\(i)")
        }
    }

    /// Later exchanges to the same origin open streams on the HTTP/2 connection already up
    /// (pooled per loop); the client's connection and version do not matter.
    func testExchangesShareThePooledH2Connection() throws {
        let (proxy, ca) = try startProxy()
        let urls = (1...3).map { "https://127.0.0.1:\(h2Port)/data.json?seq=\($0)" }
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--http1.1", "--cacert", ca] + urls)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(occurrences(of: #""origin":"h2""#, in: r.text), 3, r.text)
        let reused = try (1...3).map { i -> Bool? in
            let rec = try record(proxy, "seq=\(i)")
            XCTAssertEqual(versions(rec).origin, "HTTP/2")
            return (rec["metrics"] as? [String: Any])?["connectionReused"] as? Bool
        }
        XCTAssertEqual(reused, [false, true, true])
    }

    /// A pooled HTTP/2 origin connection without streams closes after `upstream.idleTimeout`;
    /// the next exchange connects anew.
    func testAnIdleH2ConnectionClosesAfterTheIdleTimeout() throws {
        let (proxy, ca) = try startProxy(upstream: ["idleTimeout": 1])
        for i in 1...2 {
            if i == 2 { Thread.sleep(forTimeInterval: 2) }
            let r = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca,
                                                      "https://127.0.0.1:\(h2Port)/data.json?idle=\(i)"])
            XCTAssertEqual(r.status, 0, r.stderr)
            let rec = try record(proxy, "idle=\(i)")
            XCTAssertEqual((rec["metrics"] as? [String: Any])?["connectionReused"] as? Bool, false, "\(rec)")
        }
        XCTAssertEqual(proxy.stop(), 0)
    }

    /// A reload that sends origins through a parent proxy retires the pooled HTTP/2 origin
    /// connection made before it, even one with a stream in flight during the reload: once
    /// that stream ends, the connection is not offered to the pool again, so the next
    /// exchange takes the new route (here a parent that is down: 502, `upstreamProxyFailed`)
    /// instead of the old direct connection.
    func testAReloadThatChangesTheRouteRetiresThePooledH2Connection() throws {
        try Data(count: 6 << 20).write(to: work.appendingPathComponent("htdocs/big.bin"))
        let (proxy, ca) = try startProxy()
        let before = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "https://127.0.0.1:\(h2Port)/data.json?route=before"])
        XCTAssertEqual(before.status, 0, before.stderr)
        // A download held open across the reload, on the pooled connection.
        let partial = work.appendingPathComponent("big.part")
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        slow.arguments = ["-s", "-o", partial.path, "--http2", "--limit-rate", "2M", "-m", "30", "--cacert", ca,
                          "-x", proxy.proxyURL, "https://127.0.0.1:\(h2Port)/big.bin?route=during"]
        slow.standardOutput = FileHandle.nullDevice
        slow.standardError = FileHandle.nullDevice
        try slow.run()
        defer { if slow.isRunning { slow.terminate() } }
        XCTAssertTrue(eventually(timeout: 10) { ((try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0) > 0 },
                      "the download did not start")

        let down = try unusedLoopbackPort()
        let url = proxy.workDirectory.appendingPathComponent("tapwire.json")
        var config = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        config["upstream"] = ["proxy": "http://127.0.0.1:\(down)", "noProxy": []]
        try JSONSerialization.data(withJSONObject: config).write(to: url)
        kill(proxy.process.processIdentifier, SIGHUP)
        XCTAssertNotNil(proxy.stderr.waitFor { $0.contains("new upstream connections go through the parent proxy") })
        XCTAssertTrue(slow.isRunning, "the download ended before the reload; the test proves nothing")
        slow.waitUntilExit()
        XCTAssertEqual(slow.terminationStatus, 0)
        XCTAssertEqual((try? FileManager.default.attributesOfItem(atPath: partial.path)[.size] as? Int) ?? 0, 6 << 20)

        // Each client connection lands on one of the event loops, each with its own pool:
        // several, so that the loop that carried the download gets some (all but certainly).
        for i in 1...8 {
            let after = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--http2", "--cacert", ca,
                                                          "https://127.0.0.1:\(h2Port)/data.json?route=after\(i)"])
            XCTAssertEqual(after.text, "502", "exchange \(i) after the reload took the old connection")
            let rec = try record(proxy, "route=after\(i)")
            XCTAssertEqual((rec["error"] as? [String: Any])?["code"] as? String, "upstreamProxyFailed", "\(rec)")
        }
    }

    /// Four gRPC calls held open at once on one client connection, after one that brought
    /// the origin connection up: it carries them all by default; with
    /// `upstream.maxConcurrentStreams: 2` the two past the bound need other connections.
    func testConcurrentStreamsPerOriginConnectionAreBounded() throws {
        guard (try? runCommand("python3", ["-c", "import grpc"]))?.status == 0 else {
            throw XCTSkip("this test needs Python's grpcio (make test-deps installs it)")
        }
        let script = packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/grpc_call.py").path
        for bound in [nil, 2] as [Int?] {
            let (proxy, ca) = try startProxy(upstream: bound.map { ["maxConcurrentStreams": $0] } ?? [:])
            let r = try runCommand("python3", [script, String(proxy.port), pki.certificate, pki.key, ca, "slow", "4"],
                                   timeout: 90)
            XCTAssertEqual(r.status, 0, r.text + r.stderr)
            let got = try XCTUnwrap(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], r.text)
            XCTAssertEqual((got["answers"] as? [String])?.count, 4, r.text)
            let peers = try XCTUnwrap(got["peers"] as? Int, r.text)
            if bound == nil { XCTAssertEqual(peers, 1, r.text) } else { XCTAssertGreaterThan(peers, 1, r.text) }
        }
    }

    /// With `upstream.maxConcurrentStreams: 1` concurrent exchanges still all complete (a
    /// full connection sends the next exchange to a new one).
    func testStreamsPastTheBoundGetAnotherConnection() throws {
        let (proxy, ca) = try startProxy(upstream: ["maxConcurrentStreams": 1])
        let urls = (1...8).map { "https://127.0.0.1:\(h2Port)/data.json?par=\($0)" }
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-Z", "--parallel-immediate", "--http2", "--cacert", ca] + urls)
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(occurrences(of: #""origin":"h2""#, in: r.text), 8, r.text)
        for i in 1...8 { XCTAssertEqual(versions(try record(proxy, "par=\(i)")).origin, "HTTP/2") }
    }

    /// A client reading slowly holds back its stream from the origin (windows reopen only as
    /// the exchange takes the bytes): the proxy does not buffer the 48 MB file the origin
    /// could send at once. Before windows were managed, RSS grew by the whole file.
    func testASlowClientHoldsBackTheOrigin() throws {
        let size = 48 << 20
        let file = work.appendingPathComponent("htdocs/big.bin")
        try Data(count: size).write(to: file)
        let (proxy, ca) = try startProxy()
        let (_, growth) = proxy.measuringRSSGrowth {
            _ = try? curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "--http2", "--limit-rate", "2M", "-m", "3",
                                                   "--cacert", ca, "https://127.0.0.1:\(h2Port)/big.bin?slow=1"])
        }
        XCTAssertLessThan(growth, size / 3, "RSS grew by \(growth >> 20) MB")
        // And a client that reads gets the whole body.
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{size_download}", "--http2",
                                                  "--cacert", ca, "https://127.0.0.1:\(h2Port)/big.bin?fast=1"])
        XCTAssertEqual(r.text, String(size), r.stderr)
    }

    func testAnUploadIsEchoedByTheH2Origin() throws {
        let (proxy, ca) = try startProxy()
        // 3.2 MB: many DATA frames and windows, and a stream that pauses its client at
        // limits.highWaterBytes and resumes as the origin's window reopens, many times over.
        let body = String(repeating: "0123456789abcdef", count: 200_000)
        let file = work.appendingPathComponent("upload.txt")
        try body.write(to: file, atomically: true, encoding: .utf8)
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "--data-binary", "@\(file.path)",
                                                  "https://127.0.0.1:\(h2Port)/echo?upload=1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.text.count, body.count)
        XCTAssertTrue(r.text == body)
        XCTAssertEqual(versions(try record(proxy, "upload=1")).origin, "HTTP/2")
    }

    func testAnHTTP11OnlyOriginStillSpeaksHTTP11() throws {
        let origin = try OriginServer(tls: (pki.certificate, pki.key))
        let (proxy, ca) = try startProxy()
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca,
                                                  "https://127.0.0.1:\(origin.port)/json?h1only=1"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("hunter2"), r.text)
        let rec = try record(proxy, "h1only=1")
        XCTAssertEqual(versions(rec).client, "HTTP/2")
        XCTAssertEqual(versions(rec).origin, "HTTP/1.1")
        XCTAssertEqual((rec["response"] as? [String: Any])?["httpVersion"] as? String, "HTTP/1.1")
        withExtendedLifetime(origin) {}
    }

    /// grpcio's server speaks only h2: real gRPC calls through interception, unary,
    /// server-streaming, client-streaming, bidi and a trailers-only error, each decoded in
    /// its record.
    func testGRPCCallsThroughInterception() throws {
        guard (try? runCommand("python3", ["-c", "import grpc"]))?.status == 0 else {
            throw XCTSkip("this test needs Python's grpcio (make test-deps installs it)")
        }
        let (proxy, ca) = try startProxy()
        let script = packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/grpc_call.py").path
        let r = try runCommand("python3", [script, String(proxy.port), pki.certificate, pki.key, ca], timeout: 90)
        XCTAssertEqual(r.status, 0, r.text + r.stderr)
        let got = try XCTUnwrap(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], r.text)
        // "hello tapwire" in field 1, 7 in field 2, as the server encoded them.
        XCTAssertEqual(got["unary"] as? String, "0a0d68656c6c6f20746170776972651007")
        XCTAssertEqual((got["stream"] as? [String])?.count, 3)
        XCTAssertEqual(got["fail"] as? [String], ["NOT_FOUND", "no such thing"])
        XCTAssertEqual(got["total"] as? String, "0806")  // client-streaming: 1 + 2 + 3
        XCTAssertEqual(got["bidi"] as? [String], ["0828", "0832"])  // bidi: 40, 50

        let unary = try record(proxy, "/demo.Greeter/Hello")
        XCTAssertEqual(versions(unary).client, "HTTP/2")
        XCTAssertEqual(versions(unary).origin, "HTTP/2")
        let unaryText = try line(proxy, "/demo.Greeter/Hello")
        XCTAssertTrue(unaryText.contains(#""message":{"1":"tapwire"}"#), unaryText)
        XCTAssertTrue(unaryText.contains(#""message":{"1":"hello tapwire","2":7}"#), unaryText)
        XCTAssertTrue(unaryText.contains(#"["grpc-status","0"]"#), unaryText)

        let stream = try record(proxy, "/demo.Greeter/Count")
        let result = try XCTUnwrap((stream["result"] as? [String: Any])?["success"] as? [String: Any], "\(stream)")
        let messages = try XCTUnwrap(result["messages"] as? [[String: Any]])
        XCTAssertEqual(messages.compactMap { ($0["message"] as? [String: Any])?["1"] as? Int }, [1, 2, 3])

        for (method, requests, responses) in [("Total", [1, 2, 3], [6]), ("Echo", [4, 5], [40, 50])] {
            let rec = try record(proxy, "/demo.Greeter/\(method)")
            func fieldOne(_ body: Any?) -> [Int] {
                ((body as? [String: Any])?["messages"] as? [[String: Any]] ?? [])
                    .compactMap { ($0["message"] as? [String: Any])?["1"] as? Int }
            }
            XCTAssertEqual(fieldOne((rec["request"] as? [String: Any])?["body"]), requests, "\(rec)")
            XCTAssertEqual(fieldOne((rec["result"] as? [String: Any])?["success"]), responses, "\(rec)")
        }

        let failed = try record(proxy, "/demo.Greeter/Fail")
        XCTAssertNil(failed["error"] as? [String: Any], "\(failed)")
        let failedText = try line(proxy, "/demo.Greeter/Fail")
        XCTAssertTrue(failedText.contains(#"["grpc-status","5"]"#), failedText)
        XCTAssertTrue(failedText.contains(#"["grpc-message","no such thing"]"#), failedText)
    }

    /// An origin that picks h2 and then never answers: `upstream.readTimeout` still applies
    /// (it runs on the exchange's end of the pair).
    func testASilentH2OriginTimesOut() throws {
        let port = try unusedLoopbackPort()
        let silent = Process()
        silent.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        silent.arguments = ["python3", "-c", """
            import socket, ssl, sys
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2], sys.argv[3])
            ctx.set_alpn_protocols(["h2"])
            s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
            while True:
                try:
                    c = ctx.wrap_socket(s.accept()[0], server_side=True)
                except Exception:
                    continue  # the readiness probe
                c.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))  # an empty SETTINGS frame, then silence
                while c.recv(65536): pass
            """, String(port), pki.certificate, pki.key]
        try silent.run()
        defer { if silent.isRunning { silent.terminate() } }
        XCTAssertTrue(eventually { (try? RawClient(port: port)) != nil }, "the silent origin did not listen")
        let (proxy, ca) = try startProxy(upstream: ["readTimeout": 1])
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--http1.1",
                                                  "--cacert", ca, "https://127.0.0.1:\(port)/silent"])
        XCTAssertEqual(r.text, "504", r.stderr)
        let rec = try record(proxy, "/silent")
        XCTAssertEqual(versions(rec).origin, "HTTP/2")
        XCTAssertEqual((rec["error"] as? [String: Any])?["code"] as? String, "upstreamTimeout")
    }
}
