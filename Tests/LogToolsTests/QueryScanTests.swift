import ExchangeLog
import Foundation
import ResponseSerialization
import XCTest
@testable import LogTools

/// `tapwire query` over real files: order across rotation boundaries, `--reverse` and
/// `--limit`, a log rotating while it is read, and the prefilter never hiding a match.
final class QueryScanTests: XCTestCase {
    private var directory: TemporaryLogDirectory!

    override func setUpWithError() throws { directory = try TemporaryLogDirectory() }
    override func tearDown() { directory.remove() }

    private var layout: LogFileLayout { LogFileLayout(directory: directory.path, fileName: "tapwire.jsonl") }

    /// Records that differ in status, method, host, body and size, so queries keep some of each file.
    private func record(_ n: Int) -> String {
        let status = [200, 200, 404, 503, 201, 500, 200][n % 7]
        let method = n % 3 == 0 ? "POST" : "GET"
        let host = ["api.local", "shop.example.com", "auth.internal"][n % 3]
        let role = n % 11 == 0 ? "admin" : "member"
        let note = n % 13 == 0 ? "Kestrel sighting" : "nothing here"
        return Fixture.http(n, method: method, url: "http://\(host)/v1/items/\(n)", status: status,
                            result: #"{"success":{"user":{"role":"\#(role)","id":\#(n)},"note":"\#(note)"}}"#,
                            dataSize: n * 100)
    }

    private func lines(_ numbers: ClosedRange<Int>) -> String { Fixture.lines(numbers.map(record)) }

