import Foundation
import XCTest

/// `tapwire show`, `curl`, `diff` and `replay` on a log a running proxy wrote.
final class RecordCommandsEndToEndTests: XCTestCase {
    /// The log's records, parsed, once `count` of them are written.
    private func records(_ directory: URL, count: Int) throws -> [[String: Any]] {
        var lines: [String] = []
        if try eventually(every: 0.05, { lines = try logLines(directory); return lines.count >= count }) {
            return try lines.map(parseRecord)
        }
        XCTFail("fewer than \(count) records in \(directory.path)")
        return []
    }

    /// What the origin's /inspect saw, from the logged response value.
    private func received(_ record: [String: Any]) throws -> (method: String, target: String, headers: [String], body: Data) {
        let value = try XCTUnwrap((record["result"] as? [String: Any])?["success"] as? [String: Any], "\(record)")
        return try inspected(value)
    }

    private func inspected(_ value: [String: Any]) throws -> (method: String, target: String, headers: [String], body: Data) {
        let headers = try XCTUnwrap(value["headers"] as? [[String]]).map { "\($0[0].lowercased()): \($0[1])" }.sorted()
        return (try XCTUnwrap(value["method"] as? String), try XCTUnwrap(value["target"] as? String), headers,
                try XCTUnwrap(Data(base64Encoded: try XCTUnwrap(value["body"] as? String))))
    }

    func testCurlCommandResendsWhatTheOriginReceivedAndShowAndDiffReadTheLog() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        let url = "\(origin.base)/inspect?x=1&q=a%20b"
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: application/json", "-H", "X-Trace: it's \"1\"",
                                              "--data-binary", #"{"b":1.50,"items":[{"price":9.99}],"s":"it's $HOME"}"#, url])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: application/json", "-H", "X-Trace: 2",
                                              "--data-binary", #"{"b":1.50,"items":[{"price":10.49}],"s":"it's $HOME"}"#, url])
        let logged = try records(proxy.logDirectory, count: 2)
        XCTAssertEqual(proxy.stop(), 0)
        let bin = try tapwireBinary()
        let dir = proxy.logDirectory.path
        let first = try XCTUnwrap(logged[0]["id"] as? String), second = try XCTUnwrap(logged[1]["id"] as? String)

        // The printed command, run by a shell, reaches the origin as the original did (the
        // original through the proxy, which forwarded it as it came).
        let curl = try runCommand(bin, ["curl", first, "--log-dir", dir])
        XCTAssertEqual(curl.status, 0, curl.stderr)
        XCTAssertFalse(curl.text.contains("redacted"), curl.text)
        let resent = try runCommand("sh", ["-c", curl.text])
        XCTAssertEqual(resent.status, 0, resent.stderr + curl.text)
        let now = try inspected(try XCTUnwrap(JSONSerialization.jsonObject(with: resent.stdout) as? [String: Any], resent.text))
        let then = try received(logged[0])
        XCTAssertEqual(now.method, then.method)
        XCTAssertEqual(now.target, then.target)
        XCTAssertEqual(now.headers, then.headers, curl.text)
        XCTAssertEqual(now.body, then.body)
        XCTAssertEqual(String(decoding: now.body, as: UTF8.self), #"{"b":1.50,"items":[{"price":9.99}],"s":"it's $HOME"}"#)

        let show = try runCommand(bin, ["show", first, "--log-dir", dir])
        XCTAssertEqual(show.status, 0, show.stderr)
        for part in ["── Request", "── Response", "── Timeline", "POST \(url) HTTP/1.1", "X-Trace: it's \"1\"",
                     "\"b\": 1.50", "\"price\": 9.99", "wait ", "serialization "] {
            XCTAssertTrue(show.text.contains(part), "\(part) in\n\(show.text)")
        }

        let diff = try runCommand(bin, ["diff", first, second, "--log-dir", dir])
        XCTAssertEqual(diff.status, 1, diff.stderr)
        XCTAssertTrue(diff.text.contains("request body /items/0/price: 9.99 → 10.49"), diff.text)
        XCTAssertTrue(diff.text.contains("request header X-Trace: it's \"1\" → 2"), diff.text)
        XCTAssertTrue(diff.text.contains("request header Content-Length: "), diff.text)
        let same = try runCommand(bin, ["diff", first, first, "--log-dir", dir])
        XCTAssertEqual(same.status, 0, same.text)
        XCTAssertEqual(same.text, "")

        for args in [["diff", first, "0000000000000000-000099"], ["show", "0000000000000000-000099"],
                     ["curl", "0000000000000000-000099"], ["diff", first]] {
            let bad = try runCommand(bin, args + ["--log-dir", dir])
            XCTAssertEqual(bad.status, 2, "\(args): \(bad.text)")
            if args.count > 2 || args[0] != "diff" {
                XCTAssertTrue(bad.stderr.contains("0000000000000000-000099"), bad.stderr)
            }
        }
    }

