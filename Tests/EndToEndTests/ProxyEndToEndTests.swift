import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import XCTest

/// The built `tapwire` between real clients (curl through HTTP_PROXY, raw
/// sockets, URLSession) and a loopback origin.
final class ProxyEndToEndTests: XCTestCase {
    var origin: OriginServer!
    var proxy: TapwireProcess!

    override func setUpWithError() throws {
        origin = try OriginServer()
        proxy = try TapwireProcess(config: ["limits": ["clientIdleTimeout": 5], "upstream": ["readTimeout": 2]])
    }

    override func tearDown() {
        proxy = nil
        origin = nil
    }

    func testGetThroughHTTPProxyVariable() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-i", "\(origin.base)/json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 200 OK"), r.text)
        XCTAssertTrue(r.text.hasSuffix(#"{"id":12345678901234567890,"ok":true,"name":"tap","items":[1,2,3],"password":"hunter2"}"#), r.text)
    }

    func testPostBodyReachesOriginAndHostIsRewritten() throws {
        let body = String(repeating: "payload-", count: 10_000)
        let r = try curlViaProxy(proxy.proxyURL, ["-i", "-H", "Content-Type: text/plain", "-H", "Proxy-Connection: keep-alive",
                                                  "--data-binary", body, "\(origin.base)/echo"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("X-Method: POST"), r.text)
        XCTAssertTrue(r.text.contains("X-Host: 127.0.0.1:\(origin.port)"), r.text)
        // Hop-by-hop fields never reach the origin.
        let seen = r.text.components(separatedBy: "\r\n").first { $0.hasPrefix("X-Seen-Headers:") } ?? ""
        XCTAssertFalse(seen.contains("proxy-connection"), seen)
        XCTAssertTrue(r.text.hasSuffix(body))
    }

    func testChunkedRequestBodyIsForwarded() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-H", "Transfer-Encoding: chunked", "--data-binary", "chunked upload", "\(origin.base)/echo"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.text, "chunked upload")
    }

    func testHeadHasNoBody() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-I", "\(origin.base)/json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 200"), r.text)
        XCTAssertTrue(r.text.contains("Content-Length: 87"), r.text)
        XCTAssertTrue(r.text.hasSuffix("\r\n\r\n"), r.text)
    }