    /// rotated .gz (1–40), rotated plain (41–60), .gz of two members (61–90), active (91–120 and half a line).
    private func writeLog() throws {
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", lines(1...40))
        directory.write("tapwire-20261201T010000.jsonl", lines(41...60))
        let first = path("m1"), second = path("m2")
        try directory.writeGzip("m1", lines(61...75))
        try directory.writeGzip("m2", lines(76...90))
        let members = try Data(contentsOf: URL(fileURLWithPath: first)) + Data(contentsOf: URL(fileURLWithPath: second))
        try members.write(to: URL(fileURLWithPath: path("tapwire-20261201T020000.jsonl.gz")))
        try FileManager.default.removeItem(atPath: first)
        try FileManager.default.removeItem(atPath: second)
        directory.write("tapwire.jsonl", lines(91...120) + #"{"id":"0000018c2b1f4a1e-000121","kind":"ht"#)
    }

    private func path(_ name: String) -> String { directory.path + "/" + name }

    private func run(_ text: String, limit: Int? = nil, reverse: Bool = false, threads: Int = 2,
                     chunkSize: Int = 4096, form: QueryOutputForm = .json) throws -> [Int] {
        var out: [UInt8] = []
        try QueryCommand.run(layout: layout, query: Query.parse(text),
                             options: QueryScanOptions(form: form, limit: limit, reverse: reverse, threads: threads,
                                                       chunkSize: chunkSize)) { out += $0 }
        return out.split(separator: 10).map { Fixture.number(ofLine: Array($0)) ?? -1 }
    }

    private func count(_ text: String, limit: Int? = nil, reverse: Bool = false, threads: Int = 2) throws -> Int {
        var out: [UInt8] = []
        try QueryCommand.run(layout: layout, query: Query.parse(text),
                             options: QueryScanOptions(form: .countOnly, limit: limit, reverse: reverse, threads: threads,
                                                       chunkSize: 4096)) { out += $0 }
        return Int(String(decoding: out, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    }

    /// What the query keeps, worked out record by record without the prefilter or the files.
    private func expected(_ text: String, _ numbers: ClosedRange<Int> = 1...120) throws -> [Int] {
        let query = try Query.parse(text)
        return numbers.filter { n in query.matches(try! JSONParser.parse(record(n))) }
    }

    private let queries = ["", "status>=500", "status=4xx", "json:/user/role=admin", "kestrel", "\"KESTREL SIGHTING\"",
                           "method=GET host=*.example.com", "not status=200", "size>=5KB size<8KB", "json:/user/id>=100",
                           "~c 404 | ~m POST", "(status=503 or status=500) and not host=api.local", "url~items/1[0-9]$"]

    func testEveryFileInTimeOrderAcrossRotationsWithAnyThreadCountAndChunkSize() throws {
        try writeLog()
        for text in queries {
            let want = try expected(text)
            XCTAssertFalse(text != "" && (want.isEmpty || want.count == 120), "\(text) should keep some records, not all")
            for threads in [1, 2, 3] {
                XCTAssertEqual(try run(text, threads: threads), want, "\(text), \(threads) threads")
            }
            XCTAssertEqual(try run(text, chunkSize: 1 << 20), want, text)
            XCTAssertEqual(try count(text), want.count, text)
        }
    }

    func testReverseAndLimitGiveTheNewestOrTheOldestFirst() throws {
        try writeLog()
        for text in queries {
            let want = try expected(text)
            XCTAssertEqual(try run(text, reverse: true), Array(want.reversed()), text)
            for limit in [0, 1, 3, 25, 500, Int.max] {
                XCTAssertEqual(try run(text, limit: limit), Array(want.prefix(limit)), "\(text) --limit \(limit)")
                XCTAssertEqual(try run(text, limit: limit, reverse: true), Array(want.reversed().prefix(limit)),
                               "\(text) --reverse --limit \(limit)")
                XCTAssertEqual(try count(text, limit: limit), min(limit, want.count))
            }
        }
    }

    func testFormattedOutputIsTailsLine() throws {
        try writeLog()
        var out: [UInt8] = []
        try QueryCommand.run(layout: layout, query: Query.parse("status=503"),
                             options: QueryScanOptions(form: .formatted(TailFormatter(color: false)), limit: 1)) { out += $0 }
        let expected = TailFormatter(color: false).format(try JSONParser.parse(record(3))) + "\n"
        XCTAssertEqual(String(decoding: out, as: UTF8.self), expected)
    }

    /// The snapshot is taken, then the log rotates (the active file renamed, a new one started,
    /// the rotated plain file compressed and removed, the oldest deleted by retention): the query
    /// still reads every record the snapshot saw and was not deleted, once each, in order.
    func testALogRotatingDuringTheQueryLosesAndRepeatsNothing() throws {
        try writeLog()
        let snapshot = try LogSnapshot(layout: layout)
        // Rotation: the active file moves aside (the writer finished its last line first)...
        try directory.rename("tapwire.jsonl", "tapwire-20261201T030000.jsonl")
        directory.write("tapwire.jsonl", lines(200...205))
        // ...the archiver compresses the plain rotated file and removes it...
        let plain = try String(contentsOfFile: path("tapwire-20261201T010000.jsonl"), encoding: .utf8)
        try directory.writeGzip("tapwire-20261201T010000.jsonl.gz", plain)
        try FileManager.default.removeItem(atPath: path("tapwire-20261201T010000.jsonl"))
        // ...and retention deletes the oldest.
        try FileManager.default.removeItem(atPath: path("tapwire-20261201T000000.jsonl.gz"))

        for reverse in [false, true] {
            var out: [UInt8] = []
            _ = try QueryRun(snapshot: snapshot, query: Query.parse("not status=999"),
                             options: QueryScanOptions(form: .json, reverse: reverse, chunkSize: 4096)).run { out += $0 }
            let numbers = out.split(separator: 10).map { Fixture.number(ofLine: Array($0)) ?? -1 }
            XCTAssertEqual(numbers, reverse ? Array((41...120).reversed()) : Array(41...120))
        }
        // A new query sees the new state, the records written since included.
        XCTAssertEqual(try run("kind=http", threads: 2), Array(41...120) + Array(200...205))
    }

    /// The worst rotation: between opening the active file and listing the rotated ones, the
    /// log rotates and the archiver compresses the rotated file (a .gz with a new inode). The
    /// snapshot is retaken, so no record is read twice and none is lost.
    func testARotationAndCompressionBetweenOpeningAndListingRepeatsNothing() throws {
        directory.write("tapwire.jsonl", lines(1...5))
        var rotations = 0
        let snapshot = try LogSnapshot(layout: layout, beforeListing: {
            rotations += 1
            guard rotations == 1 else { return }
            try? FileManager.default.removeItem(atPath: path("tapwire.jsonl"))
            try? directory.writeGzip("tapwire-20261201T030000.jsonl.gz", lines(1...5))
            directory.write("tapwire.jsonl", lines(6...7))
        })
        XCTAssertEqual(rotations, 2, "taken again after the rotation")
        var out: [UInt8] = []
        _ = try QueryRun(snapshot: snapshot, query: Query.parse(""), options: QueryScanOptions(form: .json, chunkSize: 4096)).run { out += $0 }
        XCTAssertEqual(out.split(separator: 10).map { Fixture.number(ofLine: Array($0)) ?? -1 }, Array(1...7))
    }

    /// `--reverse --limit` stops at the newest records: an old archive it never needs is never
    /// an error, while a query that does need it names the file.
    func testReverseWithALimitStopsBeforeOlderFiles() throws {
        try writeLog()
        let oldest = path("tapwire-20261201T000000.jsonl.gz")
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: oldest)))
        bytes.removeLast(bytes.count / 2)
        try Data(bytes).write(to: URL(fileURLWithPath: oldest))
        for threads in [1, 2] {
            XCTAssertEqual(try run("", limit: 5, reverse: true, threads: threads), [120, 119, 118, 117, 116])
            XCTAssertEqual(try run("status=503", limit: 2, reverse: true, threads: threads), try Array(expected("status=503").reversed().prefix(2)))
        }
        XCTAssertThrowsError(try run("")) { error in
            XCTAssertEqual((error as? LogReadError)?.path, oldest)
        }
    }

