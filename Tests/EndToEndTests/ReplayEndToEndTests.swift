import Foundation
import XCTest

/// Offline replay: a session recorded against the fixture origin is answered again from its
/// log with the origin stopped.
final class ReplayEndToEndTests: XCTestCase {
    var origin: OriginServer!
    var work: URL!
    var recordings: URL { work.appendingPathComponent("recordings") }

    override func setUpWithError() throws {
        origin = try OriginServer()
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-replay-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    override func tearDown() {
        origin = nil
        try? FileManager.default.removeItem(at: work)
    }

    /// Status line, the fields named, and the body of a `curl -i` answer.
    private func answer(_ r: CommandResult, fields: [String]) -> String {
        let text = r.text
        guard let split = text.range(of: "\r\n\r\n") else { return text }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let kept = lines.prefix(1) + lines.dropFirst().filter { line in fields.contains { line.lowercased().hasPrefix($0.lowercased() + ":") } }
        return kept.joined(separator: "\n") + "\n\n" + text[split.upperBound...]
    }

    func testARecordedSessionIsAnsweredAgainWithTheOriginStopped() throws {
        let base = origin.base
        // The requests, and the fields whose values must come back as recorded (X-Served counts
        // the origin's requests, so only a replay repeats it).
        let requests: [(args: [String], url: String)] = [
            (["--compressed"], "\(base)/gzip-json"),
            ([], "\(base)/chunked"),
            (["-H", "Content-Type: application/json", "--data-binary", #"{"a":[1,2.50,"x"]}"#], "\(base)/echo?ts=111"),
            ([], "\(base)/echo?ts=111&keep=1"),
        ]
        let fields = ["Content-Type", "X-Method", "X-Served"]
        let recorder = try TapwireProcess(config: [:], logDirectory: recordings)
        var recorded: [String] = []
        for request in requests {
            let r = try curlViaProxy(recorder.proxyURL, ["-i"] + request.args + [request.url])
            XCTAssertEqual(r.status, 0, r.stderr)
            // curl -i prints trailers after the body; a replayed answer has none (documented).
            recorded.append(answer(r, fields: fields).replacingOccurrences(of: "X-Trailer: yes\r\n", with: ""))
        }
        _ = try curlViaProxy(recorder.proxyURL, ["-o", "/dev/null", "\(base)/big?size=3000"])
        _ = try curlViaProxy(recorder.proxyURL, ["-o", "/dev/null", "\(base)/json?only=forwarded"])
        XCTAssertTrue(eventually { ((try? logLines(self.recordings)) ?? []).count == requests.count + 2 })
        XCTAssertEqual(recorder.stop(), 0)
        let ids = try logLines(recordings).map { try XCTUnwrap(parseRecord($0)["id"] as? String) }

        // notFound forward: while the origin still runs, what was not recorded reaches it.
        let forwarding = try TapwireProcess(config: ["replay": ["from": recordings.path, "notFound": "forward"]],
                                            logDirectory: work.appendingPathComponent("forwarding"))
        let live = try curlViaProxy(forwarding.proxyURL, ["\(base)/json?not=recorded"])
        XCTAssertTrue(live.text.contains("12345678901234567890"), live.text)
        forwarding.stop()

        origin = nil
        let replayer = try TapwireProcess(config: ["replay": ["from": recordings.path, "ignoreParams": ["ts"]]],
                                          logDirectory: work.appendingPathComponent("replayed"))
        defer { replayer.stop() }
        XCTAssertNotNil(replayer.stderr.waitFor { $0.contains("replay: ") && $0.contains("recorded answer") })
        for (i, request) in requests.enumerated() {
            // Sent again with another volatile parameter: ignoreParams makes it the same request.
            let url = request.url.replacingOccurrences(of: "ts=111", with: "ts=999")
            let r = try curlViaProxy(replayer.proxyURL, ["-i"] + request.args + [url])
            XCTAssertEqual(r.status, 0, r.stderr)
            XCTAssertEqual(answer(r, fields: fields), recorded[i], url)
        }
        // A body logged by size only cannot be served: notFound (404 by default).
        let big = try curlViaProxy(replayer.proxyURL, ["-i", "\(base)/big?size=3000"])
        XCTAssertTrue(big.text.hasPrefix("HTTP/1.1 404"), big.text)
        let unknown = try curlViaProxy(replayer.proxyURL, ["-i", "\(base)/never"])
        XCTAssertTrue(unknown.text.hasPrefix("HTTP/1.1 404"), unknown.text)
        XCTAssertTrue(unknown.text.contains("no recorded response for GET \(base)/never"), unknown.text)
        // Method and URL both match: a POST to a URL recorded only for GET is not found.
        let post = try curlViaProxy(replayer.proxyURL, ["-i", "-d", "x", "\(base)/echo?ts=1&keep=1"])
        XCTAssertTrue(post.text.hasPrefix("HTTP/1.1 404"), post.text)

        // Replayed answers are recorded, each naming the record it came from.
        let gzipLine = try XCTUnwrap(waitForRecord(replayer.logDirectory) { $0.contains("/gzip-json") })
        XCTAssertEqual(try parseRecord(gzipLine)["replayedFrom"] as? String, ids[0])
        XCTAssertTrue(gzipLine.contains(#""result":{"success":{"compressed":true,"n":1.50}}"#), gzipLine)

        // --replay-from with notFound 502 in the file.
        let flagged = try TapwireProcess(config: ["replay": ["from": work.path, "notFound": "502"]],
                                         extraArguments: ["--replay-from", recordings.path],
                                         logDirectory: work.appendingPathComponent("flagged"))
        defer { flagged.stop() }
        let chunked = try curlViaProxy(flagged.proxyURL, ["\(base)/chunked"])
        XCTAssertEqual(chunked.text, "hello chunked world")
        // The flag replaces the file's block, so its notFound is the default 404.
        XCTAssertTrue(try curlViaProxy(flagged.proxyURL, ["-i", "\(base)/never"]).text.hasPrefix("HTTP/1.1 404"))

        let strict = try TapwireProcess(config: ["replay": ["from": recordings.path, "notFound": "502"]],
                                        logDirectory: work.appendingPathComponent("strict"))
        defer { strict.stop() }
        XCTAssertTrue(try curlViaProxy(strict.proxyURL, ["-i", "\(base)/never"]).text.hasPrefix("HTTP/1.1 502"))
        // ignoreParams not given here: another ts is another request.
        XCTAssertTrue(try curlViaProxy(strict.proxyURL, ["-i", "\(base)/echo?ts=999&keep=1"]).text.hasPrefix("HTTP/1.1 502"))
        XCTAssertTrue(try curlViaProxy(strict.proxyURL, ["-i", "\(base)/echo?ts=111&keep=1"]).text.hasPrefix("HTTP/1.1 200"))
    }

    func testSIGHUPReadsTheRecordingsAgain() throws {
        let base = origin.base
        let recorder = try TapwireProcess(config: [:], logDirectory: recordings)
        defer { recorder.stop() }
        _ = try curlViaProxy(recorder.proxyURL, ["\(base)/json?first=1"])
        XCTAssertNotNil(try waitForRecord(recordings) { $0.contains("first=1") })
        // --replay-from on the command line is applied again by the reload.
        let replayer = try TapwireProcess(config: [:], extraArguments: ["--replay-from", recordings.path],
                                          logDirectory: work.appendingPathComponent("replayed"))
        defer { replayer.stop() }
        XCTAssertTrue(try curlViaProxy(replayer.proxyURL, ["-i", "\(base)/json?second=1"]).text.hasPrefix("HTTP/1.1 404"))
        _ = try curlViaProxy(recorder.proxyURL, ["\(base)/json?second=1"])
        XCTAssertNotNil(try waitForRecord(recordings) { $0.contains("second=1") })
        kill(replayer.process.processIdentifier, SIGHUP)
        XCTAssertNotNil(replayer.stderr.waitFor { $0.contains("SIGHUP: replay: 2 recorded answer(s)") }, replayer.stderr.all.joined(separator: "\n"))
        XCTAssertNil(replayer.stderr.all.first { $0.contains("differ from the running values") })
        let r = try curlViaProxy(replayer.proxyURL, ["\(base)/json?second=1"])
        XCTAssertTrue(r.text.contains("12345678901234567890"), r.text)
    }

    func testInterceptedHTTPSIsReplayedForAClientThatWouldPickHTTP2() throws {
        let pki = try TestPKI(in: work)
        var tlsOrigin: OriginServer? = try OriginServer(tls: (pki.certificate, pki.key))
        let port = try XCTUnwrap(tlsOrigin?.port)
        let caDirectory = work.appendingPathComponent("ca").path
        let tls: [String: Any] = ["intercept": ["127.0.0.1"], "caDirectory": caDirectory, "upstreamCAFile": pki.caCertificate]
        let url = "https://127.0.0.1:\(port)/json?tls=replay"
        let recorder = try TapwireProcess(config: ["tls": tls], logDirectory: recordings)
        let recorded = try curlViaProxy(recorder.proxyURL, ["--cacert", "\(caDirectory)/ca.pem", url])
        XCTAssertEqual(recorded.status, 0, recorded.stderr)
        XCTAssertNotNil(try waitForRecord(recordings) { $0.contains("tls=replay") })
        recorder.stop()
        tlsOrigin = nil
        XCTAssertNil(tlsOrigin)
        // curl offers h2 by ALPN; replay holds intercepted clients to HTTP/1.1 so it can answer.
        let replayer = try TapwireProcess(config: ["tls": tls], extraArguments: ["--replay-from", recordings.path],
                                          logDirectory: work.appendingPathComponent("replayed"))
        defer { replayer.stop() }
        let r = try curlViaProxy(replayer.proxyURL, ["-i", "--cacert", "\(caDirectory)/ca.pem", "https://127.0.0.1:\(port)/json?tls=replay"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 200"), r.text)
        XCTAssertTrue(r.text.contains("12345678901234567890"), r.text)
        let line = try XCTUnwrap(waitForRecord(replayer.logDirectory) { $0.contains("tls=replay") })
        XCTAssertTrue(line.contains("\"replayedFrom\""), line)
    }
}
