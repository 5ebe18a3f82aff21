import ExchangeLog
import Foundation
import LogTools
import ResponseSerialization
import XCTest
@testable import Viewer

/// The live lists' source: new lines from the active file's end, across a rotation and a
/// truncation, a backlog in steps, and rows only for the queries that keep them.
final class LiveFeedTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.path + "/viewer-live-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: directory) }

    private var active: String { directory + "/tapwire.jsonl" }
    private var layout: LogFileLayout { LogFileLayout(directory: directory, fileName: "tapwire.jsonl") }

    private func append(_ text: String, to path: String? = nil) throws {
        let path = path ?? active
        if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    private func texts(_ lines: [[UInt8]]) -> [String] { lines.map { String(decoding: $0, as: UTF8.self) } }
    private func texts(_ lines: [ArraySlice<UInt8>]) -> [String] { lines.map { String(decoding: $0, as: UTF8.self) } }

    func testNewLinesFromTheEndAcrossARotationAndATruncation() throws {
        try append("old 1\nold 2\n")
        let follower = LiveFeed.Follower(path: active, maxBytesPerLook: ViewerSettings().maxBytesPerLook)
        XCTAssertEqual(texts(follower.newLines()), [], "what was there before is history, not live")
        try append("a\nb\nhal")
        XCTAssertEqual(texts(follower.newLines()), ["a", "b"], "a half line waits")
        try append("f")
        // Rotation: renamed (same inode), a new active file begins.
        try FileManager.default.moveItem(atPath: active, toPath: directory + "/tapwire-20261201T000000.jsonl")
        try append("c\n")
        XCTAssertEqual(texts(follower.newLines()), ["half", "c"], "the old file's last line, then the new file from its start")
        try append("d\n")
        XCTAssertEqual(texts(follower.newLines()), ["d"])
        // Truncated in place (copytruncate), then written again.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: active))
        try handle.truncate(atOffset: 0)
        try handle.close()
        try append("e\n")
        XCTAssertEqual(texts(follower.newLines()), ["e"])
        follower.close()
    }

    /// Two rotations between looks: the file in between is not read, its records and the old
    /// file's last ones are counted as passed over (a gap the lists fill in from the log),
    /// never silently missing; then the new active file from its start.
    func testFilesRotatedWhileTheFeedWasBehindArePassedOverAsAGap() throws {
        try append("")
        let follower = LiveFeed.Follower(path: active, maxBytesPerLook: ViewerSettings().maxBytesPerLook)
        try append("a1\na2\n")
        XCTAssertEqual(texts(follower.newLines()), ["a1", "a2"])
        try append("a3\na4\n")
        try FileManager.default.moveItem(atPath: active, toPath: directory + "/tapwire-20261201T000000.jsonl")
        try append("b1\nb2\nb3\n")
        try FileManager.default.moveItem(atPath: active, toPath: directory + "/tapwire-20261201T000001.jsonl")
        try append("c1\n")
        XCTAssertEqual(texts(follower.newLines()), ["c1"])
        XCTAssertEqual(follower.passedOverRecords(), 2 + 3, "a3, a4 and the file in between")
        try append("c2\n")
        XCTAssertEqual(texts(follower.newLines()), ["c2"])
        XCTAssertEqual(follower.passedOverRecords(), 0)
        // One rotation, with the old file compressed (removed) meanwhile: nothing passed over.
        try FileManager.default.moveItem(atPath: active, toPath: directory + "/tapwire-20261201T000002.jsonl")
        try FileManager.default.removeItem(atPath: directory + "/tapwire-20261201T000002.jsonl")
        try append("d1\n")
        XCTAssertEqual(texts(follower.newLines()), ["d1"])
        XCTAssertEqual(follower.passedOverRecords(), 0)
        // Two rotations again, the file in between compressed meanwhile: counted from its .gz.
        try append("d2\n")
        try FileManager.default.moveItem(atPath: active, toPath: directory + "/tapwire-20261201T000003.jsonl")
        try append("e1\ne2\n")
        try FileManager.default.moveItem(atPath: active, toPath: directory + "/tapwire-20261201T000004.jsonl")
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/gzip")
        gzip.arguments = ["-n", directory + "/tapwire-20261201T000004.jsonl"]  // x.jsonl -> x.jsonl.gz
        try gzip.run()
        gzip.waitUntilExit()
        try append("f1\n")
        XCTAssertEqual(texts(follower.newLines()), ["f1"])
        XCTAssertEqual(follower.passedOverRecords(), 1 + 2, "d2 and the compressed file's two")
        follower.close()
    }

    /// A line longer than `maxBytesPerLook` is stepped over (the history shows it); the lines
    /// after it still come, whether its end falls inside a look or at the start of one.
    func testALineLongerThanALookIsSteppedOverAndTheNextLinesCome() throws {
        try append("")
        let follower = LiveFeed.Follower(path: active, maxBytesPerLook: 1024)
        defer { follower.close() }
        func drain() -> [String] {
            var out: [String] = []
            for _ in 0..<20 { out += texts(follower.newLines()) }
            return out
        }
        try append("a\n" + String(repeating: "x", count: 5000))
        XCTAssertEqual(drain(), ["a"])
        try append("xx\nb\n")
        XCTAssertEqual(drain(), ["b"], "the long line's end, then the next line")
        try append(String(repeating: "y", count: 3000))
        XCTAssertEqual(drain(), [])
        try append("\nc\nd\n")
        XCTAssertEqual(drain(), ["c", "d"], "a long line whose end starts a look")
        try append("e\n")
        XCTAssertEqual(drain(), ["e"])
    }

    func testABacklogIsReadInSteps() throws {
        try append("")
        // viewer.maxBytesPerLook, set low: the backlog is three looks.
        let perLook = 256 << 10
        let follower = LiveFeed.Follower(path: active, maxBytesPerLook: perLook)
        let line = String(repeating: "x", count: 999) + "\n"
        let count = (3 * perLook) / line.utf8.count
        try append(String(repeating: line, count: count))
        var total = 0
        var looks = 0
        while total < count && looks < 20 {
            let lines = follower.newLines()
            XCTAssertLessThanOrEqual(lines.count * line.utf8.count, perLook + line.utf8.count)
            total += lines.count
            looks += 1
        }
        XCTAssertEqual(total, count)
        XCTAssertGreaterThanOrEqual(looks, 3, "at most maxBytesPerLook bytes per look")
        follower.close()
    }

    /// Lists without a query get their lines as they are, made into rows when taken: the rows
    /// are the same as made at once, a line too long to hold unparsed is made at once, a line
    /// that is no record is no row, and lines a look left queued are rows by the next look.
    func testAListWithoutAQueryGetsItsRowsWhenItTakesThem() throws {
        try append("")
        var settings = ViewerSettings()
        settings.pollInterval = 0.02
        let feed = LiveFeed(layout: layout, settings: settings)
        let list = feed.subscribe(.all)
        defer { feed.unsubscribe(list) }
        func record(_ n: Int, body: String = "1") -> String {
            #"{"id":"0000018c2b1f4a1e-\#(String(format: "%06d", n))","kind":"http","request":{"method":"GET","url":"http://a.local/x/\#(n)","headers":[]},"#
                + #""response":{"status":200,"headers":[]},"result":{"success":\#(body)}}"#
        }
        let long = record(2, body: "\"" + String(repeating: "b", count: 2 * LiveFeed.maxDeferredLineBytes) + "\"")
        try append(record(1) + "\n" + long + "\n" + "not json\n")
        // Two looks' worth before the list takes anything: the first look's lines are rows by then.
        Thread.sleep(forTimeInterval: 0.2)
        try append(record(3) + "\n")
        var rows: [[UInt8]] = []
        let deadline = Date().addingTimeInterval(10)
        while rows.count < 3 && Date() < deadline { rows += list.take(timeout: 0.2).rows }
        XCTAssertEqual(rows.count, 3, texts(rows).joined(separator: "\n"))
        for (row, n) in zip(rows, [1, 2, 3]) {
            let line = Array((n == 2 ? long : record(n)).utf8)
            XCTAssertEqual(row, RecordSummary.bytes(try JSONParser.parse(line, allowFragments: false)), "row \(n)")
        }
    }

    func testEachSubscriberGetsTheRowsItsQueryKeeps() throws {
        try append("")
        let feed = LiveFeed(layout: layout, settings: ViewerSettings())
        let errors = feed.subscribe(try Query.parse("status>=500"))
        let everything = feed.subscribe(.all)
        defer { feed.unsubscribe(errors); feed.unsubscribe(everything) }
        func record(_ n: Int, _ status: Int) -> String {
            #"{"id":"0000018c2b1f4a1e-\#(String(format: "%06d", n))","kind":"http","request":{"method":"GET","url":"http://a.local/x/\#(n)","headers":[]},"response":{"status":\#(status),"headers":[]}}"# + "\n"
        }
        try append(record(1, 200) + record(2, 503) + "not json\n" + record(3, 500))
        var all: [[UInt8]] = [], failed: [[UInt8]] = []
        let deadline = Date().addingTimeInterval(10)
        while (all.count < 3 || failed.count < 2) && Date() < deadline {
            all += everything.take(timeout: 0.2).rows
            failed += errors.take(timeout: 0.2).rows
        }
        XCTAssertEqual(all.count, 3, "a line that is not a record is no row")
        XCTAssertEqual(failed.count, 2)
        XCTAssertTrue(texts(failed).allSatisfy { $0.contains(#""status":5"#) }, "\(texts(failed))")
        XCTAssertTrue(texts(all)[0].contains(#""path":"/x/1""#), texts(all)[0])
    }

    /// A list that joins while the feed is looking at the file gets every row written after
    /// `subscribe` returns. The follower below lets a list join in the middle of a look and
    /// "writes" a record the moment that `subscribe` returns, in whichever look that is.
    func testAListThatJoinsDuringALookGetsTheRowsWrittenAfterItJoined() throws {
        try append("")
        var settings = ViewerSettings()
        settings.pollInterval = 0.01
        let record = #"{"id":"r-1","kind":"http","request":{"method":"GET","url":"http://a.local/1","headers":[]},"response":{"status":503,"headers":[]}}"#
        let follower = JoiningFollower(path: active, maxBytesPerLook: settings.maxBytesPerLook, line: Array(record.utf8))
        let feed = LiveFeed(layout: layout, settings: settings,
                            follower: { _, _ in follower })
        let first = feed.subscribe(.all)
        defer { feed.unsubscribe(first) }
        let failures = try Query.parse("status>=500")
        follower.arm { feed.subscribe(failures) }
        guard let joined = follower.joined(within: 5) else { return XCTFail("the list never joined") }
        defer { feed.unsubscribe(joined) }
        var rows: [[UInt8]] = []
        let deadline = Date().addingTimeInterval(5)
        while rows.isEmpty && Date() < deadline { rows += joined.take(timeout: 0.1).rows }
        XCTAssertEqual(texts(rows).count, 1, "a record written after the list joined never reached it")
        XCTAssertTrue(texts(rows).first?.contains(#""id":"r-1""#) ?? false, "\(texts(rows))")
        XCTAssertTrue(follower.joinedMidLook == false, "a list joins between looks, never during one")
    }

    /// A list that joins while the first list's feed is still starting gets the rows written
    /// after it joined: the file's end is taken before any other `subscribe` can return. Here
    /// the second list joins (and a record is written at once) while the follower is made.
    func testAListThatJoinsWhileTheFeedStartsGetsTheRowsWrittenAfterItJoined() throws {
        try append("")
        var settings = ViewerSettings()
        settings.pollInterval = 0.01
        let record = #"{"id":"r-1","kind":"http","request":{"method":"GET","url":"http://a.local/1","headers":[]},"response":{"status":503,"headers":[]}}"# + "\n"
        let join = LateJoin()
        let feed = LiveFeed(layout: layout, settings: settings,
                            follower: { [self] path, perLook in
            Thread {
                guard let feed = join.feed else { return }
                let subscriber = feed.subscribe(.all)
                try? self.append(record)
                join.joined.lock(); join.second = subscriber; join.joined.broadcast(); join.joined.unlock()
            }.start()
            join.joined.lock()
            _ = join.joined.wait(until: Date().addingTimeInterval(0.3))
            join.joined.unlock()
            return LiveFeed.Follower(path: path, maxBytesPerLook: perLook)
        })
        join.feed = feed
        let joined = join.joined
        let first = feed.subscribe(.all)
        defer { feed.unsubscribe(first) }
        joined.lock()
        let deadline = Date().addingTimeInterval(5)
        while join.second == nil && joined.wait(until: deadline) {}
        let late = join.second
        joined.unlock()
        guard let late else { return XCTFail("the second list never joined") }
        defer { feed.unsubscribe(late) }
        var rows: [[UInt8]] = []
        let until = Date().addingTimeInterval(3)
        while rows.isEmpty && Date() < until { rows += late.take(timeout: 0.1).rows }
        XCTAssertEqual(rows.count, 1, "a record written after the list joined never reached it")
    }

    /// More new lines in one look than `maxRowsPerLook`: the newest are rows, the rest a
    /// gap the page fills in from the log; with or without a query.
    func testABurstBeyondALooksRowsBecomesAGapAndTheNewestRows() throws {
        try append("")
        // viewer.maxRowsPerLook, set below its default: the configured bound is the one kept.
        var settings = ViewerSettings()
        settings.maxRowsPerLook = 40
        let feed = LiveFeed(layout: layout, settings: settings)
        let everything = feed.subscribe(.all)
        let some = feed.subscribe(try Query.parse("status>=500"))
        // A page's `rows`: fewer a look for this list, and never more than maxRowsPerLook.
        let narrow = feed.subscribe(.all, rowsPerLook: 7)
        let wide = feed.subscribe(.all, rowsPerLook: 10_000)
        XCTAssertEqual([narrow.rowsPerLook, wide.rowsPerLook], [7, settings.maxRowsPerLook])
        defer { feed.unsubscribe(everything); feed.unsubscribe(some); feed.unsubscribe(narrow); feed.unsubscribe(wide) }
        let burst = 3 * settings.maxRowsPerLook
        var text = ""
        for n in 1...burst {
            text += #"{"id":"r-\#(n)","kind":"http","request":{"method":"GET","url":"http://a.local/\#(n)","headers":[]},"#
                + #""response":{"status":503,"headers":[]},"result":{"success":{"big":[1,2,3]}}}"# + "\n"
        }
        try append(text)
        for subscriber in [everything, some, narrow, wide] {
            var rows: [[UInt8]] = [], skipped = 0
            let deadline = Date().addingTimeInterval(10)
            while rows.count + skipped < burst && Date() < deadline {
                let taken = subscriber.take(timeout: 0.2)
                // A gap drops the older rows still queued: they are counted in it.
                if taken.skipped > 0 { rows.removeAll() }
                rows += taken.rows
                skipped += taken.skipped
            }
            XCTAssertEqual(rows.count + skipped, burst)
            XCTAssertGreaterThan(skipped, 0, "the burst fit one look: nothing was shown")
            XCTAssertLessThanOrEqual(rows.count, subscriber.rowsPerLook * 2)
            XCTAssertTrue(texts(rows).last?.contains(#""id":"r-\#(burst)""#) ?? false, "the newest row is last")
        }
    }

    /// viewer.maxQueuedRows: a list that takes no rows for a while (a paced stream asleep, a
    /// browser that stopped reading) keeps the newest that many; the older ones are a gap, so
    /// the queue stays bounded and the list fills them in from the log.
    func testAListThatFallsBehindKeepsTheNewestRowsAndCountsTheRestAsAGap() {
        func line(_ n: Int) -> LiveFeed.Subscriber.Queued {
            .line(Array(#"{"id":"r-\#(n)","kind":"http","request":{"method":"GET","url":"http://a.local/\#(n)","headers":[]},"response":{"status":200,"headers":[]}}"#.utf8))
        }
        func ids(_ rows: [[UInt8]]) -> [String] {
            rows.map { row in
                let text = String(decoding: row, as: UTF8.self)
                guard let start = text.range(of: #""id":""#), let end = text[start.upperBound...].firstIndex(of: "\"") else { return text }
                return String(text[start.upperBound..<end])
            }
        }
        let list = LiveFeed.Subscriber(query: .all, rowsPerLook: 10, maxQueuedRows: 25)
        // Six looks of ten lines, none taken: the newest 25 wait.
        for look in 0..<6 { list.offer((1...10).map { line(look * 10 + $0) }, skipped: 0) }
        let behind = list.take(timeout: 1)
        XCTAssertEqual(behind.skipped, 35)
        XCTAssertEqual(ids(behind.rows), (36...60).map { "r-\($0)" })

        // A batch larger than the queue on its own: its newest rows, the rest of it a gap.
        list.offer((61...90).map { .row(Array(#"{"id":"r-\#($0)"}"#.utf8)) }, skipped: 0)
        let burst = list.take(timeout: 1)
        XCTAssertEqual(burst.skipped, 5)
        XCTAssertEqual(ids(burst.rows), (66...90).map { "r-\($0)" })

        // A look's own gap after queued rows: they are older than it and go into it.
        list.offer((91...95).map(line), skipped: 0)
        list.offer((100...102).map(line), skipped: 4)
        let gap = list.take(timeout: 1)
        XCTAssertEqual(gap.skipped, 9)
        XCTAssertEqual(ids(gap.rows), ["r-100", "r-101", "r-102"])

        // A gap alone wakes the stream at once.
        list.offer([], skipped: 3)
        let started = Date()
        let alone = list.take(timeout: 5)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1)
        XCTAssertEqual(alone.skipped, 3)
        XCTAssertTrue(alone.rows.isEmpty)
    }
}

/// Follows the file like the feed's own follower, except that once armed, the next look lets a
/// list join (on another thread, waiting a moment for it) and hands over `line` as soon as that
/// join has returned: in that look if the list could join during it, else in a later one.
private final class JoiningFollower: LiveFeed.Follower, @unchecked Sendable {
    private let state = NSCondition()
    private let line: [UInt8]
    private var join: (() -> LiveFeed.Subscriber)?
    private var subscriber: LiveFeed.Subscriber?
    private var given = false
    private(set) var joinedMidLook: Bool?

    init(path: String, maxBytesPerLook: Int, line: [UInt8]) {
        self.line = line
        super.init(path: path, maxBytesPerLook: maxBytesPerLook)
    }

    func arm(_ join: @escaping () -> LiveFeed.Subscriber) {
        state.lock(); self.join = join; state.unlock()
    }

    func joined(within seconds: Double) -> LiveFeed.Subscriber? {
        state.lock(); defer { state.unlock() }
        let deadline = Date().addingTimeInterval(seconds)
        while subscriber == nil && state.wait(until: deadline) {}
        return subscriber
    }

    override func newLines() -> [ArraySlice<UInt8>] {
        var lines = super.newLines()
        state.lock(); defer { state.unlock() }
        if let join {
            self.join = nil
            Thread { [self] in
                let joined = join()
                state.lock(); subscriber = joined; state.broadcast(); state.unlock()
            }.start()
            _ = state.wait(until: Date().addingTimeInterval(0.3))
            joinedMidLook = subscriber != nil
        }
        if subscriber != nil && !given {
            given = true
            lines.append(line[...])
        }
        return lines
    }
}

/// The second list of the start-up race test, handed between threads under `joined`.
private final class LateJoin: @unchecked Sendable {
    let joined = NSCondition()
    var second: LiveFeed.Subscriber?
    weak var feed: LiveFeed?
}
