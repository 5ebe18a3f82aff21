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

    private func exportCA() throws -> URL {
        let cfg = work.appendingPathComponent("export.json")
        try JSONSerialization.data(withJSONObject: ["tls": ["caDirectory": caDirectory]]).write(to: cfg)
        let r = try runCommand(try tapwireBinary(), ["ca", "export", "--config", cfg.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        let pem = work.appendingPathComponent("tapwire-ca.pem")
        try r.stdout.write(to: pem)
        return pem
    }

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
}
