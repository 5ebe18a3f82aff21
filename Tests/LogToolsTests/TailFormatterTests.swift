import ResponseSerialization
import XCTest
@testable import LogTools

final class TailFormatterTests: XCTestCase {
    private let plain = TailFormatter(color: false)
    private let colored = TailFormatter(color: true)
    private let esc = "\u{1B}["

    private func line(_ formatter: TailFormatter, _ record: String) -> String {
        formatter.format(line: Array(record.utf8))
    }

    func testAnHTTPRecordShowsTimeMethodURLStatusSizeDurationSerializerAndValue() {
        XCTAssertEqual(line(plain, Fixture.http(1)),
                       #"10:11:12.123 GET http://api.local:8080/v1/items/1?x=1 200 1.0 KB 2.1 ms json {"items":[1,2,3]}"#)
    }

    func testStatusColoursFollowTheStatusClass() {
        XCTAssertEqual(line(colored, Fixture.http(1)),
                       "10:11:12.123 GET http://api.local:8080/v1/items/1?x=1 \(esc)32m200\(esc)0m 1.0 KB 2.1 ms json {\"items\":[1,2,3]}")
        XCTAssertTrue(line(colored, Fixture.http(2, status: 301)).contains(" \(esc)36m301\(esc)0m "))
        XCTAssertTrue(line(colored, Fixture.http(2, status: 404)).contains(" \(esc)33m404\(esc)0m "))
        XCTAssertTrue(line(colored, Fixture.http(2, status: 503)).contains(" \(esc)31m503\(esc)0m "))
        XCTAssertFalse(line(plain, Fixture.http(2, status: 503)).contains(esc))
    }

    func testATransportErrorTakesTheStatusColumnAndItsMessageTheValueColumn() {
        let refused = Fixture.http(4, url: "http://down.local/", status: nil,
                                   result: #"{"failure":{"error":"upstreamConnectFailed","message":"connection refused"}}"#,
                                   error: Fixture.connectFailed)
        XCTAssertEqual(line(plain, refused),
                       "10:11:12.123 GET http://down.local/ upstreamConnectFailed - 2.1 ms json connection refused")
        XCTAssertEqual(line(colored, refused),
                       "10:11:12.123 GET http://down.local/ \(esc)31mupstreamConnectFailed\(esc)0m - 2.1 ms json \(esc)31mconnection refused\(esc)0m")
    }

    func testAnErrorAfterTheResponseHeadKeepsTheStatusAndNamesTheError() {
        let reset = Fixture.http(5, error: #"{"code":"upstreamReset","message":"connection reset by peer"}"#)
        XCTAssertTrue(line(plain, reset).hasSuffix(" 200 1.0 KB 2.1 ms json upstreamReset: connection reset by peer"),
                      line(plain, reset))
    }

    func testAFailedResultShowsItsReasonAndMessage() {
        let failed = Fixture.http(5, result: #"{"failure":{"error":"responseSerializationFailed","reason":"jsonSerializationFailed","message":"Unexpected end at byte 3"}}"#)
        XCTAssertEqual(line(plain, failed),
                       "10:11:12.123 GET http://api.local:8080/v1/items/5?x=1 200 1.0 KB 2.1 ms json jsonSerializationFailed: Unexpected end at byte 3")
        XCTAssertTrue(line(colored, failed).hasSuffix("json \(esc)31mjsonSerializationFailed: Unexpected end at byte 3\(esc)0m"))
    }

    func testLongValuesAreCutToThePreviewWidth() {
        let long = String(repeating: "a", count: 200)
        let text = line(plain, Fixture.http(1, serializer: "string", result: #"{"success":"\#(long)"}"#))
        let preview = text.components(separatedBy: " string ").last ?? ""
        XCTAssertEqual(preview, "\"" + String(repeating: "a", count: 78) + "…")
        XCTAssertEqual(preview.count, 80)
    }

    func testControlCharactersFromTheRecordCannotReachTheTerminal() {
        let text = line(plain, Fixture.http(1, url: #"http://evil.local/\u001b[2J"#))
        XCTAssertTrue(text.contains("http://evil.local/?[2J "), text)
        XCTAssertFalse(text.contains("\u{1B}"))
    }

    func testTunnelRecordsShowTargetByteCountsDurationAndWhoClosed() {
        XCTAssertEqual(line(plain, Fixture.tunnel(7)),
                       "10:11:14.500 CONNECT api.github.com:443 200 up 1.2 KB down 34.5 KB 1523.0 ms closed by client")
        let broken = Fixture.tunnel(8, error: #"{"code":"upstreamReset","message":"reset"}"#, closedBy: "error")
        XCTAssertEqual(line(colored, broken),
                       "10:11:14.500 CONNECT api.github.com:443 \(esc)32m200\(esc)0m up 1.2 KB down 34.5 KB 1523.0 ms closed by error \(esc)31mupstreamReset: reset\(esc)0m")
    }

    func testWebSocketRecordsShowTheUpgradeAndByteCounts() {
        XCTAssertEqual(line(plain, Fixture.websocket(9)),
                       "10:11:17.250 WEBSOCKET GET http://chat.local/socket 101 up 1.2 KB down 34.5 KB 2000.0 ms -")
        let bare = #"{"kind":"websocket","target":"chat.local:80","status":101,"bytesFromClient":10,"bytesFromUpstream":20,"startTime":"2026-12-02T10:11:17.250000Z","duration":2.0,"closedBy":"client","error":null}"#
        XCTAssertEqual(line(plain, bare), "10:11:17.250 WEBSOCKET chat.local:80 101 up 10 B down 20 B 2000.0 ms closed by client")
    }

    func testWebSocketMessagesShowDirectionOpcodeSizeAndValue() {
        let message = #"{"id":"x","kind":"wsMessage","connection":"y","direction":"client","opcode":"text","size":17,"time":"2026-12-02T10:11:18.000000Z","result":{"success":{"hello":"world"}}}"#
        XCTAssertEqual(line(plain, message), #"10:11:18.000 WS client text 17 B {"hello":"world"}"#)
        let cut = #"{"kind":"wsMessage","direction":"server","opcode":"text","size":9,"time":"2026-12-02T10:11:18.000000Z","result":{"failure":{"error":"responseSerializationFailed","reason":"inputDataTruncated","message":"m"}}}"#
        XCTAssertEqual(line(plain, cut), "10:11:18.000 WS server text 9 B inputDataTruncated")
    }

    func testLossRecordsSayHowManyRecordsWereLostAndWhy() {
        XCTAssertEqual(line(plain, Fixture.loss(3)), "10:11:15.000 LOST 3 records (disk full)")
        XCTAssertEqual(line(plain, Fixture.loss(1, reason: "")), "10:11:15.000 LOST 1 record")
        XCTAssertEqual(line(colored, Fixture.loss(3)), "10:11:15.000 \(esc)31mLOST 3 records (disk full)\(esc)0m")
    }

    func testUnreadableLinesAreShownAsSuch() {
        XCTAssertEqual(line(plain, "not json"), "(unreadable record) not json")
    }

    func testColourOnlyOnATerminalWithoutNoColor() throws {
        XCTAssertTrue(TailFormatter.colorWanted(isTerminal: true, environment: [:]))
        XCTAssertTrue(TailFormatter.colorWanted(isTerminal: true, environment: ["NO_COLOR": ""]))
        XCTAssertFalse(TailFormatter.colorWanted(isTerminal: true, environment: ["NO_COLOR": "1"]))
        XCTAssertFalse(TailFormatter.colorWanted(isTerminal: false, environment: [:]))
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/null"))
        defer { try? file.close() }
        XCTAssertFalse(TailFormatter.colorWanted(fileDescriptor: file.fileDescriptor, environment: [:]))
    }

    func testSizesAndTimesAreHumanReadable() {
        XCTAssertEqual(TailFormatter.humanSize(0), "0 B")
        XCTAssertEqual(TailFormatter.humanSize(1023), "1023 B")
        XCTAssertEqual(TailFormatter.humanSize(1536), "1.5 KB")
        XCTAssertEqual(TailFormatter.humanSize(5 * 1024 * 1024), "5.0 MB")
        XCTAssertEqual(TailFormatter.humanSize(3 * 1024 * 1024 * 1024), "3.0 GB")
        XCTAssertEqual(TailFormatter.timeOfDay("2026-12-02T23:59:59.9Z"), "23:59:59.900")
        XCTAssertEqual(TailFormatter.timeOfDay("2026-12-02T23:59:59Z"), "23:59:59.000")
        XCTAssertEqual(TailFormatter.timeOfDay("yesterday"), "--:--:--.---")
    }

    func testTailPrintsFilteredRecordsFormattedOrRawUnchanged() throws {
        let directory = try TemporaryLogDirectory()
        defer { directory.remove() }
        let spaced = #"{"kind":"loss", "lost":2,"time":"2026-12-02T10:11:15.000000Z","reason":"queue full"}"#
        directory.write("tapwire.jsonl", Fixture.lines([Fixture.http(1), Fixture.http(2, status: 404), spaced]))

        var raw: [UInt8] = []
        let rawCount = try TailCommand.run(source: RecordSource(directory: directory.path), filter: .parse(["error"]),
                                           formatter: plain, rawJSON: true) { raw += $0 }
        XCTAssertEqual(rawCount, 1)
        XCTAssertEqual(String(decoding: raw, as: UTF8.self), spaced + "\n", "--json passes the bytes through")

        var text: [UInt8] = []
        try TailCommand.run(source: RecordSource(directory: directory.path), filter: .parse(["status=4xx"]),
                            formatter: plain, rawJSON: false) { text += $0 }
        XCTAssertEqual(String(decoding: text, as: UTF8.self),
                       #"10:11:12.123 GET http://api.local:8080/v1/items/2?x=1 404 1.0 KB 2.1 ms json {"items":[1,2,3]}"# + "\n")
    }

    func testTailWithoutAFilterSkipsUnreadableLines() throws {
        let directory = try TemporaryLogDirectory()
        defer { directory.remove() }
        directory.write("tapwire.jsonl", Fixture.lines([Fixture.http(1), "not json", Fixture.http(2)]))
        for rawJSON in [true, false] {
            var out: [UInt8] = []
            let printed = try TailCommand.run(source: RecordSource(directory: directory.path), filter: .all,
                                              formatter: plain, rawJSON: rawJSON) { out += $0 }
            XCTAssertEqual(printed, 2)
            XCTAssertFalse(String(decoding: out, as: UTF8.self).contains("not json"))
        }
    }
}
