import Foundation
import XCTest

/// HTTP/2 with intercepted clients: curl and a raw `h2` client (Resources/h2_client.py)
/// pick h2 by ALPN through CONNECT; each stream goes to the HTTP/1.1 origin as an exchange
/// of its own with its own record.
final class HTTP2EndToEndTests: XCTestCase {
    var work: URL!
    var pki: TestPKI!
    var origin: OriginServer!

    override func setUpWithError() throws {
        guard (try? runCommand("python3", ["-c", "import h2"]))?.status == 0 else {
            throw XCTSkip("these tests need Python's h2 module (make test-deps installs it)")
        }
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-h2-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        pki = try TestPKI(in: work)
        origin = try OriginServer(tls: (pki.certificate, pki.key))
    }

    override func tearDown() {
        origin = nil
        if let work { try? FileManager.default.removeItem(at: work) }
    }

    private var caDirectory: String { work.appendingPathComponent("tapwire-ca").path }

    private func startProxy(limits: [String: Any] = [:], http2: Bool = true) throws -> (TapwireProcess, String) {
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory,
                                                        "upstreamCAFile": pki.caCertificate, "http2": http2],
                                                "limits": limits])
        let cfg = work.appendingPathComponent("export.json")
        try JSONSerialization.data(withJSONObject: ["tls": ["caDirectory": caDirectory]]).write(to: cfg)
        let exported = try runCommand(try tapwireBinary(), ["ca", "export", "--config", cfg.path])
        XCTAssertEqual(exported.status, 0, exported.stderr)
        let pem = work.appendingPathComponent("tapwire-ca.pem")
        try exported.stdout.write(to: pem)
        return (proxy, pem.path)
    }

    private func h2Client(_ mode: String, _ proxy: TapwireProcess, _ ca: String) throws -> [String: Any] {
        let script = packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/h2_client.py").path
        let r = try runCommand("python3", [script, mode, String(proxy.port), String(origin.port), ca], timeout: 60)
        XCTAssertEqual(r.status, 0, r.stderr)
        let object = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]
        return try XCTUnwrap(object, r.text + r.stderr)
    }

    func testCurlSpeaksHTTP2ThroughInterceptionAndEachStreamIsRecorded() throws {
        let (proxy, ca) = try startProxy()
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-i", "--http2", "--cacert", ca,
                                                  "https://127.0.0.1:\(origin.port)/json?h2=curl"])
        XCTAssertEqual(r.status, 0, r.stderr)
        // curl -i prints the proxy's CONNECT answer first.
        XCTAssertTrue(r.text.contains("\r\nHTTP/2 200"), r.text)
        XCTAssertTrue(r.text.contains("\"hunter2\""), r.text)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("h2=curl") })
        let record = try parseRecord(line)
        let request = try XCTUnwrap(record["request"] as? [String: Any])
        XCTAssertEqual(request["httpVersion"] as? String, "HTTP/2", line)
        XCTAssertEqual(request["url"] as? String, "https://127.0.0.1:\(origin.port)/json?h2=curl", line)
        XCTAssertTrue(line.contains(#""result":{"success":{"id":12345678901234567890"#), line)

        // With tls.http2 off the same client is held to HTTP/1.1.
        let (plain, plainCA) = try startProxy(http2: false)
        let old = try curlViaProxy(plain.proxyURL, ["-s", "-i", "--http2", "--cacert", plainCA,
                                                    "https://127.0.0.1:\(origin.port)/json?h2=off"])
        XCTAssertTrue(old.text.contains("\r\nHTTP/1.1 200 OK"), old.text)
        XCTAssertFalse(old.text.contains("HTTP/2"), old.text)
    }

    /// Uploads and downloads larger than every window and the high-water mark: flow control
    /// both ways, a chunked upload (no Content-Length from the client) included.
    func testLargeBodiesBothWays() throws {
        let (proxy, ca) = try startProxy()
        var bytes = [UInt8](repeating: 0, count: 3 << 20)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
        let upload = work.appendingPathComponent("upload.bin")
        try Data(bytes).write(to: upload)
        let echoed = work.appendingPathComponent("echoed.bin")
        let up = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "-o", echoed.path,
                                                   "--data-binary", "@\(upload.path)", "https://127.0.0.1:\(origin.port)/echo?h2=up"])
        XCTAssertEqual(up.status, 0, up.stderr)
        XCTAssertEqual(try Data(contentsOf: echoed), Data(bytes), "the echoed upload differs")
        let chunked = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "-o", echoed.path,
                                                        "-H", "Transfer-Encoding: chunked",
                                                        "--data-binary", "@\(upload.path)", "https://127.0.0.1:\(origin.port)/echo?h2=chunked"])
        XCTAssertEqual(chunked.status, 0, chunked.stderr)
        XCTAssertEqual(try Data(contentsOf: echoed), Data(bytes), "the echoed chunked upload differs")
        let down = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "-o", "/dev/null", "-w", "%{size_download} %{http_version}",
                                                     "https://127.0.0.1:\(origin.port)/big?size=8388608&h2=down"])
        XCTAssertEqual(down.status, 0, down.stderr)
        XCTAssertEqual(down.text, "8388608 2", down.text)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("h2=down") })
        XCTAssertTrue(line.contains(#""httpVersion":"HTTP/2""#), line)
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("h2=chunked") })
    }

    /// Thirty streams on one connection next to a slow one: each has its own exchange (its
    /// own upstream connection), so none waits for the slow answer.
    func testConcurrentStreamsDoNotWaitForASlowOne() throws {
        let (proxy, ca) = try startProxy()
        let result = try h2Client("concurrent", proxy, ca)
        let statuses = try XCTUnwrap(result["statuses"] as? [String])
        XCTAssertEqual(statuses, Array(repeating: "200", count: 31), "\(result)")
        let slow = try XCTUnwrap(result["slow"] as? Double, "\(result)")
        let fast = try XCTUnwrap(result["fast"] as? [Double], "\(result)")
        XCTAssertLessThan(try XCTUnwrap(fast.max()), slow, "a fast stream waited for the slow one: \(result)")
        XCTAssertTrue(eventually(timeout: 10) { ((try? logLines(proxy.logDirectory)) ?? []).filter { $0.contains("h2=") }.count == 30 })
    }

    /// A chunked answer's trailer section reaches an HTTP/2 client as a last HEADERS frame
    /// and both versions' records; an HTTP/2 request's trailers go upstream in its last chunk.
    func testTrailersAreForwardedAndRecorded() throws {
        let (proxy, ca) = try startProxy()
        let result = try h2Client("trailers", proxy, ca)
        XCTAssertEqual(result["body"] as? String, "hello chunked world", "\(result)")
        XCTAssertEqual(result["trailers"] as? [[String]], [["x-trailer", "yes"]], "\(result)")
        XCTAssertEqual(result["echo"] as? String, "abc", "\(result)")
        let h2Line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("h2=trailers") })
        XCTAssertEqual((try parseRecord(h2Line)["response"] as? [String: Any])?["trailers"] as? [[String]], [["X-Trailer", "yes"]], h2Line)
        let postLine = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("h2=reqtrailers") })
        XCTAssertEqual((try parseRecord(postLine)["request"] as? [String: Any])?["trailers"] as? [[String]],
                       [["x-request-trailer", "sent"]], postLine)

        let h1 = try curlViaProxy(proxy.proxyURL, ["-s", "--http1.1", "--cacert", ca, "https://127.0.0.1:\(origin.port)/chunked?h1=trailers"])
        XCTAssertEqual(h1.text, "hello chunked world", h1.stderr)
        let h1Line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("h1=trailers") })
        XCTAssertEqual((try parseRecord(h1Line)["response"] as? [String: Any])?["trailers"] as? [[String]], [["X-Trailer", "yes"]], h1Line)
    }

    /// A gRPC-shaped call from an HTTP/2 client: its message and the answer's are decoded
    /// without a schema in the record, and the status arrives (and is recorded) in trailers.
    func testGRPCShapedCallIsDecodedAndItsStatusRecorded() throws {
        let (proxy, ca) = try startProxy()
        let result = try h2Client("grpc", proxy, ca)
        XCTAssertEqual(result["status"] as? String, "200", "\(result)")
        XCTAssertEqual(result["contentType"] as? String, "application/grpc", "\(result)")
        XCTAssertEqual(result["trailers"] as? [[String]], [["grpc-status", "0"], ["grpc-message", "fine"]], "\(result)")
        XCTAssertEqual(result["body"] as? String, "0000000007089601120" + "26f6b", "\(result)")
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("h2=grpc") })
        let record = try parseRecord(line)
        XCTAssertEqual(record["serializer"] as? String, "grpc", line)
        let messages = try XCTUnwrap(((record["result"] as? [String: Any])?["success"] as? [String: Any])?["messages"] as? [[String: Any]], line)
        let answer = try XCTUnwrap(messages.first?["message"] as? [String: Any], line)
        XCTAssertEqual(answer["1"] as? Int, 150, line)
        XCTAssertEqual(answer["2"] as? String, "ok", line)
        let request = try XCTUnwrap(record["request"] as? [String: Any])
        let sent = try XCTUnwrap((request["body"] as? [String: Any])?["messages"] as? [[String: Any]], line)
        XCTAssertEqual((sent.first?["message"] as? [String: Any])?["1"] as? String, "hello", line)
        XCTAssertEqual((record["response"] as? [String: Any])?["trailers"] as? [[String]], [["grpc-status", "0"], ["grpc-message", "fine"]], line)
    }

    /// SIGTERM with a stream in flight: the client gets GOAWAY (NO_ERROR), the stream still
    /// completes, and the proxy exits cleanly once it has. (curl, not python-h2, which takes
    /// any GOAWAY as the end of the connection and refuses the frames of streams it spared.)
    func testSIGTERMLetsInFlightStreamsFinish() throws {
        let (proxy, ca) = try startProxy()
        let result = Locked<CommandResult?>(nil)
        let done = DispatchSemaphore(value: 0)
        let url = proxy.proxyURL, target = "https://127.0.0.1:\(origin.port)/slow?s=2&h2=drain"
        DispatchQueue.global().async {
            result.update { $0 = try? curlViaProxy(url, ["-s", "--http2", "--cacert", ca, "-w", " %{http_code} %{http_version}", target]) }
            done.signal()
        }
        XCTAssertTrue(eventually(every: 0.05) {
            let metrics = (try? runCommand("curl", ["-s", "--noproxy", "*", "\(url)/metrics"]).text) ?? ""
            return metrics.contains("\ntapwire_upstream_connections 1")
        })
        // The origin answers 2 s after the request (an HTTPS origin cannot be released early).
        kill(proxy.process.processIdentifier, SIGTERM)
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        XCTAssertEqual(result.value?.text, "slow answer 200 2", result.value?.stderr ?? "")
        XCTAssertEqual(proxy.stop(), 0)
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory, timeout: 1) { $0.contains("h2=drain") && $0.contains(#""status":200"#) })
    }

    /// The stream limit's worth of streams at once, each with a 512 KiB answer (twice the
    /// stream window): flow control across streams and the connection, each stream answered
    /// whole and logged once.
    /// (`log.whenBehind: wait` holding streams is `HTTP2HoldTests`, in process, where the
    /// log can be held behind at will.)
    func testAHundredStreamsAtOnce() throws {
        let (proxy, ca) = try startProxy()
        let result = try h2Client("many", proxy, ca)
        XCTAssertEqual(result["sizes"] as? [Int], Array(repeating: 524_288, count: 100), "\(result)")
        XCTAssertEqual(proxy.stop(timeout: 60), 0)
        let lines = try logLines(proxy.logDirectory)
        for n in 0..<100 {
            XCTAssertEqual(lines.filter { $0.contains("h2=many\(n)\"") }.count, 1, "stream \(n) logged other than once")
        }
    }

    /// A connection with no stream open is closed after `limits.clientIdleTimeout`, with a
    /// GOAWAY NO_ERROR, and no failure is recorded for it.
    func testAnIdleConnectionIsClosedGracefully() throws {
        let (proxy, ca) = try startProxy(limits: ["clientIdleTimeout": 1])
        let result = try h2Client("idle", proxy, ca)
        XCTAssertEqual(result["closed"] as? Bool, true, "\(result)")
        XCTAssertEqual(result["goaway"] as? Int, 0, "\(result)")
        XCTAssertNotNil(try waitForRecord(proxy.logDirectory) { $0.contains("h2=idle") && $0.contains(#""status":200"#) })
        XCTAssertFalse(try logLines(proxy.logDirectory).contains { $0.contains("http2") }, "an idle close is no failure")
    }

    /// A header block left unfinished stalls the whole connection (no other frame may come
    /// between its pieces): it gets the same idle limit, not a stream's freedom.
    func testAStalledHeaderBlockIsClosedAtTheIdleLimit() throws {
        let (proxy, ca) = try startProxy(limits: ["clientIdleTimeout": 1])
        let result = try h2Client("stalled-headers", proxy, ca)
        XCTAssertEqual(result["closed"] as? Bool, true, "\(result)")
        XCTAssertEqual(result["goaway"] as? Int, 0, "\(result)")
    }

    private func assertAbuserClosed(_ mode: String, limits: [String: Any], code: String, goaway: Int?) throws {
        let (proxy, ca) = try startProxy(limits: limits)
        let result = try h2Client(mode, proxy, ca)
        XCTAssertEqual(result["closed"] as? Bool, true, "\(mode): \(result)")
        if let goaway { XCTAssertEqual(result["goaway"] as? Int, goaway, "\(mode): \(result)") }
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("\"\(code)\"") }, "no record names \(code)")
        XCTAssertTrue(line.contains(#""type":"tunnel""#) || line.contains("tunnel"), line)
        // Another client on the same proxy is served as before.
        let other = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "https://127.0.0.1:\(origin.port)/json"])
        XCTAssertTrue(other.text.contains("hunter2"), "\(mode): \(other.text) \(other.stderr)")
    }

    /// An answer that is whole before the request is (the origin answered without reading the
    /// upload) ends the client's stream: its last frame, then RST_STREAM NO_ERROR (RFC 9113
    /// §8.1), so the client stops sending and the stream's share of the connection window
    /// comes back, instead of the stream staying open with nothing reading it.
    func testAnAnswerBeforeTheWholeUploadEndsTheStream() throws {
        let (proxy, ca) = try startProxy()
        let result = try h2Client("early-answer", proxy, ca)
        XCTAssertNotNil(result["status"] as? String, "an answer: \(result)")
        XCTAssertEqual(result["ended"] as? Bool, true, "the answer is whole: \(result)")
        XCTAssertEqual(result["reset"] as? Int, 0, "then RST_STREAM NO_ERROR: \(result)")
        let other = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "https://127.0.0.1:\(origin.port)/json"])
        XCTAssertTrue(other.text.contains("hunter2"), "the proxy goes on: \(other.stderr)")
    }

    func testRapidResetIsClosedWithEnhanceYourCalm() throws {
        try assertAbuserClosed("rapid-reset", limits: ["http2ResetBurst": 50, "http2ResetsPerSecond": 10],
                               code: "http2RapidReset", goaway: 11)
    }

    /// The proxy's own resets of streams the client made invalid count as the client's resets.
    func testStreamsTheClientMakesTheProxyResetCountAsRapidReset() throws {
        try assertAbuserClosed("made-you-reset", limits: ["http2ResetBurst": 10, "http2ResetsPerSecond": 1],
                               code: "http2RapidReset", goaway: 11)
    }

    /// An abuser that does not read: its output is full, so the GOAWAY cannot be sent in
    /// turn; the connection is still failed at once, its record written and its streams
    /// abandoned (their origin exchanges stop) while the client is connected and deaf.
    func testAnAbuserThatDoesNotReadIsFailedAtOnce() throws {
        let (proxy, ca) = try startProxy(limits: ["http2SettingsPerSecond": 20, "highWaterBytes": 65536])
        let script = packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/h2_client.py").path
        let done = Locked<CommandResult?>(nil)
        let ran = DispatchGroup()
        ran.enter()
        DispatchQueue.global().async {
            let r = try? runCommand("python3", [script, "deaf-flood", String(proxy.port), String(self.origin.port), ca], timeout: 60)
            done.update { $0 = r }
            ran.leave()
        }
        // The client floods about 2 s after it starts and stays deaf for 6 s after that.
        let flood = try waitForRecord(proxy.logDirectory, timeout: 6) { $0.contains(#""http2Flood""#) }
        var streams: [String] = []
        try eventually(timeout: 3, every: 0.05) {
            streams = try logLines(proxy.logDirectory).filter { $0.contains("h2=deaf") }
            return streams.count >= 8
        }
        let stillDeaf = done.value == nil
        ran.wait()
        XCTAssertNotNil(flood, "no http2Flood record while the client was connected and deaf")
        XCTAssertTrue(stillDeaf, "the client had already closed: the check proves nothing")
        XCTAssertEqual(done.value?.status, 0, done.value?.stderr ?? "no result")
        XCTAssertEqual(streams.count, 8, "every stream abandoned at once: \(streams.count) records")
        for line in streams { XCTAssertTrue(line.contains(#""http2Flood""#), String(line.prefix(400))) }
        let other = try curlViaProxy(proxy.proxyURL, ["-s", "--http2", "--cacert", ca, "https://127.0.0.1:\(origin.port)/json"])
        XCTAssertTrue(other.text.contains("hunter2"), "the proxy goes on: \(other.stderr)")
    }

    func testSettingsFloodIsClosed() throws {
        try assertAbuserClosed("settings-flood", limits: ["http2SettingsPerSecond": 20], code: "http2Flood", goaway: 11)
    }

    func testContinuationFloodIsClosed() throws {
        // Three, below the library's default of 8, against six frames: closed only if the
        // configured limit is the one applied.
        try assertAbuserClosed("continuation-flood", limits: ["http2MaxContinuations": 3], code: "http2Flood", goaway: nil)
    }

    func testAMalformedFrameIsClosedWithProtocolError() throws {
        try assertAbuserClosed("malformed", limits: [:], code: "http2ProtocolError", goaway: 1)
    }

    func testHeaderListBombIsClosed() throws {
        try assertAbuserClosed("header-bomb", limits: ["maxHeaderBytes": 65536], code: "http2HeaderListTooLarge", goaway: 11)
    }
}