    /// Records appended to the active file after the snapshot are not part of the answer, in
    /// either direction; the line half-written at the snapshot is left out even if finished since.
    func testTheActiveFileIsReadUpToItsSizeAtTheSnapshot() throws {
        try writeLog()
        let snapshot = try LogSnapshot(layout: layout)
        try directory.append("tapwire.jsonl", "\",\"x\":1}\n" + lines(122...125))
        for reverse in [false, true] {
            var out: [UInt8] = []
            _ = try QueryRun(snapshot: snapshot, query: .all, options: QueryScanOptions(form: .json, reverse: reverse, chunkSize: 4096)).run { out += $0 }
            let numbers = out.split(separator: 10).map { Fixture.number(ofLine: Array($0)) ?? -1 }
            XCTAssertEqual(numbers, reverse ? Array((1...120).reversed()) : Array(1...120))
        }
    }

    func testAnEmptyOrMissingActiveFileAndAnEmptyDirectory() throws {
        XCTAssertEqual(try run(""), [])
        XCTAssertEqual(try count("status>=500"), 0)
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", lines(1...5))
        XCTAssertEqual(try run("", reverse: true), [5, 4, 3, 2, 1])
        XCTAssertThrowsError(try QueryCommand.run(layout: LogFileLayout(directory: directory.path + "/missing", fileName: "tapwire.jsonl"),
                                                  query: .all, options: QueryScanOptions(form: .countOnly)) { _ in })
    }

