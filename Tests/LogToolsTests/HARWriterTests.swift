import Foundation
import ResponseSerialization
import XCTest
@testable import LogTools

final class HARWriterTests: XCTestCase {
    private var directory: TemporaryLogDirectory!

    override func setUpWithError() throws { directory = try TemporaryLogDirectory() }
    override func tearDown() { directory.remove() }

    private static let schemaPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/har-1.2.schema.json").path

    private let tlsMetrics = #"{"dns":0.0005,"connect":0.001,"tls":0.004,"send":0.00002,"wait":0.01,"receive":0.002,"connectionReused":false,"upstream":"[2001:db8::1]:443"}"#

    /// One of each kind of record the HAR has to handle, spread over a rotated .gz and the active file.
    private func writeMixedLog() throws {
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", Fixture.lines([
            Fixture.http(1),
            Fixture.http(2, method: "POST", url: "https://api.local/search?q=hello+world&tag=a%2Fb&flag",
                         requestHeaders: #"[["Content-Type","application/x-www-form-urlencoded"],["Cookie","sid=abc; theme=dark"]]"#,
                         requestBody: "a=1&b=2", metrics: tlsMetrics),
            Fixture.tunnel(3),
        ]))
        directory.write("tapwire.jsonl", Fixture.lines([
            Fixture.http(4, url: "http://api.local/old", status: 301, mimeType: "text/plain", serializer: "string",
                         result: #"{"success":"moved"}"#,
                         responseHeaders: #"[["Location","http://api.local/new"],["Set-Cookie","sid=xyz; Path=/; HttpOnly; Secure"],["Set-Cookie","[redacted]"],["Content-Type","text/plain"]]"#),
            Fixture.http(5, status: nil, result: #"{"failure":{"error":"upstreamConnectFailed","message":"connection refused"}}"#,
                         error: Fixture.connectFailed, metrics: "null"),
            Fixture.loss(2),
            Fixture.http(6, status: 200, mimeType: "application/octet-stream", serializer: "data",
                         result: #"{"success":"AAEC"}"#, dataSize: 3),
            Fixture.http(7, status: 404, result: #"{"failure":{"error":"responseSerializationFailed","reason":"jsonSerializationFailed","message":"bad"}}"#),
            Fixture.http(8, status: 200, mimeType: "application/json", serializer: "json",
                         result: #"{"success":{"items":[1,2,3]}}"#, truncated: true),
            Fixture.websocket(9),
        ]))
    }

    private func export(_ words: [String] = []) throws -> (bytes: [UInt8], entries: Int) {
        var bytes: [UInt8] = []
        let writer = HARWriter(output: { bytes += $0 }, creatorVersion: "9.9.9")
        let count = try HARExport.run(source: RecordSource(directory: directory.path),
                                      filter: Query.parse(words), writer: writer)
        return (bytes, count)
    }

    private func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    private func entries(_ har: [String: Any]) -> [[String: Any]] {
        ((har["log"] as? [String: Any])?["entries"] as? [[String: Any]]) ?? []
    }

    // MARK: Schema

    /// Validates `bytes` against the HAR 1.2 schema with Python's jsonschema; returns its complaints.
    private func schemaErrors(_ bytes: [UInt8]) throws -> String? {
        if try python(["-c", "import jsonschema"]).status != 0 {
            let pipCheck = try python(["-m", "pip", "--version"])
            if pipCheck.status != 0 {
                throw XCTSkip("jsonschema is not installed and pip is unavailable: \(pipCheck.output)")
            }
            let pip = try python(["-m", "pip", "install", "--quiet", "jsonschema"])
            guard pip.status == 0 else { return "pip install jsonschema failed: " + pip.output }
        }
        let harPath = directory.path + "/export.har"
        XCTAssertTrue(FileManager.default.createFile(atPath: harPath, contents: Data(bytes)))
        let script = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        document = json.load(open(sys.argv[2]))
        jsonschema.Draft7Validator.check_schema(schema)
        errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(document), key=lambda e: list(e.path))
        for error in errors:
            print(list(error.path), error.message)
        sys.exit(1 if errors else 0)
        """
        let result = try python(["-c", script, HARWriterTests.schemaPath, harPath])
        return result.status == 0 ? nil : result.output
    }

    private func python(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    func testTheExportIsValidHAR12() throws {
        try writeMixedLog()
        let (bytes, count) = try export()
        XCTAssertEqual(count, 8, "tunnel and loss records are skipped")
        if let errors = try schemaErrors(bytes) { XCTFail("HAR does not validate:\n" + errors) }
    }

    func testTheSchemaCheckRejectsABrokenDocument() throws {
        try writeMixedLog()
        var har = try object(try export().bytes)
        var log = try XCTUnwrap(har["log"] as? [String: Any])
        var list = entries(har)
        list[0]["time"] = nil
        var timings = try XCTUnwrap(list[1]["timings"] as? [String: Any])
        timings["wait"] = -1
        list[1]["timings"] = timings
        log["entries"] = list
        har["log"] = log
        let broken = try [UInt8](JSONSerialization.data(withJSONObject: har))
        let errors = try XCTUnwrap(try schemaErrors(broken))
        XCTAssertTrue(errors.contains("'time' is a required property"), errors)
        XCTAssertTrue(errors.contains("-1 is less than the minimum of 0"), errors)
    }

    func testTimeIsTheSumOfNonNegativeTimingsAndConnectIncludesSSL() throws {
        try writeMixedLog()
        let list = entries(try object(try export().bytes))
        XCTAssertEqual(list.count, 8)
        for entry in list {
            let timings = try XCTUnwrap(entry["timings"] as? [String: Double])
            let sum = ["blocked", "dns", "connect", "send", "wait", "receive"]
                .compactMap { timings[$0] }.filter { $0 >= 0 }.reduce(0, +)
            XCTAssertEqual(try XCTUnwrap(entry["time"] as? Double), sum, accuracy: 1e-9)
            if let ssl = timings["ssl"], ssl >= 0 { XCTAssertGreaterThanOrEqual(timings["connect"] ?? -1, ssl) }
        }
        XCTAssertEqual(list[0]["timings"] as? [String: Double],
                       ["blocked": -1, "dns": -1, "connect": 0.11, "ssl": -1, "send": 0.01, "wait": 1.1, "receive": 0.84])
        XCTAssertEqual(list[0]["time"] as? Double, 2.06)
        XCTAssertEqual(list[1]["timings"] as? [String: Double],
                       ["blocked": -1, "dns": 0.5, "connect": 5, "ssl": 4, "send": 0.02, "wait": 10, "receive": 2])
        XCTAssertEqual(list[1]["time"] as? Double, 17.52)
        XCTAssertEqual(list[3]["time"] as? Double, 0, "a failure without metrics took no measured time")
    }

    /// Through a parent proxy `metrics.upstream` is the origin as named, not an address the
    /// exchange connected to: HAR's serverIPAddress is left out.
    func testAnExchangeThroughAParentHasNoServerAddress() throws {
        directory.write("tapwire.jsonl", Fixture.lines([
            Fixture.http(1, metrics: #"{"dns":null,"connect":0.001,"tls":null,"send":0.001,"wait":0.006,"receive":0.002,"connectionReused":false,"upstream":"10.0.0.5:8080","via":"http://squid.corp:3128"}"#),
            Fixture.http(2, metrics: #"{"dns":null,"connect":0.001,"tls":null,"send":0.001,"wait":0.006,"receive":0.002,"connectionReused":false,"upstream":"10.0.0.5:8080","via":null}"#),
        ]))
        let list = entries(try object(try export().bytes))
        XCTAssertEqual(list.count, 2)
        XCTAssertNil(list[0]["serverIPAddress"])
        XCTAssertEqual(list[1]["serverIPAddress"] as? String, "10.0.0.5")
    }

    func testRequestsAndResponsesCarryTheRecordedFields() throws {
        try writeMixedLog()
        let har = try object(try export().bytes)
        let log = try XCTUnwrap(har["log"] as? [String: Any])
        XCTAssertEqual(log["version"] as? String, "1.2")
        XCTAssertEqual(log["creator"] as? [String: String], ["name": "tapwire", "version": "9.9.9"])
        let list = entries(har)

        let first = list[0]
        XCTAssertEqual(first["startedDateTime"] as? String, "2026-12-02T10:11:12.123456Z")
        XCTAssertEqual(first["serverIPAddress"] as? String, "127.0.0.1")
        XCTAssertEqual(first["_id"] as? String, "0000018c2b1f4a1e-000001")
        let firstRequest = try XCTUnwrap(first["request"] as? [String: Any])
        XCTAssertEqual(firstRequest["headers"] as? [[String: String]],
                       [["name": "Host", "value": "api.local:8080"], ["name": "Authorization", "value": "[redacted]"]])
        XCTAssertEqual(firstRequest["queryString"] as? [[String: String]], [["name": "x", "value": "1"]])
        XCTAssertNil(firstRequest["postData"])
        let firstContent = try XCTUnwrap((first["response"] as? [String: Any])?["content"] as? [String: Any])
        XCTAssertEqual(firstContent["text"] as? String, #"{"items":[1,2,3]}"#)
        XCTAssertEqual(firstContent["size"] as? Int, 1024)
        XCTAssertEqual(firstContent["compression"] as? Int, 1024 - 312)
        XCTAssertEqual(firstContent["mimeType"] as? String, "application/json")

        let post = try XCTUnwrap(list[1]["request"] as? [String: Any])
        XCTAssertEqual(post["queryString"] as? [[String: String]],
                       [["name": "q", "value": "hello world"], ["name": "tag", "value": "a/b"], ["name": "flag", "value": ""]])
        XCTAssertEqual(post["cookies"] as? [[String: String]],
                       [["name": "sid", "value": "abc"], ["name": "theme", "value": "dark"]])
        XCTAssertEqual(post["postData"] as? [String: String],
                       ["mimeType": "application/x-www-form-urlencoded", "text": "a=1&b=2"])
        XCTAssertEqual(post["bodySize"] as? Int, 7)
        XCTAssertEqual(list[1]["serverIPAddress"] as? String, "2001:db8::1")

        let redirect = try XCTUnwrap(list[2]["response"] as? [String: Any])
        XCTAssertEqual(redirect["status"] as? Int, 301)
        XCTAssertEqual(redirect["statusText"] as? String, "Moved Permanently")
        XCTAssertEqual(redirect["redirectURL"] as? String, "http://api.local/new")
        XCTAssertEqual(redirect["cookies"] as? NSArray,
                       [["name": "sid", "value": "xyz", "path": "/", "httpOnly": true, "secure": true]] as NSArray)
        XCTAssertEqual((redirect["content"] as? [String: Any])?["text"] as? String, "moved")

        let failed = list[3]
        XCTAssertEqual(failed["_error"] as? String, "upstreamConnectFailed: connection refused")
        let failedResponse = try XCTUnwrap(failed["response"] as? [String: Any])
        XCTAssertEqual(failedResponse["status"] as? Int, 0)
        XCTAssertEqual(failedResponse["statusText"] as? String, "")
        XCTAssertNil(failed["serverIPAddress"])

        let binary = try XCTUnwrap((list[4]["response"] as? [String: Any])?["content"] as? [String: Any])
        XCTAssertEqual(binary["text"] as? String, "AAEC")
        XCTAssertEqual(binary["encoding"] as? String, "base64")

        let unparsable = list[5]
        XCTAssertEqual(unparsable["_failure"] as? String, "responseSerializationFailed(jsonSerializationFailed): bad")
        XCTAssertNil((unparsable["response"] as? [String: Any]).flatMap { $0["content"] as? [String: Any] }?["text"])

        let truncated = try XCTUnwrap((list[6]["response"] as? [String: Any])?["content"] as? [String: Any])
        XCTAssertEqual(truncated["_truncated"] as? Bool, true)

        let upgrade = list[7]
        XCTAssertEqual((upgrade["response"] as? [String: Any])?["status"] as? Int, 101)
        XCTAssertEqual(upgrade["startedDateTime"] as? String, "2026-12-02T10:11:17.250000Z")
        XCTAssertEqual(upgrade["_bytesFromClient"] as? Int, 1229)
        XCTAssertEqual(upgrade["_bytesFromUpstream"] as? Int, 35328)
    }

    /// postData follows the request's Content-Type: a JSON body is its JSON even when it has a
    /// "text" member; a binary body logged by size is "not captured", not the text {"size":N};
    /// and a Set-Cookie with an empty attribute does not stop the export.
    func testPostDataByContentTypeAndLenientCookies() throws {
        func withBody(_ n: Int, _ contentType: String, _ body: String) -> String {
            Fixture.http(n, method: "POST", requestHeaders: #"[["Content-Type","\#(contentType)"]]"#,
                         responseHeaders: #"[["Set-Cookie","a=b; Path=/; "],["Set-Cookie","c=d; ; HttpOnly"]]"#, requestBody: "PLACEHOLDER")
                .replacingOccurrences(of: #""body":"PLACEHOLDER""#, with: #""body":\#(body)"#)
        }
        directory.write("tapwire.jsonl", Fixture.lines([
            withBody(1, "application/json", #"{"text":"hi","lang":"en"}"#),
            withBody(2, "application/octet-stream", #"{"size":12345}"#),
            withBody(3, "application/octet-stream", #"{"base64":"AAEC","size":3}"#),
        ]))
        let list = entries(try object(try export().bytes))
        XCTAssertEqual(list.count, 3)
        let post = list.map { ($0["request"] as? [String: Any])?["postData"] as? [String: Any] }
        XCTAssertEqual(post[0]?["text"] as? String, #"{"text":"hi","lang":"en"}"#)
        XCTAssertEqual(post[1]?["text"] as? String, "")
        XCTAssertNotNil(post[1]?["comment"])
        XCTAssertEqual(post[2]?["text"] as? String, "AAEC")
        XCTAssertEqual(post[2]?["_encoding"] as? String, "base64")
        let cookies = (list[0]["response"] as? [String: Any])?["cookies"] as? [[String: Any]]
        XCTAssertEqual(cookies?.map { $0["name"] as? String }, ["a", "c"])
    }

    func testFiltersChooseTheEntries() throws {
        try writeMixedLog()
        let (bytes, count) = try export(["status=3xx,4xx"])
        XCTAssertEqual(count, 2)
        let statuses = entries(try object(bytes)).compactMap { ($0["response"] as? [String: Any])?["status"] as? Int }
        XCTAssertEqual(statuses, [301, 404])
        XCTAssertEqual(try export(["error"]).entries, 2)
    }

    func testAnEmptyLogGivesAValidDocumentWithNoEntries() throws {
        directory.write("tapwire.jsonl", "")
        let (bytes, count) = try export()
        XCTAssertEqual(count, 0)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       #"{"log":{"version":"1.2","creator":{"name":"tapwire","version":"9.9.9"},"entries":[]}}"# + "\n")
        if let errors = try schemaErrors(bytes) { XCTFail("HAR does not validate:\n" + errors) }
    }

    func testTenThousandRecordsStreamThroughWithBoundedBuffering() throws {
        var delivered = 0
        var deliveries = 0
        var tail: [UInt8] = []
        let writer = HARWriter(output: { chunk in
            delivered += chunk.count
            deliveries += 1
            tail = Array((tail + chunk).suffix(8))
        })
        let record = try JSONParser.parse(Fixture.http(1, metrics: tlsMetrics))
        var deliveredBeforeFinish = 0
        for _ in 0..<10_000 {
            XCTAssertTrue(try writer.write(record))
        }
        deliveredBeforeFinish = delivered
        try writer.finish()

        XCTAssertEqual(writer.entryCount, 10_000)
        let entrySize = delivered / 10_000
        XCTAssertGreaterThan(entrySize, 500)
        // Nothing like the whole document ever waits in the writer: at most one flush threshold plus one entry.
        XCTAssertLessThanOrEqual(writer.largestPendingByteCount, 64 * 1024 + 2 * entrySize)
        // Each delivery carries at most one threshold's worth plus the entry that crossed it.
        XCTAssertGreaterThanOrEqual(deliveries, delivered / (64 * 1024 + 2 * entrySize))
        XCTAssertGreaterThan(deliveredBeforeFinish, delivered - 64 * 1024 - 2 * entrySize,
                             "entries went out while records were still arriving")
        XCTAssertEqual(String(decoding: tail, as: UTF8.self).hasSuffix("\n]}}\n"), true)
    }
}