    func testARequestBodyAnsweredWithoutContentTypeIsResentAsItsTextNeverAsAFile() throws {
        // 204 without a Content-Type: the record's serializer (the response's) is data, while
        // the text request body was logged whole. It starts with `@`, which curl's
        // --data-binary takes for a file name.
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        let url = "\(origin.base)/status?code=204"
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: text/plain",
                                              "--data-raw", "@/etc/hostname", url])
        let logged = try records(proxy.logDirectory, count: 1)
        XCTAssertEqual(logged[0]["serializer"] as? String, "data")
        let id = try XCTUnwrap(logged[0]["id"] as? String)
        let bin = try tapwireBinary()
        let dir = proxy.logDirectory.path

        let curl = try runCommand(bin, ["curl", id, "--log-dir", dir])
        XCTAssertEqual(curl.status, 0, curl.stderr)
        XCTAssertTrue(curl.text.contains("--data-raw '@/etc/hostname'"), curl.text)
        var env = ProcessInfo.processInfo.environment
        for k in ["NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"] { env[k] = nil }
        env["http_proxy"] = proxy.proxyURL
        let resent = try runCommand("sh", ["-c", curl.text], environment: env)
        XCTAssertEqual(resent.status, 0, resent.stderr + curl.text)
        let replay = try runCommand(bin, ["replay", id, "--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(replay.status, 0, replay.stderr)

        let all = try records(proxy.logDirectory, count: 3)
        XCTAssertEqual(all.count, 3)
        for record in all {
            XCTAssertEqual((record["request"] as? [String: Any])?["body"] as? String, "@/etc/hostname", "\(record)")
        }
    }

    func testReplayIsRecordedWithReplayOfAndRefusesWhatTheLogDoesNotHoldWhole() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["capture": ["maxBodyBytes": 1024]])
        let url = "\(origin.base)/inspect"
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: application/json",
                                              "--data-binary", #"{"n":1.50,"s":"x"}"#, url])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Authorization: Bearer secret", url])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-H", "Content-Type: text/plain",
                                              "--data-binary", String(repeating: "t", count: 4000), url])
        _ = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-X", "PUT", "-H", "Content-Type: image/png",
                                              "--data-binary", "\u{1}PNG", url])
        let logged = try records(proxy.logDirectory, count: 4)
        let ids = try logged.map { try XCTUnwrap($0["id"] as? String) }
        let bin = try tapwireBinary()
        let dir = proxy.logDirectory.path

        let replay = try runCommand(bin, ["replay"] + ids + ["--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(replay.status, 1, "refusals make it fail: \(replay.stderr)")
        XCTAssertEqual(replay.text, "\(ids[0]) POST \(url) → 200 OK\n")
        let refusals = replay.stderr.split(separator: "\n").map(String.init)
        XCTAssertEqual(refusals.count, 3, replay.stderr)
        XCTAssertTrue(refusals[0].hasPrefix("tapwire: replay \(ids[1]) refused: ") && refusals[0].contains("header Authorization"), refusals[0])
        XCTAssertTrue(refusals[1].hasPrefix("tapwire: replay \(ids[2]) refused: ") && refusals[1].contains("not captured whole"), refusals[1])
        XCTAssertTrue(refusals[2].hasPrefix("tapwire: replay \(ids[3]) refused: ") && refusals[2].contains("size only"), refusals[2])

        let all = try records(proxy.logDirectory, count: 5)
        XCTAssertEqual(all.count, 5, "only the replayable request was sent")
        let copy = all[4]
        XCTAssertEqual(copy["replayOf"] as? String, ids[0])
        XCTAssertNil(logged[0]["replayOf"])
        let requestHeaders = try XCTUnwrap((copy["request"] as? [String: Any])?["headers"] as? [[String]])
        XCTAssertFalse(requestHeaders.contains { $0[0].lowercased() == "x-tapwire-replay-of" }, "\(requestHeaders)")
        let now = try received(copy), then = try received(logged[0])
        XCTAssertEqual(now.body, then.body)
        XCTAssertEqual(String(decoding: now.body, as: UTF8.self), #"{"n":1.50,"s":"x"}"#)
        XCTAssertFalse(now.headers.contains { $0.hasPrefix("x-tapwire-replay-of") }, "the origin never sees it: \(now.headers)")
        XCTAssertEqual(now.headers.filter { !$0.hasPrefix("connection:") }, then.headers)

        // Straight to the origin: nothing new in the log. An exchange through the proxy would
        // be counted before its answer reached the client, so the count is checked at once.
        let exchanges = #"tapwire_exchanges_total{status_class="2xx"}"#
        let proxied = proxy.metric(exchanges)
        let direct = try runCommand(bin, ["replay", ids[0], "--direct", "--log-dir", dir])
        XCTAssertEqual(direct.status, 0, direct.stderr)
        XCTAssertEqual(direct.text, "\(ids[0]) POST \(url) → 200 OK\n")
        XCTAssertEqual(proxy.metric(exchanges), proxied, "the direct replay went through the proxy")
        XCTAssertEqual(try logLines(proxy.logDirectory).count, 5)

        // By query: the exchanges it keeps, as read before the first is sent (the original and
        // its replay both have a request body member /n; the replays of them are not read back).
        let byQuery = try runCommand(bin, ["replay", "--query", "reqjson:/n", "--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(byQuery.status, 0, byQuery.stderr)
        XCTAssertEqual(byQuery.text, "\(ids[0]) POST \(url) → 200 OK\n\(try XCTUnwrap(copy["id"] as? String)) POST \(url) → 200 OK\n")
        let afterQuery = try records(proxy.logDirectory, count: 7)
        XCTAssertEqual(afterQuery.count, 7)
        XCTAssertEqual(Set(afterQuery[5...].compactMap { $0["replayOf"] as? String }), [ids[0], try XCTUnwrap(copy["id"] as? String)])
        let refusedByQuery = try runCommand(bin, ["replay", "--query", "method=PUT", "--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(refusedByQuery.status, 1)
        XCTAssertTrue(refusedByQuery.stderr.contains("replay \(ids[3]) refused"), refusedByQuery.stderr)
        for bad in [["replay", ids[0], "--query", "method=PUT"], ["replay", "--query", "status>>1"], ["replay"]] {
            let r = try runCommand(bin, bad + ["--log-dir", dir])
            XCTAssertEqual(r.status, 2, "\(bad): \(r.stderr)")
        }

        // A proxy that accepts (the kernel's backlog does) and never answers: the named limit ends the wait.
        let silent = try SilentListener()
        let started = Date()
        let timedOut = try runCommand(bin, ["replay", ids[0], "--proxy", "127.0.0.1:\(silent.port)",
                                            "--timeout", "0.5", "--log-dir", dir])
        XCTAssertEqual(timedOut.status, 1)
        XCTAssertTrue(timedOut.stderr.contains("replay \(ids[0]) failed") && timedOut.stderr.contains("--timeout"), timedOut.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
        let badTimeout = try runCommand(bin, ["replay", ids[0], "--timeout", "soon", "--log-dir", dir])
        XCTAssertEqual(badTimeout.status, 2)
        XCTAssertTrue(badTimeout.stderr.contains("--timeout"), badTimeout.stderr)

        let unknown = try runCommand(bin, ["replay", "0000000000000000-000099", "--log-dir", dir, "--proxy", "127.0.0.1:\(proxy.port)"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertTrue(unknown.stderr.contains("0000000000000000-000099"), unknown.stderr)
    }
}