    func testCRLFLinesAndLinesLongerThanAChunk() throws {
        // Longer than a chunk and than one read of the file (64 KiB).
        let long = Fixture.http(1, result: #"{"success":{"note":"\#(String(repeating: "x", count: 300_000)) needle"}}"#)
        directory.write("tapwire.jsonl", long + "\r\n" + record(2) + "\r\n" + long.replacingOccurrences(of: "-000001", with: "-000003") + "\n")
        XCTAssertEqual(try run("needle"), [1, 3])
        XCTAssertEqual(try run("needle", reverse: true), [3, 1])
        XCTAssertEqual(try run("", reverse: true, chunkSize: 4096), [3, 2, 1])
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", long + "\n" + record(4) + "\n")
        XCTAssertEqual(try run("needle"), [1, 1, 3])
        XCTAssertEqual(try run("needle", reverse: true), [3, 1, 1])
    }

    // MARK: Prefilter

    /// For many records and queries: whenever the evaluator keeps a record, the prefilter lets
    /// its line through (the prefilter may only ever say "maybe").
    func testThePrefilterNeverRulesOutAMatch() throws {
        var records = (1...60).map(record)
        records += [
            Fixture.http(61, result: #"{"success":{"note":"\u004Bestrel","user":{"role":"\u0061dmin"}}}"#),
            Fixture.http(62, url: "http://API.LOCAL/V1/Items/62"),
            Fixture.http(63, result: #"{"success":{"user":{"role":"admin","id":1e2}}}"#),
            Fixture.http(64, result: #"{"success":{"user" : {"role":"admin","id" : 100}}}"#),
            Fixture.http(65, status: 503, responseHeaders: #"[["X-Quoted","a \"b\" c"]]"#),
            Fixture.tunnel(66), Fixture.websocket(67), Fixture.loss(3),
            // Another writer's spacing: whitespace next to structural characters.
            Fixture.http(68, result: #"{"success":{"r": [1, 2], "o": {"k": "v"}, "user":\#t{"id":\#t7}}}"#),
        ]
        let texts = queries + ["kestrel", "json:/user/role=admin", "json:/user/id=100", "json:/user/id>99",
                               "host=api.local", "url=*/V1/*", "path=/v1/items/62", "res.header.x-quoted=*\"b\"*",
                               "\"a \\\"b\\\" c\"", "status=503", "duration>1s", "reqsize>1000", "json:/user",
                               "req.header.authorization", "error", "kind=tunnel", "method=CONNECT", "github", "~websocket",
                               "json:/r=[1,2]", "\"1,2\"", "json:/o={\"k\":\"v\"}", "\"k\":\"v\"", "json:/r=*1,2*",
                               "json:/user/id=7", "reqjson:/x=[1,2]", "[1"]
        var kept = 0
        for text in texts {
            let query = try Query.parse(text)
            for line in records {
                let bytes = Array(line.utf8)
                guard let record = try? JSONParser.parse(bytes), query.matches(record) else { continue }
                kept += 1
                XCTAssertTrue(query.prefilter.mayMatch(bytes), "\(text) ruled out \(line)")
                XCTAssertTrue(query.matches(line: bytes), "\(text): \(line)")
            }
        }
        XCTAssertGreaterThan(kept, 300)
        XCTAssertTrue(try Query.parse("kestrel").matches(line: Array(records[60].utf8)), "\\u escapes are decoded")
        XCTAssertTrue(try Query.parse("json:/user/id=100").matches(line: Array(records[62].utf8)), "1e2 = 100")
        let spaced = Array(records[records.count - 1].utf8)
        for text in ["json:/r=[1,2]", "\"1,2\"", "json:/o={\"k\":\"v\"}", "json:/user/id=7"] {
            XCTAssertTrue(try Query.parse(text).matches(line: spaced), "\(text) on a line with spaces")
        }
    }

    /// A line that is not a JSON object is no record: not counted, printed or formatted, even
    /// by the empty query.
    func testUnreadableLinesAreSkippedEvenByTheEmptyQuery() throws {
        directory.write("tapwire.jsonl", Fixture.lines([record(1), "not json {", record(2), "[1,2]", "{\"id\":", record(3)]))
        XCTAssertEqual(try count(""), 3)
        XCTAssertEqual(try count("id or not id"), 3)
        XCTAssertEqual(try run(""), [1, 2, 3])
        XCTAssertEqual(try run("", reverse: true), [3, 2, 1])
        var out: [UInt8] = []
        try QueryCommand.run(layout: layout, query: Query.parse(""),
                             options: QueryScanOptions(form: .formatted(TailFormatter(color: false)), limit: nil, reverse: false,
                                                       threads: 1, chunkSize: 4096)) { out += $0 }
        XCTAssertFalse(String(decoding: out, as: UTF8.self).contains("unreadable"))
        XCTAssertEqual(out.split(separator: 10).count, 3)
    }

    /// And it does rule lines out: the point of it.
    func testThePrefilterRulesOutLinesThatCannotMatch() throws {
        let plain = Array(record(14).utf8)   // 200, GET, auth.internal, member, "nothing here"
        for text in ["status>=500", "kestrel", "json:/user/role=admin", "host=*.example.com", "status=4xx", "json:/user/id>=1000"] {
            XCTAssertFalse(try Query.parse(text).prefilter.mayMatch(plain), text)
        }
        for text in ["not status>=500", "status!=200", "url~x", "time>=-1h", "~s"] {
            XCTAssertTrue(try Query.parse(text).prefilter.mayMatch(plain), text)
        }
    }

    func testNeedleSearch() {
        func find(_ needle: String, _ hay: String, folded: Bool) -> Int? {
            let n = Array((folded ? needle.lowercased() : needle).utf8)
            return Array(hay.utf8).withUnsafeBufferPointer { h in
                folded ? Needle.findFolded(n, h.baseAddress!, 0, h.count) : Needle.findExact(n, h.baseAddress!, 0, h.count)
            }
        }
        XCTAssertEqual(find("kestrel", "a KeStReL b", folded: true), 2)
        XCTAssertNil(find("kestrel", "a KeStReL b", folded: false))
        XCTAssertEqual(find("zz", "azzz", folded: false), 1)
        XCTAssertEqual(find("ab", "ab", folded: true), 0)
        XCTAssertNil(find("abc", "ab", folded: true))
        XCTAssertEqual(find("\"status\"", #"{"x":{"status":200}}"#, folded: false), 6)
    }
}
