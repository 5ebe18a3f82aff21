import Foundation
import XCTest

/// The interpreter with the `websockets` package (`make test-deps` puts it in .venv-test;
/// TAPWIRE_WS_PYTHON names another).
func webSocketPython() throws -> String {
    let python = ProcessInfo.processInfo.environment["TAPWIRE_WS_PYTHON"]
        ?? packageRoot.appendingPathComponent(".venv-test/bin/python").path
    guard FileManager.default.isExecutableFile(atPath: python) else {
        XCTFail("no \(python): `make test-deps` installs websockets there")
        throw XCTSkip("no websockets interpreter")
    }
    return python
}

/// `ws_origin.py`: a WebSocket origin of the `websockets` package, plain or TLS.
final class WebSocketOrigin {
    let process = Process()
    let port: Int
    private let stdin = Pipe()

    init(tls: (certificate: String, key: String)? = nil, compression: Bool = true) throws {
        process.executableURL = URL(fileURLWithPath: try webSocketPython())
        process.arguments = [packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/ws_origin.py").path]
            + (tls.map { ["--tls", $0.certificate, $0.key] } ?? []) + (compression ? [] : ["--no-compression"])
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = stdin
        process.standardError = FileHandle.standardError
        try process.run()
        guard let line = LineReader(out.fileHandleForReading).waitFor({ Int($0) != nil }), let p = Int(line) else {
            process.terminate()
            throw NSError(domain: "ws-origin", code: 1, userInfo: [NSLocalizedDescriptionKey: "ws origin did not start"])
        }
        port = p
    }

    deinit {
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }
}

/// Runs `ws_client.py` through the proxy (CONNECT, as browsers do); its JSON line.
func webSocketClient(proxy: String, uri: String, scenario: String, extra: [String] = [],
                     environment: [String: String]? = nil) throws -> [String: Any] {
    let r = try runCommand(try webSocketPython(),
                           [packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/ws_client.py").path,
                            proxy, uri, scenario] + extra, environment: environment)
    guard r.status == 0, let line = r.text.split(separator: "\n").last,
          let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
        XCTFail("ws_client \(scenario) failed (\(r.status)): \(r.text) \(r.stderr)")
        return [:]
    }
    return object
}

final class WebSocketEndToEndTests: XCTestCase {
    var work: URL!

