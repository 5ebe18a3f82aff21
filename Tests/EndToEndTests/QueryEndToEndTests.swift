import Foundation
import XCTest

/// `tapwire query` (and `tail` / `har` with the same expressions) on a log a running proxy
/// rotates and compresses while it is being queried.
final class QueryEndToEndTests: XCTestCase {
    func testQueryOverARotatingLog() throws {
        let origin = try OriginServer()
        // 4 KiB files: every few exchanges the log rotates and the archiver gzips the old file.
        let proxy = try TapwireProcess(config: ["log": ["maxFileBytes": 4096, "maxFiles": 1000]])
        let bin = try tapwireBinary()
        let dir = proxy.logDirectory.path

        // Traffic in the background; meanwhile queries run back to back over the rotating log.
        let done = DispatchSemaphore(value: 0)
        let failures = LockedList()
        DispatchQueue.global().async {
            for i in 0..<30 {
                do {
                    switch i % 5 {
                    case 0: _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/status?code=503&n=\(i)"])
                    case 1: _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: application/json",
                                                                  "--data-binary", #"{"user":{"role":"admin","n":\#(i)}}"#,
                                                                  "\(origin.base)/echo?n=\(i)"])
                    default: _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/json?n=\(i)"])
                    }
                } catch {
                    failures.append("curl \(i): \(error)")
                }
            }
            done.signal()
        }
        var counts: [Int] = []
        while done.wait(timeout: .now()) == .timedOut {
            let r = try runCommand(bin, ["query", "--log-dir", dir, "--count", "kind=http"])
            XCTAssertEqual(r.status, 0, r.stderr)
            counts.append(Int(r.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1)
            let ids = try runCommand(bin, ["query", "--log-dir", dir, "--json", "kind=http"]).text
                .split(separator: "\n").map { String($0.prefix(40)) }
            XCTAssertEqual(Set(ids).count, ids.count, "a record read twice while the log rotated")
        }
        XCTAssertEqual(failures.items, [])
        XCTAssertEqual(counts, counts.sorted(), "a later query saw fewer records: \(counts)")
        XCTAssertEqual(proxy.stop(), 0)
        XCTAssertGreaterThanOrEqual(try rotatedLogFiles(proxy.logDirectory).filter { $0.hasSuffix(".gz") }.count, 3)

        // After the stop: everything, in the log's own order, exactly as stored.
        let stored = try linesInRotationOrder(proxy.logDirectory)
        XCTAssertEqual(stored.count, 30)
        func lines(_ words: [String]) throws -> [String] {
            let r = try runCommand(bin, ["query", "--log-dir", dir, "--json"] + words)
            XCTAssertEqual(r.status, 0, r.stderr)
            return r.text.split(separator: "\n").map(String.init)
        }
        // Compared by id: a failing comparison of whole records would print pages.
        let ids = stored.map(QueryEndToEndTests.id)
        XCTAssertEqual(try lines([]).map(QueryEndToEndTests.id), ids)
        XCTAssertTrue(try lines([]) == stored, "query --json changed the bytes of a record")
        XCTAssertEqual(try lines(["--reverse"]).map(QueryEndToEndTests.id), ids.reversed())
        XCTAssertEqual(try lines(["--reverse", "--limit", "4"]).map(QueryEndToEndTests.id), Array(ids.reversed().prefix(4)))
        XCTAssertEqual(try lines(["--limit", "2"]).map(QueryEndToEndTests.id), Array(ids.prefix(2)))

        func count(_ words: [String]) throws -> Int {
            let r = try runCommand(bin, ["query", "--log-dir", dir, "--count"] + words)
            XCTAssertEqual(r.status, 0, "\(words): \(r.stderr)")
            return Int(r.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        XCTAssertEqual(try count(["status>=500"]), 6)
        XCTAssertEqual(try count(["~c", "503"]), 6)
        XCTAssertEqual(try count(["reqjson:/user/role=admin"]), 6)
        XCTAssertEqual(try count(["method=POST", "path=/echo"]), 6)
        XCTAssertEqual(try count(["json:/id=12345678901234567890"]), 18, "an id beyond 2^64, compared exactly")
        XCTAssertEqual(try count(["json:/id>12345678901234567890"]), 0)
        XCTAssertEqual(try count(["json:/name=tap"]), 18)
        XCTAssertEqual(try count(["ROLE"]), 6, "a bare word searches decoded bodies, any case")
        XCTAssertEqual(try count(["\"N=7\""]), 1, "and URLs")
        XCTAssertEqual(try count(["status>=500 or reqjson:/user/role=admin"]), 12)
        XCTAssertEqual(try count(["not", "(status>=500", "or", "method=POST)"]), 18)
        XCTAssertEqual(try count(["time>=-1h", "duration<1m"]), 30)
        XCTAssertEqual(try count(["--", "time>=-1h"]), 30)

        // Lines as tail prints them; tail and har take the same expressions.
        let lines = try runCommand(bin, ["query", "--log-dir", dir, "status>=500"])
        XCTAssertEqual(lines.text.split(separator: "\n").count, 6)
        XCTAssertTrue(lines.text.split(separator: "\n").allSatisfy { $0.contains(" 503 ") }, lines.text)
        let tail = try runCommand(bin, ["tail", "--log-dir", dir, "status>=500 | reqjson:/user/role=admin"])
        XCTAssertEqual(tail.text.split(separator: "\n").count, 12, tail.text)
        let har = try runCommand(bin, ["har", "--log-dir", dir, "method=POST"])
        let doc = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(har.text.utf8)) as? [String: Any])
        XCTAssertEqual(((doc["log"] as? [String: Any])?["entries"] as? [Any])?.count, 6)
    }

    static func id(_ line: String) -> String { String(line.prefix(32)) }

    /// Every record line, files in rotation order: by stamp, then the `-N` suffix of rotations
    /// within one second, the active file last (plain name order puts `-1` before the first).
    func linesInRotationOrder(_ directory: URL) throws -> [String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".jsonl") || $0.hasSuffix(".jsonl.gz") }
        func key(_ name: String) -> (String, Int) {
            guard name.hasPrefix("tapwire-") else { return ("~", 0) }
            let base = name.replacingOccurrences(of: ".jsonl.gz", with: "").replacingOccurrences(of: ".jsonl", with: "")
            let parts = base.dropFirst("tapwire-".count).split(separator: "-")
            return (String(parts[0]), parts.count > 1 ? Int(parts[1]) ?? 0 : 0)
        }
        var lines: [String] = []
        for name in names.sorted(by: { key($0) < key($1) }) {
            let text = String(data: try logFileContents(directory.appendingPathComponent(name)), encoding: .utf8) ?? ""
            lines += text.split(separator: "\n").map(String.init)
        }
        return lines
    }

    /// A hand-written log, spaced as another writer might, with a line that is no record.
    func testHandWrittenLogAndEndOfOptions() throws {
        let bin = try tapwireBinary()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-q-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let records = [
            #"{"id":"1","kind":"http","request":{"method":"GET","url":"http://a.com/secret","headers":[],"bodySize":0},"response":{"status":200,"headers":[],"bodySize":5},"result":{"success":{"r": [1, 2], "greeting": "Grüße"}}}"#,
            #"{"id":"2","kind":"http","request":{"method":"POST","url":"http://b.com/admin","headers":[],"bodySize":0},"response":{"status":503,"headers":[],"bodySize":7},"data":{"size":null}}"#,
            "not json",
            #"{"id":"3","kind":"loss","lost":1,"time":"2026-12-02T10:00:00Z"}"#,
        ]
        try Data(records.map { $0 + "\n" }.joined().utf8).write(to: dir.appendingPathComponent("tapwire.jsonl"))
        func count(_ expression: String) throws -> Int {
            let r = try runCommand(bin, ["query", "--log-dir", dir.path, "--count", "--", expression])
            XCTAssertEqual(r.status, 0, "\(expression): \(r.stderr)")
            return Int(r.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }
        XCTAssertEqual(try count(""), 3, "the unreadable line is no record")
        XCTAssertEqual(try count("id or not id"), 3)
        XCTAssertEqual(try count("secret|admin"), 2)
        XCTAssertEqual(try count("host=a.com|host=b.com"), 2)
        XCTAssertEqual(try count("error&kind=loss"), 1)
        XCTAssertEqual(try count("json:/r=[1,2]"), 1, "the prefilter must not miss spaced JSON")
        XCTAssertEqual(try count("\"1,2\""), 1)
        XCTAssertEqual(try count("size=7"), 1, "data.size null: response.bodySize")
        let json = try runCommand(bin, ["query", "--log-dir", dir.path, "--json"])
        XCTAssertFalse(json.text.contains("not json"), json.text)
        for command in ["tail", "har"] {
            let r = try runCommand(bin, [command, "--log-dir", dir.path, "--", "kind=http"])
            XCTAssertEqual(r.status, 0, "\(command) --: \(r.stderr)")
            XCTAssertTrue(r.text.contains("b.com"), r.text)
        }
    }

    func testBadExpressionsExitTwoNamingTheColumn() throws {
        let bin = try tapwireBinary()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("tw-q-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (words, message) in [(["status>="], "query:1:9: expected a value after '>='"),
                                 (["kind=http", "duration>fast"], "query:1:20: expected a duration such as 250ms"),
                                 (["colour=red"], "query:1:1: unknown field 'colour' in 'colour=red'"),
                                 (["(status=500"], "query:1:12: expected ')' to close '(' at column 1"),
                                 (["time>=2026-02-31"], "query:1:7: expected a time"),
                                 (["time>=--1h"], "query:1:7: expected a time"),
                                 (["json:/price~2x"], "query:1:12: expected a JSON Pointer")] {
            for command in ["query", "tail", "har"] {
                let r = try runCommand(bin, [command, "--log-dir", dir.path] + words)
                XCTAssertEqual(r.status, 2, "\(command) \(words)")
                XCTAssertTrue(r.stderr.contains(message), "\(command) \(words): \(r.stderr)")
                XCTAssertEqual(r.stderr.split(separator: "\n").count, 1, r.stderr)
            }
        }
        let limit = try runCommand(bin, ["query", "--log-dir", dir.path, "--limit", "many"])
        XCTAssertEqual(limit.status, 2)
        let missing = try runCommand(bin, ["query", "--log-dir", dir.path + "/nope", "--count"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("nope"), missing.stderr)
        let empty = try runCommand(bin, ["query", "--log-dir", dir.path, "--count"])
        XCTAssertEqual(empty.text, "0\n")
        let help = try runCommand(bin, ["query", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.text.hasPrefix("usage: tapwire query"), help.text)
        XCTAssertTrue(help.text.contains("json:/POINTER") && help.text.contains("~c 404"), help.text)
    }
}

/// Strings appended from several threads.
final class LockedList: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func append(_ item: String) { lock.lock(); list.append(item); lock.unlock() }
    var items: [String] { lock.lock(); defer { lock.unlock() }; return list }
}
