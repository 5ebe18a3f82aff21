import ExchangeLog
import Foundation
import ResponseSerialization
import XCTest
@testable import LogTools

/// The viewer's pages, newest first: every record once across a .gz, a plain rotated file and
/// the active one, whatever the page size and chunk size; cursors that survive a rotation and
/// a compression between two pages; a query applied; the active file's half line left out.
final class RecordPagerTests: XCTestCase {
    private var directory: TemporaryLogDirectory!

    override func setUpWithError() throws { directory = try TemporaryLogDirectory() }
    override func tearDown() { directory.remove() }

    private var layout: LogFileLayout { LogFileLayout(directory: directory.path, fileName: "tapwire.jsonl") }

    private func lines(_ numbers: ClosedRange<Int>) -> String {
        Fixture.lines(numbers.map { Fixture.http($0, status: $0 % 5 == 0 ? 503 : 200) })
    }

    /// rotated .gz (1–30), rotated plain (31–50), active (51–80 and half a line).
    private func writeLog() throws {
        try directory.writeGzip("tapwire-20261201T000000.jsonl.gz", lines(1...30))
        directory.write("tapwire-20261201T010000.jsonl", lines(31...50))
        directory.write("tapwire.jsonl", lines(51...80) + #"{"id":"0000018c2b1f4a1e-000081","kind":"ht"#)
    }

    private func numbers(_ page: RecordPage) -> [Int] { page.lines.map { Fixture.number(ofLine: $0) ?? -1 } }

    /// Every page until the end; the numbers in order.
    private func all(_ query: String = "", limit: Int, chunkSize: Int = 4096,
                     between: (Int) throws -> Void = { _ in }) throws -> [Int] {
        var out: [Int] = []
        var cursor: RecordCursor?
        var pages = 0
        repeat {
            let page = try RecordPager.page(layout: layout, query: Query.parse(query), before: cursor, limit: limit, chunkSize: chunkSize)
            out += numbers(page)
            // The cursor goes through its text, as the page sends it back.
            cursor = page.next.flatMap { RecordCursor(text: $0.text) }
            XCTAssertEqual(page.next != nil, cursor != nil, "a cursor's text parses back")
            pages += 1
            try between(pages)
        } while cursor != nil && pages < 1000
        return out
    }

    func testEveryRecordOnceNewestFirstWhateverThePageSize() throws {
        try writeLog()
        for limit in [1, 3, 7, 20, 30, 31, 80, 500] {
            for chunk in [4096, 1 << 20] {
                XCTAssertEqual(try all(limit: limit, chunkSize: chunk), Array((1...80).reversed()), "limit \(limit), chunk \(chunk)")
            }
        }
    }

    /// A cursor is request input: a position past every match in a .gz file is an empty
    /// page, never an arithmetic overflow (which would stop the whole process).
    func testAHugeCursorPositionInACompressedFileIsAnEmptyPage() throws {
        try writeLog()
        for position in [Int64.max, Int64.max / 2, 1 << 40] {
            let cursor = RecordCursor(file: "tapwire-20261201T000000.jsonl.gz", device: 0, inode: 0, position: position, lastID: "x")
            let page = try RecordPager.page(layout: layout, query: .all, before: cursor, limit: 5)
            XCTAssertEqual(numbers(page), [], "position \(position)")
            XCTAssertNil(page.next)
        }
    }

    func testAQueryKeepsItsRecordsOnly() throws {
        try writeLog()
        XCTAssertEqual(try all("status=503", limit: 4), Array(stride(from: 80, through: 5, by: -5)))
        XCTAssertEqual(try all("status=404", limit: 4), [])
    }

    func testAPageEndsWithNoCursorAtTheOldestRecord() throws {
        try writeLog()
        let page = try RecordPager.page(layout: layout, query: .all, before: nil, limit: 80)
        XCTAssertEqual(numbers(page).count, 80)
        XCTAssertNil(page.next)
        let partial = try RecordPager.page(layout: layout, query: .all, before: nil, limit: 79)
        XCTAssertNotNil(partial.next)
    }

    func testACursorSurvivesARotationBetweenPages() throws {
        try writeLog()
        let seen = try all(limit: 7) { page in
            guard page == 2 else { return }
            // The writer rotates: the active file is renamed (same inode), a new one starts.
            try self.directory.rename("tapwire.jsonl", "tapwire-20261201T020000.jsonl")
            self.directory.write("tapwire.jsonl", self.lines(81...85))
        }
        XCTAssertEqual(seen, Array((1...80).reversed()), "older pages go on where they stopped; newer records are the live list's")
    }

    func testACursorIntoAFileCompressedSinceFallsBackToItsID() throws {
        try writeLog()
        let seen = try all(limit: 9) { page in
            guard page == 4 else { return }
            // The archiver compressed the plain rotated file the cursor points into (new inode).
            let plain = self.directory.path + "/tapwire-20261201T010000.jsonl"
            let text = try String(contentsOfFile: plain, encoding: .utf8)
            try FileManager.default.removeItem(atPath: plain)
            try self.directory.writeGzip("tapwire-20261201T010000.jsonl.gz", text)
        }
        XCTAssertEqual(seen, Array((1...80).reversed()))
    }

    /// The archiver compressed the plain rotated file after the page listed the files and
    /// before it opened them: its records are read from the .gz, none is skipped.
    func testAFileCompressedBetweenListingAndOpeningIsReadAsItsGz() throws {
        try writeLog()
        let plain = "tapwire-20261201T010000.jsonl"
        let page = try RecordPager.page(layout: layout, query: .all, before: nil, limit: 80, chunkSize: 4096, afterListing: {
            try? self.directory.writeGzip(plain + ".gz", self.lines(31...50))
            try? FileManager.default.removeItem(atPath: self.directory.path + "/" + plain)
        })
        XCTAssertEqual(numbers(page), Array((1...80).reversed()))
        // A page that stops inside it hands a cursor that goes on in the .gz.
        var cursor: RecordCursor?
        var out: [Int] = []
        repeat {
            let next = try RecordPager.page(layout: layout, query: .all, before: cursor, limit: 7, chunkSize: 4096, afterListing: {})
            out += numbers(next)
            cursor = next.next
        } while cursor != nil && out.count < 200
        XCTAssertEqual(out, Array((1...80).reversed()))
    }

    /// What the live feed counts as passed over when it skips whole rotated files.
    func testALineCountOfARotatedFilePlainGzCompressedSinceOrGone() throws {
        try writeLog()
        let dir = directory.path
        XCTAssertEqual(RecordSource.lineCount(ofRotated: dir + "/tapwire-20261201T000000.jsonl.gz"), 30)
        XCTAssertEqual(RecordSource.lineCount(ofRotated: dir + "/tapwire-20261201T010000.jsonl"), 20)
        directory.write("tapwire-20261201T020000.jsonl", "{}\n{}")
        XCTAssertEqual(RecordSource.lineCount(ofRotated: dir + "/tapwire-20261201T020000.jsonl"), 2, "a last line without its newline")
        // Compressed since it was listed: the plain name is read as its .gz.
        try directory.writeGzip("tapwire-20261201T010000.jsonl.gz", lines(31...50))
        try FileManager.default.removeItem(atPath: dir + "/tapwire-20261201T010000.jsonl")
        XCTAssertEqual(RecordSource.lineCount(ofRotated: dir + "/tapwire-20261201T010000.jsonl"), 20)
        XCTAssertNil(RecordSource.lineCount(ofRotated: dir + "/tapwire-20261130T000000.jsonl"))
    }

    func testAMalformedCursorTextIsRefused() {
        XCTAssertNil(RecordCursor(text: ""))
        XCTAssertNil(RecordCursor(text: "a/b/c/d/e"))
        XCTAssertNil(RecordCursor(text: "tapwire.jsonl/1/2/-3/x"))
        XCTAssertEqual(RecordCursor(text: "tapwire.jsonl/1/2/3/0000018c2b1f4a1e-000001")?.position, 3)
    }

    func testASummaryRowNamesWhatTheListShows() throws {
        let record = try JSONParser.parse(Array(Fixture.http(7, status: 503).utf8), allowFragments: false)
        let row = RecordSummary.json(record)
        XCTAssertEqual(row[member: "id"]?.stringValue, "0000018c2b1f4a1e-000007")
        XCTAssertEqual(row[member: "status"], .number("503"))
        XCTAssertEqual(row[member: "path"]?.stringValue, "/v1/items/7")
        XCTAssertEqual(row[member: "duration"], .number("0.0021"), "the number's text as logged")
        let loss = try JSONParser.parse(Array(#"{"kind":"loss","lost":3,"time":"2026-12-02T10:11:15.000000Z","reason":"queue full"}"#.utf8))
        XCTAssertEqual(RecordSummary.json(loss)[member: "lost"], .number("3"))
        let tunnel = try JSONParser.parse(Array(Fixture.tunnel(9).utf8))
        XCTAssertEqual(RecordSummary.json(tunnel)[member: "method"]?.stringValue, "CONNECT")
        XCTAssertEqual(RecordSummary.json(tunnel)[member: "host"]?.stringValue, "api.github.com")
        let message = try JSONParser.parse(Array((#"{"id":"m","kind":"wsMessage","connection":"c","direction":"client","opcode":"binary","#
            + #""size":5,"time":"2026-12-04T22:42:17.474704Z","result":{"failure":{"error":"msgpackSerializationFailed","reason":"at 3"}}}"#).utf8))
        let messageRow = RecordSummary.json(message)
        let expected: [JSON?] = [.string("client"), .string("binary"), .string("c"), .number("5"), .string("2026-12-04T22:42:17.474704Z")]
        XCTAssertEqual(["direction", "opcode", "connection", "size", "time"].map { messageRow[member: $0] }, expected)
        XCTAssertEqual(messageRow[member: "failure"]?.stringValue, "at 3")
    }
}


/// `RecordSkeleton`: the members a row needs, the rest stepped over, giving the same row.
final class RecordSkeletonTests: XCTestCase {
    func testTheSkeletonsRowEqualsTheFullParsesRow() throws {
        let lines = [
            Fixture.http(7, status: 503), Fixture.http(8, method: "POST", url: "https://h.example/a?b={c}", status: nil),
            Fixture.tunnel(9), Fixture.tunnel(10, error: #"{"code":"upstreamReset","message":"x"}"#), Fixture.websocket(11),
            Fixture.loss(3), Fixture.loss(4, reason: "queue full"),
            #"{"id":"m","kind":"wsMessage","connection":"c","direction":"server","opcode":"text","size":23,"#
                + #""time":"2026-12-04T22:42:17.474704Z","result":{"success":{"hello":"world","n":1}}}"#,
            #"{"kind":"http","id":"a","request":{"method":"GET","url":"http://x/y","headers":[["a","}{]["],["b","\\\"}"]]},"#
                + #""response":{"status":200,"headers":[],"bodySize":12,"mimeType":"text/plain"},"serializer":"json","#
                + #""result":{"success":{"k":[1,{"n":"\\"},"}{]["],"e":"\u00e9"}},"timeline":{"requestStartTime":"t","requestDuration":0.5},"#
                + #""data":{"size":12},"rule":"r","replayOf":"z"}"#,
            #"{"kind":"http","result":{"failure":{"error":"jsonSerializationFailed","reason":"bad"}} , "id" : "w" }"#,
        ]
        for line in lines {
            let bytes = Array(line.utf8)
            let full = try JSONParser.parse(bytes, allowFragments: false)
            let skeleton = try XCTUnwrap(RecordSkeleton.parse(bytes), line)
            XCTAssertEqual(RecordSummary.json(skeleton), RecordSummary.json(full), line)
            XCTAssertNil(skeleton[path: "request", "headers"], "headers are stepped over")
            XCTAssertNil(skeleton[path: "result", "success"], "the body is stepped over")
        }
    }

    func testBrokenLinesGiveNilNeverACrash() {
        for line in ["", "{", #"{"id":"#, #"{"id":"a"#, #"{"request":{"headers":[["a","b"]"#, #"{"a":1,}"#, "[1]", #"{"id":"a"}x"#,
                     #"{"result":{"success":"\"#, #"{"k":tru"#] {
            _ = RecordSkeleton.parse(Array(line.utf8))
        }
        XCTAssertNil(RecordSkeleton.parse(Array("{".utf8)))
        XCTAssertNil(RecordSkeleton.parse(Array(#"{"id":"a""#.utf8)))
        XCTAssertNil(RecordSkeleton.parse(Array(#"{"result":{"success":"\"}}"#.utf8)))
    }
}