    override func setUpWithError() throws {
        work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-ws-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: work)
    }

    private var caDirectory: String { work.appendingPathComponent("tapwire-ca").path }

    private func exportCA() throws -> URL { try exportTapwireCA(caDirectory: caDirectory, into: work) }

    /// wss:// through an intercepted CONNECT: the upgrade reaches the origin with its
    /// Upgrade fields, the 101 comes back, and the messages pass both ways.
    func testUpgradeInsideInterceptedTLSIsForwarded() throws {
        let pki = try TestPKI(in: work)
        let origin = try WebSocketOrigin(tls: (pki.certificate, pki.key))
        let tapwireCA = try exportCA()
        let proxy = try TapwireProcess(config: ["tls": ["intercept": ["127.0.0.1"], "caDirectory": caDirectory,
                                                        "upstreamCAFile": pki.caCertificate]])
        let out = try webSocketClient(proxy: proxy.proxyURL, uri: "wss://127.0.0.1:\(origin.port)/echo", scenario: "text",
                                      extra: ["--cafile", tapwireCA.path])
        XCTAssertEqual(out["received"] as? [AnyHashable], [#"{"hello":"world","n":1}"#, "plain words"], "\(out)")
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(#""kind":"websocket""#) })
        let record = try parseRecord(line)
        XCTAssertEqual(record["status"] as? Int, 101, line)
        XCTAssertEqual((record["request"] as? [String: Any])?["url"] as? String, "https://127.0.0.1:\(origin.port)/echo", line)
        let id = try XCTUnwrap(record["id"] as? String)
        let messages = try logLines(proxy.logDirectory).filter { $0.contains(#""connection":"\#(id)""#) }
        XCTAssertEqual(messages.count, 4, "decrypted messages are recorded too")
        XCTAssertTrue(messages.contains { $0.contains(#""success":"plain words""#) }, "\(messages)")
    }

    /// ws:// through a proxy is a CONNECT with the upgrade inside (RFC 6455 §4.1): the plain
    /// HTTP in it is decoded, so the upgrade is an exchange and the connection a `websocket`
    /// record; a `capture.blindTunnels` host stays a blind `tunnel`.
    func testWebSocketThroughConnectIsDecodedUnlessTheHostIsBlind() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess()
        let out = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo", scenario: "text")
        XCTAssertEqual((out["received"] as? [Any])?.count, 2, "\(out)")
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains(#""kind":"websocket""#) })
        XCTAssertTrue(line.contains(#""url":"http://127.0.0.1:\#(origin.port)/echo""#), line)

        let blind = try TapwireProcess(config: ["capture": ["blindTunnels": ["127.0.0.1"]]])
        _ = try webSocketClient(proxy: blind.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo", scenario: "text")
        let tunnel = try XCTUnwrap(waitForRecord(blind.logDirectory) { $0.contains(#""kind":"tunnel""#) })
        XCTAssertTrue(tunnel.contains(#""target":"127.0.0.1:\#(origin.port)""#), tunnel)
        XCTAssertNil(try waitForRecord(blind.logDirectory, timeout: 0.5) { $0.contains(#""kind":"websocket""#) })
    }

    // MARK: message records

    /// Every record of the connection to `path` once its `websocket` record is written:
    /// its messages in log order, and the connection record.
    func connection(_ proxy: TapwireProcess, path: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> (messages: [[String: Any]], record: [String: Any]) {
        let recordLine = try XCTUnwrap(waitForRecord(proxy.logDirectory) {
            $0.contains(#""kind":"websocket""#) && $0.contains(#""target":"http"#) && $0.contains(path)
        }, "no websocket record for \(path)", file: file, line: line)
        let record = try parseRecord(recordLine)
        let id = try XCTUnwrap(record["id"] as? String)
        let messages = try logLines(proxy.logDirectory).filter { $0.contains(#""connection":"\#(id)""#) }.map(parseRecord)
        return (messages, record)
    }

    func success(_ message: [String: Any]) -> Any? { (message["result"] as? [String: Any])?["success"] }

    func testTextBinaryFragmentedAndPingsAreRecordedCompressedOrNot() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess()
        for compression in [true, false] {
            let extra = compression ? [] : ["--no-compression"]
            let tag = compression ? "deflate" : "plain"
            _ = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo?t=\(tag)", scenario: "text", extra: extra)
            let text = try connection(proxy, path: "t=\(tag)")
            XCTAssertEqual(text.messages.map { $0["direction"] as? String }, ["client", "server", "client", "server"])
            XCTAssertEqual(success(text.messages[0]) as? NSDictionary, ["hello": "world", "n": 1] as NSDictionary, "JSON text is JSON")
            XCTAssertEqual(success(text.messages[2]) as? String, "plain words", "other text is a string")
            XCTAssertEqual(text.messages[2]["size"] as? Int, 11)
            XCTAssertEqual(text.messages[2]["opcode"] as? String, "text")
            XCTAssertNotNil(text.messages[2]["time"] as? String)
            XCTAssertEqual(text.record["messagesFromClient"] as? Int, 2)
            XCTAssertEqual(text.record["closeCode"] as? Int, 1000)
            XCTAssertTrue(text.record["frameError"] is NSNull, "\(text.record)")
            let extensions = ((text.record["response"] as? [String: Any])?["headers"] as? [[String]])?
                .first { $0[0].lowercased() == "sec-websocket-extensions" }
            XCTAssertEqual(extensions != nil, compression, "permessage-deflate negotiated only when asked")

            _ = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo?b=\(tag)", scenario: "binary", extra: extra)
            let binary = try connection(proxy, path: "b=\(tag)")
            XCTAssertEqual(binary.messages.map { $0["opcode"] as? String }, ["binary", "binary"])
            XCTAssertEqual(success(binary.messages[1]) as? [String: Int], ["size": 256])

            _ = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/fragments?f=\(tag)", scenario: "fragmented", extra: extra)
            let fragmented = try connection(proxy, path: "f=\(tag)")
            XCTAssertEqual(fragmented.messages.count, 2, "each side's fragments are one message")
            XCTAssertEqual((success(fragmented.messages[1]) as? [String: String])?["parts"], String(repeating: "abc", count: 100))

            _ = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo?p=\(tag)", scenario: "ping", extra: extra)
            let pings = try connection(proxy, path: "p=\(tag)")
            XCTAssertEqual(pings.record["pingsFromClient"] as? Int, 2)
            XCTAssertEqual(pings.record["pongsFromUpstream"] as? Int, 2)
            XCTAssertEqual(pings.messages.count, 2)
        }
    }

    func testLargeMessagesAreCutAtMaxBodyBytesAndCloseCodesKept() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess()
        _ = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo?large=1", scenario: "large")
        let large = try connection(proxy, path: "large=1")
        XCTAssertEqual(large.messages.map { $0["size"] as? Int }, [(3 << 20) + 11, (3 << 20) + 11])
        let failure = (large.messages[0]["result"] as? [String: Any])?["failure"] as? [String: Any]
        XCTAssertEqual(failure?["reason"] as? String, "inputDataTruncated", "\(large.messages[0])")

        let out = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/close?code=4001&reason=done", scenario: "close")
        XCTAssertEqual(out["closeCode"] as? Int, 4001)
        let closed = try connection(proxy, path: "code=4001")
        XCTAssertEqual(closed.record["closeCode"] as? Int, 4001)
        XCTAssertEqual(closed.record["closeReason"] as? String, "done")
        XCTAssertEqual(closed.record["closeFrom"] as? String, "server")
    }

    func testBothDirectionsAtOnce() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess()
        let out = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/push?n=20", scenario: "both")
        XCTAssertEqual(out["received"] as? Int, 40)
        let both = try connection(proxy, path: "push?n=20")
        XCTAssertEqual(both.record["messagesFromClient"] as? Int, 20)
        XCTAssertEqual(both.record["messagesFromUpstream"] as? Int, 40)
        XCTAssertEqual(both.messages.count, 60)
        let ups = both.messages.filter { $0["direction"] as? String == "client" }
            .sorted { ($0["id"] as? String ?? "") < ($1["id"] as? String ?? "") }
            .compactMap { (success($0) as? [String: Int])?["up"] }
        XCTAssertEqual(ups, Array(0..<20), "one direction's messages in order of their ids")
    }

    /// `log.whenBehind: wait` with a decode queue far too small: the connection is held
    /// (neither side read) while the log is behind, instead of its parsing being given up,
    /// so every message in both directions has its record.
    func testWaitHoldsAConnectionWhileTheLogIsBehindAndRecordsEveryMessage() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess(config: ["log": ["whenBehind": "wait", "decodeQueueCapacity": 16,
                                                        "decodeQueueBytes": 65_536]])
        // 8 KB messages through a 64 KiB decode queue: it fills whatever the workers' pace.
        let n = 2000
        let out = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/push?n=\(n)", scenario: "flood",
                                      environment: ProcessInfo.processInfo.environment.merging(["N": "\(n)", "PAD": "8000"]) { $1 })
        XCTAssertEqual(out["received"] as? Int, 2 * n, "\(out)")
        let metrics = try runCommand("curl", ["--noproxy", "*", "-s", "--max-time", "10", "\(proxy.proxyURL)/metrics"]).text
        let holds = metrics.split(separator: "\n").first { $0.hasPrefix("tapwire_holds_total ") }
            .flatMap { Int($0.split(separator: " ")[1]) }
        XCTAssertGreaterThan(holds ?? 0, 0, "the queue never filled, so nothing was shown")
        let flood = try connection(proxy, path: "push?n=\(n)")
        XCTAssertNil(flood.record["frameError"] as? String, "parsing was given up: \(flood.record)")
        XCTAssertEqual(flood.record["messagesFromClient"] as? Int, n)
        XCTAssertEqual(flood.record["messagesFromUpstream"] as? Int, 2 * n)
        XCTAssertEqual(flood.messages.count, 3 * n)
        // Two workers' batches may interleave in the file; the ids keep the message order.
        let sent = flood.messages.filter { $0["direction"] as? String == "client" }
            .sorted { ($0["id"] as? String ?? "") < ($1["id"] as? String ?? "") }
            .compactMap { (success($0) as? [String: Any])?["flood"] as? Int }
        XCTAssertEqual(sent, Array(0..<n), "one direction's messages in order of their ids")
        XCTAssertFalse(try logLines(proxy.logDirectory).contains { $0.contains(#""kind":"loss""#) })
    }

    /// Several connections held at once, compressed or not, are all released by the log's
    /// caught-up signal (one loop may hold several): each keeps every message, in order.
    func testWaitHoldsSeveralConnectionsAtOnceAndEachKeepsEveryMessage() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess(config: ["log": ["whenBehind": "wait", "decodeQueueCapacity": 16,
                                                        "decodeQueueBytes": 65_536]])
        // Distinct push counts name the connections; the last one without permessage-deflate.
        let counts = [1500, 1501, 1502, 1503]
        let outs = Locked([Int: [String: Any]]())
        DispatchQueue.concurrentPerform(iterations: counts.count) { i in
            let n = counts[i]
            let out = try? webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/push?n=\(n)", scenario: "flood",
                                           extra: i == counts.count - 1 ? ["--no-compression"] : [],
                                           environment: ProcessInfo.processInfo.environment.merging(["N": "\(n)"]) { $1 })
            outs.update { $0[n] = out ?? [:] }
        }
        for n in counts {
            XCTAssertEqual(outs.value[n]?["received"] as? Int, 2 * n, "connection \(n)")
            let flood = try connection(proxy, path: "push?n=\(n)")
            XCTAssertNil(flood.record["frameError"] as? String, "\(n): parsing was given up: \(flood.record)")
            XCTAssertEqual(flood.messages.count, 3 * n, "\(n): a record for every message both ways")
            let sent = flood.messages.filter { $0["direction"] as? String == "client" }
                .sorted { ($0["id"] as? String ?? "") < ($1["id"] as? String ?? "") }
                .compactMap { (success($0) as? [String: Any])?["flood"] as? Int }
            XCTAssertEqual(sent, Array(0..<n), "\(n): one direction's messages in order of their ids")
        }
        let metrics = try runCommand("curl", ["--noproxy", "*", "-s", "--max-time", "10", "\(proxy.proxyURL)/metrics"]).text
        XCTAssertTrue(metrics.contains("\ntapwire_held_clients 0\n"), "a connection is still counted as held")
    }

    func testAMalformedFrameStopsParsingNotForwarding() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess()
        let out = try webSocketClient(proxy: proxy.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/malformed", scenario: "malformed")
        XCTAssertNotNil(out["error"], "the client got the bad frame itself: \(out)")
        let bad = try connection(proxy, path: "/malformed")
        XCTAssertEqual(bad.record["frameError"] as? String, "server: a frame with the reserved opcode 3")
        XCTAssertGreaterThan(try XCTUnwrap(bad.record["bytesFromUpstream"] as? Int), 1, "relayed anyway")
        XCTAssertEqual(bad.messages.count, 1, "the message before it is kept")
    }

    func testMessageRecordsCanBeTurnedOffAndRulesPickSerializers() throws {
        let origin = try WebSocketOrigin()
        let off = try TapwireProcess(config: ["capture": ["websocketMessages": false]])
        _ = try webSocketClient(proxy: off.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo?off=1", scenario: "text")
        let quiet = try connection(off, path: "off=1")
        XCTAssertTrue(quiet.messages.isEmpty)
        XCTAssertTrue(quiet.record["messagesFromClient"] is NSNull)

        let ruled = try TapwireProcess(config: ["rules": [["name": "ws-base64", "match": ["websocket": true, "path": "/echo"],
                                                            "serializer": ["type": "data", "base64Bytes": 4]]]])
        _ = try webSocketClient(proxy: ruled.proxyURL, uri: "ws://127.0.0.1:\(origin.port)/echo?r=1", scenario: "binary")
        let binary = try connection(ruled, path: "r=1")
        XCTAssertEqual(success(binary.messages[0]) as? NSDictionary, ["base64": "AAECAw==", "size": 256] as NSDictionary)
    }

    /// A browser-style upgrade (absolute-form GET through the proxy, no CONNECT), from curl.
    func testCurlUpgradeThroughTheProxy() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess()
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-i", "--http1.1", "--max-time", "2", "-H", "Connection: Upgrade",
                                                  "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                                                  "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                                                  "http://127.0.0.1:\(origin.port)/echo?curl=1"], timeout: 10)
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 101"), r.text)
        XCTAssertTrue(r.text.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "the origin's accept key came back: \(r.text)")
        let ws = try connection(proxy, path: "curl=1")
        XCTAssertEqual(ws.record["status"] as? Int, 101)
    }

    /// Records are written as messages complete: a kill -9 mid-connection loses none of them.
    func testKill9MidConnectionLeavesEveryCompletedMessageWhole() throws {
        let origin = try WebSocketOrigin()
        let proxy = try TapwireProcess()
        let client = Process()
        client.executableURL = URL(fileURLWithPath: try webSocketPython())
        client.arguments = [packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/ws_client.py").path,
                            proxy.proxyURL, "ws://127.0.0.1:\(origin.port)/echo?kill=1", "hold"]
        client.standardOutput = FileHandle.nullDevice
        try client.run()
        defer { client.terminate(); client.waitUntilExit() }
        XCTAssertTrue(try eventually(timeout: 10) {
            try logLines(proxy.logDirectory).filter { $0.contains(#""kind":"wsMessage""#) }.count == 2
        }, "both messages recorded while the connection is open")
        kill(proxy.process.processIdentifier, SIGKILL)
        proxy.process.waitUntilExit()
        let lines = try logLines(proxy.logDirectory)
        let messages = try lines.filter { $0.contains(#""kind":"wsMessage""#) }.map(parseRecord)
        XCTAssertEqual(messages.map { success($0) as? [String: String] }, [["before": "kill"], ["before": "kill"]])
        XCTAssertFalse(lines.contains { $0.contains(#""kind":"websocket""#) }, "the connection never ended")
    }
}
