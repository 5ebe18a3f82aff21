import Foundation
import XCTest

/// `tapwire tail`, `har`, `env` and `check-config` as a user runs them.
final class LogCommandsEndToEndTests: XCTestCase {
    func testTailHarAndFiltersOnARealLog() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json"])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=404"])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: application/json",
                                              "--data-binary", #"{"q":1}"#, "\(origin.base)/echo"])
        XCTAssertEqual(proxy.stop(), 0)
        let bin = try tapwireBinary()
        let dir = proxy.logDirectory.path

        let all = try runCommand(bin, ["tail", "--log-dir", dir])
        XCTAssertEqual(all.status, 0, all.stderr)
        let lines = all.text.split(separator: "\n")
        XCTAssertEqual(lines.count, 3, all.text)
        XCTAssertTrue(lines[0].contains("GET \(origin.base)/json 200") && lines[0].contains("json"), String(lines[0]))
        XCTAssertFalse(all.text.contains("\u{1B}["), "colour codes when stdout is not a terminal")

        let notFound = try runCommand(bin, ["tail", "--log-dir", dir, "status=4xx"])
        XCTAssertEqual(notFound.text.split(separator: "\n").count, 1, notFound.text)
        XCTAssertTrue(notFound.text.contains("404"))
        let raw = try runCommand(bin, ["tail", "--log-dir", dir, "--json", "method=POST"])
        XCTAssertTrue(raw.text.hasPrefix("{\"id\":"), raw.text)
        XCTAssertEqual(raw.text.split(separator: "\n").count, 1)

        let bad = try runCommand(bin, ["tail", "--log-dir", dir, "colour=red"])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("colour=red"), bad.stderr)

        let harFile = proxy.workDirectory.appendingPathComponent("out.har")
        let har = try runCommand(bin, ["har", "--log-dir", dir, "-o", harFile.path])
        XCTAssertEqual(har.status, 0, har.stderr)
        let doc = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: harFile)) as? [String: Any])
        let entries = try XCTUnwrap((doc["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        XCTAssertEqual(entries.count, 3)
        for e in entries {
            let t = try XCTUnwrap(e["timings"] as? [String: Double])
            let sum = ["blocked", "dns", "connect", "send", "wait", "receive"].compactMap { t[$0] }.filter { $0 >= 0 }.reduce(0, +)
            XCTAssertEqual(try XCTUnwrap(e["time"] as? Double), sum, accuracy: 0.002)
        }
        let post = try XCTUnwrap(entries.first { ($0["request"] as? [String: Any])?["method"] as? String == "POST" })
        let postData = try XCTUnwrap((post["request"] as? [String: Any])?["postData"] as? [String: Any])
        XCTAssertEqual(postData["text"] as? String, #"{"q":1}"#)
    }

    func testEnvPrintsExportsForTheConfiguredListener() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-env-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cfg = dir.appendingPathComponent("c.json")
        try Data(#"{"listen": ["127.0.0.1:3128"]}"#.utf8).write(to: cfg)
        let r = try runCommand(try tapwireBinary(), ["env", "--config", cfg.path])
        XCTAssertEqual(r.status, 0)
        XCTAssertTrue(r.text.hasPrefix("export HTTP_PROXY=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 NO_PROXY="), r.text)
        let shell = try runCommand("sh", ["-c", "eval \"$(\(try tapwireBinary()) env --config \(cfg.path))\"; echo $HTTP_PROXY"])
        XCTAssertEqual(shell.text, "http://127.0.0.1:3128\n")
    }

    func testCheckConfigExitCodes() throws {
        let bin = try tapwireBinary()
        let good = try runCommand(bin, ["check-config", packageRoot.appendingPathComponent("config/tapwire.json").path])
        XCTAssertEqual(good.status, 0, good.stderr)
        XCTAssertTrue(good.text.contains("ok"), good.text)
        let flagged = try runCommand(bin, ["check-config", "--config", packageRoot.appendingPathComponent("config/tapwire.json").path])
        XCTAssertEqual(flagged.status, 0, "--config FILE, as every other command takes it: \(flagged.stderr)")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-cc-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let cfg = dir.appendingPathComponent("bad.json")
        try Data(#"{"rules": [{"name": "a", "serializer": {"type": "json"}}, {"name": "b", "match": {"status": ["6xx"]}, "serializer": {"type": "json"}}, {"name": "c", "serializer": {"type": "json"}, "x": 1}]}"#.utf8).write(to: cfg)
        let bad = try runCommand(bin, ["check-config", cfg.path])
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("rules[1].match.status[0]: expected a status"), bad.stderr)
        XCTAssertTrue(bad.stderr.contains("rules[2].x: unknown key"), bad.stderr)
        // One line per error on stderr (docs/configuration.md); the count goes to stdout.
        XCTAssertEqual(bad.stderr.split(separator: "\n").count, 2, bad.stderr)
        XCTAssertEqual(bad.text, "\(cfg.path): 2 error(s)\n")
        XCTAssertEqual(try runCommand(bin, ["check-config"]).status, 2)
        for wrong in [["frobnicate"], ["run", "--frobnicate"]] {
            let usage = try runCommand(bin, wrong)
            XCTAssertEqual(usage.status, 2)
            XCTAssertEqual(usage.stderr.split(separator: "\n").count, 1, usage.stderr)
        }

        // A missing file is named once.
        let missing = dir.appendingPathComponent("missing.json").path
        let gone = try runCommand(bin, ["check-config", missing])
        XCTAssertEqual(gone.status, 2)
        XCTAssertEqual(gone.stderr.components(separatedBy: missing).count - 1, 1, "once: \(gone.stderr)")
        XCTAssertTrue(gone.stderr.contains("\(missing): does not exist\n"), gone.stderr)

        let off = dir.appendingPathComponent("off.json")
        try Data(#"{"log": {"enabled": false}}"#.utf8).write(to: off)
        let offResult = try runCommand(bin, ["check-config", off.path])
        XCTAssertEqual(offResult.status, 0, offResult.stderr)
        XCTAssertTrue(offResult.text.contains("logging off"), offResult.text)
    }

    /// `--help` after any command prints the usage and succeeds, as users try it.
    func testHelpAfterEveryCommand() throws {
        let bin = try tapwireBinary()
        for command in [["run"], ["check-config"], ["tail"], ["har"], ["env"], ["ca"], ["ca", "export"], []] {
            for flag in ["--help", "-h"] {
                let r = try runCommand(bin, command + [flag])
                XCTAssertEqual(r.status, 0, "\(command) \(flag): \(r.stderr)")
                XCTAssertTrue(r.text.hasPrefix("usage: tapwire run"), "\(command) \(flag): \(r.text)")
            }
        }
    }
}

/// `/metrics` as a Prometheus server reads it.
final class MetricsEndToEndTests: XCTestCase {
    func testMetricsParseAsPrometheusText() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json"])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=503"])
        // Both exchanges are counted once they have ended, which may be just after curl is done.
        var text = Data()
        try eventually(every: 0.05) {
            text = try runCommand("curl", ["--noproxy", "*", "-s", "\(proxy.proxyURL)/metrics"]).stdout
            return String(decoding: text, as: UTF8.self).contains("\ntapwire_exchange_duration_seconds_count 2\n")
        }
        let script = """
        import sys
        from prometheus_client.parser import text_string_to_metric_families
        fams = {f.name: f for f in text_string_to_metric_families(sys.stdin.read())}
        def value(name, **labels):
            for f in fams.values():
                for s in f.samples:
                    if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                        return s.value
            raise SystemExit("missing " + name + str(labels))
        print(int(value("tapwire_exchanges_total", status_class="2xx")), int(value("tapwire_exchanges_total", status_class="5xx")),
              int(value("tapwire_exchange_duration_seconds_count")), value("tapwire_records_written_total") >= 0,
              fams["tapwire_exchange_duration_seconds"].type, value("tapwire_client_connections") >= 1)
        """
        let r = try runCommand("python3", ["-c", script], input: text)
        if r.stderr.contains("No module named 'prometheus_client'") {
            throw XCTSkip("prometheus_client is not installed (make test-deps installs it)")
        }
        XCTAssertEqual(r.status, 0, r.stderr)
        XCTAssertEqual(r.text, "1 1 2 True histogram True\n", r.stderr)
    }
}
