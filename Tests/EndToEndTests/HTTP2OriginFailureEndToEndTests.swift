import Foundation
import XCTest

/// An HTTP/2 origin that resets a stream or sends GOAWAY mid-response (Resources/h2_origin.py),
/// reached through an h2c reverse listener, so that the client's streams (nghttp, one
/// connection) share one origin connection.
final class HTTP2OriginFailureEndToEndTests: XCTestCase {
    var work: URL!
    var origin: Process?
    var originPort = 0
    var originOut: LineReader!
    private let stdin = Pipe()

    override func setUpWithError() throws {
        guard (try? runCommand("/bin/sh", ["-c", "command -v nghttp"]))?.status == 0 else {
            throw XCTSkip("these tests need nghttp (Debian nghttp2-client; make test-deps installs it)")
        }
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-h2f-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        let pki = try TestPKI(in: work)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/h2_origin.py").path,
                       pki.certificate, pki.key]
        let out = Pipe()
        p.standardOutput = out
        p.standardInput = stdin
        p.standardError = FileHandle.standardError
        try p.run()
        origin = p
        originOut = LineReader(out.fileHandleForReading)
        guard let line = originOut.waitFor({ Int($0) != nil }), let port = Int(line) else {
            throw NSError(domain: "h2-origin", code: 1, userInfo: [NSLocalizedDescriptionKey: "h2_origin.py did not start"])
        }
        originPort = port
    }

    override func tearDown() {
        try? stdin.fileHandleForWriting.close()
        if let origin, origin.isRunning { origin.terminate(); origin.waitUntilExit() }
        if let work { try? FileManager.default.removeItem(at: work) }
    }

    private func startProxy() throws -> TapwireProcess {
        try TapwireProcess(config: ["listen": [["address": "127.0.0.1:0", "mode": "reverse", "upstream": "https://127.0.0.1:\(originPort)",
                                                "protocols": ["http/1.1", "h2c"]]],
                                    "tls": ["upstreamCAFile": work.appendingPathComponent("origin-ca.pem").path]])
    }

    private func nghttp(_ proxy: TapwireProcess, _ paths: [String]) throws -> CommandResult {
        try runCommand("nghttp", ["-t", "20"] + paths.map { "http://127.0.0.1:\(proxy.port)\($0)" }, timeout: 30)
    }

    private func record(_ proxy: TapwireProcess, _ path: String) throws -> [String: Any] {
        try parseRecord(try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("\(originPort)\(path)\"") }, "no record for \(path)"))
    }

    private var originConnections: Int { originOut.all.filter { $0.hasPrefix("connection ") }.count }

    /// RST_STREAM mid-response fails that exchange only, and says so; the streams beside it on
    /// the same origin connection finish.
    func testAStreamResetMidResponseFailsThatExchangeOnly() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        // Exchanges first, one client connection at a time, until each event loop has its
        // origin connection (the pool is per loop).
        for i in 0..<12 { XCTAssertEqual(try nghttp(proxy, ["/ok?warm=\(i)"]).text, "ok") }
        let warm = originConnections
        let r = try nghttp(proxy, ["/slow", "/rst", "/ok"])
        XCTAssertTrue(r.text.contains("slow") && r.text.contains("ok"), r.text + r.stderr)
        XCTAssertTrue(r.stderr.contains("processed=2"), "the reset stream is reset to the client too: \(r.stderr)")
        let reset = try record(proxy, "/rst")
        let error = try XCTUnwrap(reset["error"] as? [String: Any], "\(reset)")
        XCTAssertEqual(error["code"] as? String, "upstreamReset")
        XCTAssertEqual(error["message"] as? String, "the origin reset the stream (INTERNAL_ERROR) before the response was complete")
        XCTAssertEqual((reset["data"] as? [String: Any])?["truncated"] as? Bool, true)
        for path in ["/slow", "/ok"] {
            let rec = try record(proxy, path)
            XCTAssertTrue(rec["error"] is NSNull, "\(path): \(rec)")
            XCTAssertEqual((rec["response"] as? [String: Any])?["status"] as? Int, 200)
            XCTAssertEqual((rec["metrics"] as? [String: Any])?["connectionReused"] as? Bool, true, "\(path) on the pooled connection")
        }
        XCTAssertEqual((reset["metrics"] as? [String: Any])?["connectionReused"] as? Bool, true)
        XCTAssertEqual(originConnections, warm, "the pooled connection carried the three streams, and lived on")
        XCTAssertLessThanOrEqual(warm, 2, "one origin connection per event loop")
    }

    /// An origin's header list is bounded by limits.maxHeaderBytes as a client's is: an HPACK
    /// bomb (one field referred to thousands of times) resets that stream, with a record that
    /// names the limit, and the connection goes on for the streams beside it.
    func testAnOriginHeaderListPastTheLimitResetsThatStreamOnly() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        let r = try nghttp(proxy, ["/slow", "/bomb", "/ok"])
        XCTAssertTrue(r.text.contains("slow") && r.text.contains("ok"), r.text + r.stderr)
        XCTAssertFalse(r.text.contains("bbbbbbbbbb"), "no field of the bomb reached the client")
        let bomb = try record(proxy, "/bomb")
        let error = try XCTUnwrap(bomb["error"] as? [String: Any], "\(bomb)")
        XCTAssertEqual(error["message"] as? String, "the origin's header list passed limits.maxHeaderBytes (65536)", "\(error)")
        for path in ["/slow", "/ok"] {
            let rec = try record(proxy, path)
            XCTAssertTrue(rec["error"] is NSNull, "\(path): \(rec)")
            XCTAssertEqual((rec["response"] as? [String: Any])?["status"] as? Int, 200)
        }
        XCTAssertLessThan(proxy.rssBytes, 100 << 20, "the 80 MB list was never kept")
    }

    /// Requests `paths` on one client connection (so on one origin connection), checks that
    /// they all ended before nghttp's own 8 s, and returns each path's record.
    private func streamsBesideABreakingOne(_ proxy: TapwireProcess, _ paths: [String]) throws -> [(String, [String: Any])] {
        let r = try runCommand("nghttp", ["-t", "8"] + paths.map { "http://127.0.0.1:\(proxy.port)\($0)" }, timeout: 30)
        XCTAssertFalse(r.text.contains("Timeout") || r.stderr.contains("Timeout"), "the streams ended before nghttp's 8 s: \(r.stderr)")
        return try paths.map { ($0, try record(proxy, $0)) }
    }

    /// A protocol error in the origin's frames (a connection WINDOW_UPDATE of 0): nghttp2
    /// answers with GOAWAY PROTOCOL_ERROR, which reaches the origin, and the streams on that
    /// connection end at once with records naming the cause; the next exchange gets a fresh
    /// connection. Before, the streams waited for the client to give up.
    func testAnOriginProtocolErrorEndsItsStreamsAtOnceNamingTheCause() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        for (path, rec) in try streamsBesideABreakingOne(proxy, ["/slow?pe=1", "/malformed"]) {
            let error = try XCTUnwrap(rec["error"] as? [String: Any], "\(path): \(rec)")
            XCTAssertEqual(error["code"] as? String, "upstreamReset", "\(path): \(error)")
            let message = error["message"] as? String ?? ""
            XCTAssertTrue(message.hasPrefix("the origin broke the HTTP/2 protocol") && message.hasSuffix("GOAWAY PROTOCOL_ERROR"),
                          "\(path): \(message)")
        }
        XCTAssertNotNil(originOut.waitFor({ $0 == "goaway 1" }), "the GOAWAY reached the origin: \(originOut.all)")
        XCTAssertEqual(try nghttp(proxy, ["/ok?after=1"]).text, "ok")
    }

    /// An origin that floods PINGs without reading the answers: nghttp2 refuses the session
    /// (a fatal error), and the streams on it end at once naming the flood.
    func testAnOriginFloodEndsItsStreamsAtOnceNamingTheCause() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        for (path, rec) in try streamsBesideABreakingOne(proxy, ["/slow?pf=1", "/pingflood"]) {
            let message = (rec["error"] as? [String: Any])?["message"] as? String ?? ""
            XCTAssertTrue(message.hasPrefix("the origin broke the HTTP/2 protocol (Flooding"), "\(path): \(rec)")
        }
        XCTAssertNotNil(originOut.waitFor(timeout: 10, { $0 == "goaway 11" }), "ENHANCE_YOUR_CALM reached the origin: \(originOut.all)")
        XCTAssertEqual(try nghttp(proxy, ["/ok?after=2"]).text, "ok")
    }

    /// An upload to an h2 origin whose window stays closed is held back, not buffered: Tapwire
    /// keeps about limits.highWaterBytes for the stream and stops reading its client.
    func testAnUploadToAnOriginThatDoesNotReadIsHeldBackNotBuffered() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        let upload = work.appendingPathComponent("upload.bin")
        try Data(count: 96 << 20).write(to: upload)
        let before = proxy.rssBytes
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "-o", "/dev/null", "--max-time", "6", "--data-binary", "@\(upload.path)",
                          "-H", "Content-Type: application/octet-stream", "http://127.0.0.1:\(proxy.port)/hold"]
        try curl.run()
        defer { if curl.isRunning { curl.terminate() }; curl.waitUntilExit() }
        // Long enough for loopback to carry the whole 96 MB if anything took it.
        Thread.sleep(forTimeInterval: 3)
        let grown = proxy.rssBytes - before
        XCTAssertLessThan(grown, 32 << 20, "Tapwire grew by \(grown >> 20) MB holding an upload the origin does not read")
    }

    /// Streams that start together before any connection to the origin exists wait for the
    /// first handshake and share its HTTP/2 connection.
    func testABurstToANewOriginSharesItsFirstConnection() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        let r = try nghttp(proxy, (0..<8).map { "/slow?burst=\($0)" })
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(occurrences(of: "slow", in: r.text), 8, r.text)
        XCTAssertEqual(originConnections, 1, "\(originOut.all)")
    }

    /// GOAWAY naming the stream in flight as the last: that stream finishes whole, and the
    /// next exchange opens a new connection.
    func testGoawayLetsTheLastStreamFinishAndTheNextOpensAConnection() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        let r = try nghttp(proxy, ["/goaway"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("firstsecond"), r.text)
        XCTAssertTrue(try record(proxy, "/goaway")["error"] is NSNull)
        XCTAssertEqual(try nghttp(proxy, ["/ok"]).text, "ok")
        XCTAssertTrue(eventually { self.originConnections == 2 }, "\(originOut.all)")
    }

    /// GOAWAY naming an earlier stream as the last: the stream after it was never processed
    /// (REFUSED_STREAM), and a GET is sent again on a fresh connection.
    func testAStreamRefusedByGoawayIsRetriedOnAFreshConnection() throws {
        let proxy = try startProxy()
        defer { proxy.stop() }
        // A pooled connection first (on each loop, see above), on which /refuse is not the first stream.
        for i in 0..<12 { XCTAssertEqual(try nghttp(proxy, ["/ok?warm=\(i)"]).text, "ok") }
        let warm = originConnections
        let r = try nghttp(proxy, ["/refuse"])
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertTrue(r.text.contains("fresh"), r.text)
        let refused = try record(proxy, "/refuse")
        XCTAssertTrue(refused["error"] is NSNull, "\(refused)")
        XCTAssertEqual((refused["metrics"] as? [String: Any])?["connectionReused"] as? Bool, false, "sent again on a new connection")
        XCTAssertEqual(originConnections, warm + 1)
    }
}
