import Foundation
import XCTest

/// docs/analytics.md's DuckDB and ClickHouse (chdb) recipes, run on a log with rotated .gz files
/// that a running proxy wrote, read what `tapwire tail` and `tapwire query` read: the same records, counts and fields,
/// and (ClickHouse) each result's exact text.
final class AnalyticsEndToEndTests: XCTestCase {
    /// The venv `make test-deps` fills; TAPWIRE_ANALYTICS_PYTHON names another interpreter.
    private var python: String {
        ProcessInfo.processInfo.environment["TAPWIRE_ANALYTICS_PYTHON"]
            ?? packageRoot.appendingPathComponent(".venv-test/bin/python").path
    }

    func testDuckDBAndClickHouseRecipesReadWhatTapwireReads() throws {
        guard FileManager.default.isExecutableFile(atPath: python) else {
            return XCTFail("no \(python): `make test-deps` installs duckdb and chdb there")
        }
        let origin = try OriginServer()
        // The CONNECT below stays a tunnel record (plain HTTP in it would be decoded).
        let proxy = try TapwireProcess(config: ["log": ["maxFileBytes": 4096, "compress": true], "capture": ["blindTunnels": ["*"]]])
        for i in 0..<12 {
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json"])
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=404"])
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: application/json",
                                                  "--data-binary", #"{"i":\#(i),"price":1.50}"#, "\(origin.base)/echo"])
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: text/plain",
                                                  "--data-binary", "plain \(i)", "\(origin.base)/echo"])
            _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/gzip-json"])
        }
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-p", "\(origin.base)/json"])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "http://127.0.0.1:\(try unusedLoopbackPort())/"])
        let directory = proxy.logDirectory
        func files() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
                .filter { $0.hasPrefix("tapwire") && ($0.hasSuffix(".jsonl") || $0.hasSuffix(".jsonl.gz")) }
        }
        try eventually(timeout: 20, every: 0.1) { try files().filter { $0.hasSuffix(".gz") }.count >= 2 && logLines(directory).count >= 62 }
        XCTAssertEqual(proxy.stop(), 0)
        XCTAssertGreaterThanOrEqual(files().filter { $0.hasSuffix(".gz") }.count, 2, "\(files())")
        // What a compression in progress, or a crash during one, leaves: not gzip yet. The
        // recipes' globs must not read it (tapwire's own readers do not either).
        try Data([0x1F, 0x8B, 0x08]).write(to: directory.appendingPathComponent("tapwire-20990101T000000.jsonl.gz.tmp"))

        // What tapwire reads.
        let tail = try runCommand(try tapwireBinary(), ["tail", "--json", "--log-dir", directory.path])
        XCTAssertEqual(tail.status, 0, tail.stderr)
        let lines = tail.text.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 62)
        let records = try lines.map(parseRecord)
        let http = records.filter { $0["kind"] as? String == "http" }
        var byKind: [String: Int] = [:], statuses: [String: Int] = [:], errors: [String: Int] = [:]
        var methods: [String: String] = [:]
        for r in records { byKind[r["kind"] as? String ?? "?", default: 0] += 1 }
        for r in http {
            let status = ((r["response"] as? [String: Any])?["status"] as? Int) ?? 0
            statuses[String(status), default: 0] += 1
            if let code = (r["error"] as? [String: Any])?["code"] as? String { errors[code, default: 0] += 1 }
            methods[r["id"] as? String ?? "?"] = (r["request"] as? [String: Any])?["method"] as? String
        }
        let ids = http.compactMap { $0["id"] as? String }.sorted()
        XCTAssertEqual(byKind, ["http": 61, "tunnel": 1])
        XCTAssertEqual(errors, ["upstreamConnectFailed": 1])
        // tapwire query agrees with tail.
        func count(_ expression: [String]) throws -> Int? {
            let r = try runCommand(try tapwireBinary(), ["query", "--count", "--log-dir", directory.path] + expression)
            XCTAssertEqual(r.status, 0, r.stderr)
            return Int(r.text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        XCTAssertEqual(try count([]), lines.count)
        XCTAssertEqual(try count(["kind=http"]), http.count)
        XCTAssertEqual(try count(["kind=http", "status=404"]), statuses["404"])

        // What the recipes read.
        let run = try runCommand(python, [packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/analytics_check.py").path,
                                          packageRoot.appendingPathComponent("docs/analytics.md").path, directory.path], timeout: 180)
        XCTAssertEqual(run.status, 0, run.stderr)
        let readings = try XCTUnwrap(JSONSerialization.jsonObject(with: run.stdout) as? [String: [String: Any]], run.text + run.stderr)
        let nonEmptyFiles = try files().filter { !(try logFileContents(directory.appendingPathComponent($0))).isEmpty }
        for engine in ["duckdb", "clickhouse"] {
            let read = try XCTUnwrap(readings[engine], engine)
            XCTAssertEqual(read["total"] as? Int, lines.count, engine)
            XCTAssertEqual(read["byKind"] as? [String: Int], byKind, engine)
            XCTAssertEqual(read["exchanges"] as? Int, http.count, engine)
            XCTAssertEqual(read["statuses"] as? [String: Int], statuses, engine)
            XCTAssertEqual(read["errors"] as? [String: Int], errors, engine)
            XCTAssertEqual(read["ids"] as? [String], ids, engine)
            XCTAssertEqual(read["methods"] as? [String: String], methods, engine)
            XCTAssertEqual(read["files"] as? Int, nonEmptyFiles.count, "\(engine): \(nonEmptyFiles)")
            // /json's items: [1,2,3], twelve times.
            let firstItems = try XCTUnwrap(read["firstItems"] as? [String: String], engine)
            XCTAssertEqual(firstItems.count, 12, engine)
            XCTAssertEqual(Set(firstItems.values), ["1"], engine)
        }
        XCTAssertEqual(readings["duckdb"]?["gzFiles"] as? Int, files().filter { $0.hasSuffix(".gz") }.count)

        // DuckDB: the JSON type of each value, whatever the serializer made of it.
        let types = try XCTUnwrap(readings["duckdb"]?["valueTypes"] as? [String: String])
        for r in http {
            guard let id = r["id"] as? String, let value = (r["result"] as? [String: Any])?["success"] else { continue }
            if value is [String: Any] { XCTAssertEqual(types[id], "OBJECT", id) }
            if value is String { XCTAssertEqual(types[id], "VARCHAR", id) }
        }
        // ClickHouse: each record's result as its exact text (number text such as 1.50 included).
        let results = try XCTUnwrap(readings["clickhouse"]?["results"] as? [String: String])
        XCTAssertEqual(results.count, http.count)
        for line in lines where line.contains(#""kind":"http""#) {
            let id = try XCTUnwrap(try parseRecord(line)["id"] as? String)
            let text = try XCTUnwrap(results[id], id)
            XCTAssertTrue(line.contains(#""result":"# + text + #","error":"#), "\(id): \(text)")
        }
        XCTAssertEqual(results.values.filter { $0 == #"{"success":{"compressed":true,"n":1.50}}"# }.count, 12)
    }
}