    func testChunkedResponseStreamsThrough() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["\(origin.base)/chunked"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.text, "hello chunked world")
    }

    func testStatusCodesWithoutBodies() throws {
        for code in [204, 304] {
            let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(origin.base)/status?code=\(code)"])
            XCTAssertEqual(r.text, "\(code)", r.stderr)
        }
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-w", " %{http_code}", "\(origin.base)/status?code=418"])
        XCTAssertEqual(r.text, "status body 418")
    }

    func testCloseDelimitedResponse() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-i", "\(origin.base)/close-delimited"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("Connection: close"), r.text)
        XCTAssertTrue(r.text.hasSuffix("until the end"), r.text)
    }

    func testExpectContinue() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-i", "-H", "Expect: 100-continue", "\(origin.base)/continue"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK"), r.text)
        XCTAssertTrue(r.text.hasSuffix("ok"))
    }

    func testKeepAliveReusesBothConnections() throws {
        // One curl run, two URLs: curl reuses its proxy connection, the proxy its pooled upstream.
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-D", "-", "-o", "/dev/null", "-o", "/dev/null",
                                                  "\(origin.base)/echo", "\(origin.base)/echo"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.stderr.isEmpty)
        XCTAssertTrue(r.text.contains("X-Served: 1"), r.text)
        XCTAssertTrue(r.text.contains("X-Served: 2"), "the second request did not reuse the upstream connection: \(r.text)")
    }

    func testPipelinedRequestsAnsweredInOrder() throws {
        let c = try RawClient(port: proxy.port)
        let o = origin.base
        c.send("GET \(o)/status?code=201 HTTP/1.1\r\nHost: x\r\n\r\nGET \(o)/json HTTP/1.1\r\nHost: x\r\n\r\nGET \(o)/status?code=202 HTTP/1.1\r\nHost: x\r\n\r\n")
        let r = c.read { occurrences(of: "HTTP/1.1 ", in: $0) >= 3 && $0.hasSuffix("status body") }
        // Bodies have no line end, so the next status line follows a body directly.
        let statuses = r.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
        XCTAssertEqual(statuses, ["201", "200", "202"], r.text)
    }

    func testStreams64MiBWithBoundedMemory() throws {
        let size = 64 << 20
        let (r, growth) = try proxy.measuringRSSGrowth {
            try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{size_download}", "\(origin.base)/big?size=\(size)"], timeout: 120)
        }
        XCTAssertEqual(r.text, "\(size)", r.stderr)
        XCTAssertLessThan(growth, 48 << 20, "RSS grew by \(growth >> 20) MiB while streaming 64 MiB")
    }

    func testConnectTunnel() throws {
        // -p makes curl tunnel even plain HTTP through CONNECT.
        let r = try curlViaProxy(proxy.proxyURL, ["-p", "-i", "\(origin.base)/json"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("HTTP/1.1 200 Connection established"), r.text)
        XCTAssertTrue(r.text.hasSuffix(#""password":"hunter2"}"#), r.text)
    }

    func testWebSocketUpgradeBecomesTunnel() throws {
        let c = try RawClient(port: proxy.port)
        c.send("GET \(origin.base)/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
        let head = c.read { $0.contains("\r\n\r\n") }
        XCTAssertTrue(head.text.hasPrefix("HTTP/1.1 101 Switching Protocols"), head.text)
        XCTAssertTrue(head.text.lowercased().contains("upgrade: websocket"), head.text)
        c.send("ping-frame-bytes")
        let echo = c.read { $0.contains("ping-frame-bytes") }
        XCTAssertTrue(echo.text.contains("ping-frame-bytes"), echo.text)
    }

    // MARK: errors, each a short text naming the cause

    func testMalformedRequestGets400() throws {
        for bad in ["GET \(origin.base)/ HTTP/1.1\r\nHost : x\r\n\r\n",
                    "GET \(origin.base)/ HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
                    "GET \(origin.base)/ HTTP/1.1\r\nHost: x\r\nX: a\r\n folded\r\n\r\n"] {
            let c = try RawClient(port: proxy.port)
            c.send(bad)
            let r = c.read { $0.contains("\r\n\r\n") && $0.hasSuffix("\n") }
            XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 400 Bad Request"), "\(bad.debugDescription) → \(r.text)")
        }
    }

    func testUnknownTransferCodingGets501() throws {
        let c = try RawClient(port: proxy.port)
        c.send("POST \(origin.base)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n")
        XCTAssertTrue(c.read { $0.contains("\r\n\r\n") }.text.hasPrefix("HTTP/1.1 501"))
    }

    func testOversizedHeadGets431() throws {
        let c = try RawClient(port: proxy.port)
        c.send("GET \(origin.base)/json HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n")
        XCTAssertTrue(c.read { $0.contains("\r\n\r\n") }.text.hasPrefix("HTTP/1.1 431"))
    }

    func testUnreachableOriginGets502() throws {
        let port = try unusedLoopbackPort()
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-w", "\n%{http_code}", "http://127.0.0.1:\(port)/"])
        XCTAssertTrue(r.text.hasSuffix("502"), r.text)
        XCTAssertTrue(r.text.contains("cannot connect to 127.0.0.1:\(port)"), r.text)
    }

    func testDNSFailureGets502() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-w", "\n%{http_code}", "http://no-such-host.invalid/"], timeout: 30)
        XCTAssertTrue(r.text.hasSuffix("502") || r.text.hasSuffix("504"), r.text)
        XCTAssertTrue(r.text.contains("no-such-host.invalid"), r.text)
    }

    func testSilentOriginGets504() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-w", "\n%{http_code}", "\(origin.base)/never?s=10"])
        XCTAssertTrue(r.text.hasSuffix("504"), r.text)
    }

    func testMalformedResponseGets502() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-w", "\n%{http_code}", "\(origin.base)/malformed"])
        XCTAssertTrue(r.text.hasSuffix("502"), r.text)
        XCTAssertTrue(r.text.contains("malformed"), r.text)
    }

    func testResetMidBodyFailsTheClientTransfer() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/reset-mid-body"])
        // 18: "transfer closed with outstanding read data remaining" — never a clean end.
        XCTAssertEqual(r.status, 18, r.stderr)
    }

    func testRequestToOwnListenerGets508() throws {
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-w", "\n%{http_code}", "http://127.0.0.1:\(proxy.port)/anything"])
        XCTAssertTrue(r.text.hasSuffix("508"), r.text)
    }

    /// With HTTP_PROXY set and NO_PROXY unset (as README says, to inspect loopback), curl
    /// sends `/healthz` to the proxy in absolute form: it is answered, not a 508 loop.
    func testOwnEndpointsThroughTheProxyAreAnswered() throws {
        for host in ["127.0.0.1", "localhost"] {
            let r = try curlViaProxy(proxy.proxyURL, ["-s", "-w", " %{http_code}", "http://\(host):\(proxy.port)/healthz"])
            XCTAssertEqual(r.text, "ok\n 200", host)
        }
        let metrics = try curlViaProxy(proxy.proxyURL, ["-s", "http://127.0.0.1:\(proxy.port)/metrics"])
        XCTAssertTrue(metrics.text.contains("tapwire_"), metrics.text)
    }

    func testHealthzAndOriginFormHint() throws {
        let ok = try runCommand("curl", ["--noproxy", "*", "-s", "-w", " %{http_code}", "\(proxy.proxyURL)/healthz"])
        XCTAssertEqual(ok.text, "ok\n 200")
        let hint = try runCommand("curl", ["--noproxy", "*", "-s", "-w", " %{http_code}", "\(proxy.proxyURL)/other"])
        XCTAssertTrue(hint.text.hasSuffix(" 400"), hint.text)
        XCTAssertTrue(hint.text.contains("HTTP_PROXY"), hint.text)
    }

    func testMetricsEndpoint() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json"])
        let m = try runCommand("curl", ["--noproxy", "*", "-s", "\(proxy.proxyURL)/metrics"])
        XCTAssertTrue(m.text.contains("tapwire_exchanges_total{status_class=\"2xx\"} 1"), m.text)
        XCTAssertTrue(m.text.contains("# TYPE tapwire_exchange_duration_seconds histogram"), m.text)
    }

    func testSlowHeaderClientGets408() throws {
        let c = try RawClient(port: proxy.port)
        c.send("GET \(origin.base)/json HTTP/1.1\r\nHost: x\r\n")
        let r = c.read(timeout: 15) { $0.contains("\r\n\r\n") }
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 408"), r.text)
    }

    func testURLSessionThroughProxy() throws {
        // URLSession on Linux is libcurl underneath; it honours the proxy variables.
        setenv("http_proxy", proxy.proxyURL, 1)
        defer { unsetenv("http_proxy") }
        let session = URLSession(configuration: .ephemeral)
        let done = expectation(description: "response")
        let result = Locked((Data(), 0))
        let url = try XCTUnwrap(URL(string: "\(origin.base)/json"))
        session.dataTask(with: url) { data, response, _ in
            result.update { $0 = (data ?? Data(), (response as? HTTPURLResponse)?.statusCode ?? 0) }
            done.fulfill()
        }.resume()
        wait(for: [done], timeout: 30)
        XCTAssertEqual(result.value.1, 200)
        XCTAssertTrue(String(decoding: result.value.0, as: UTF8.self).contains("hunter2"))
        let m = try runCommand("curl", ["--noproxy", "*", "-s", "\(proxy.proxyURL)/metrics"])
        XCTAssertTrue(m.text.contains("tapwire_exchanges_total{status_class=\"2xx\"} 1"), "the request did not go through the proxy: \(m.text)")
    }

    func testSIGTERMExitsZero() throws {
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "\(origin.base)/json"])
        XCTAssertEqual(proxy.stop(), 0)
    }
}

/// Access control and start-up refusals need their own proxy configurations.
final class ProxyAccessTests: XCTestCase {
    func testClientOutsideAllowListGets403() throws {
        let proxy = try TapwireProcess(config: ["access": ["allow": ["10.0.0.0/8"]]])
        let r = try runCommand("curl", ["--noproxy", "*", "-s", "-w", " %{http_code}", "\(proxy.proxyURL)/healthz"])
        XCTAssertTrue(r.text.hasSuffix(" 403"), r.text)
        XCTAssertTrue(r.text.contains("access.allow"), r.text)
    }

    func testUnknownConfigKeyExits2NamingIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cfg = dir.appendingPathComponent("c.json")
        try Data(#"{"listen":["127.0.0.1:0"],"limits":{"maxHeaderByte":1}}"#.utf8).write(to: cfg)
        let r = try runCommand(try tapwireBinary(), ["run", "--config", cfg.path])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("limits.maxHeaderByte: unknown key"), r.stderr)
    }

    func testNonLoopbackListenWithoutAllowListRefusesToStart() throws {
        let r = try runCommand(try tapwireBinary(), ["run", "--listen", "0.0.0.0:0"])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.stderr.contains("access.allow"), r.stderr)
    }
}
