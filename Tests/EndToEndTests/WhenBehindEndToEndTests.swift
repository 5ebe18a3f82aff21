import Foundation
import XCTest

/// `log.whenBehind: wait` in the real binary: with a decode queue far too small for the
/// traffic (1 MiB of captures, while every exchange captures 1 MiB), clients are held
/// instead of records being dropped, so every exchange is logged exactly once.
/// (`drop` with the same queue loses most of them: the pipeline tests show that side.)
final class WhenBehindEndToEndTests: XCTestCase {
    func testWaitLogsEveryExchangeWhenDecodingFallsBehind() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["log": ["whenBehind": "wait", "decodeQueueCapacity": 16,
                                                        "decodeQueueBytes": 1_048_576]])
        // ~512 KiB of JSON each way (request body echoed): both are decoded and logged.
        let clients = 8, perClient = 10
        let failures = postJSONBurst(port: proxy.port, url: "\(origin.base)/echo", clients: clients, perClient: perClient)
        XCTAssertEqual(failures, 0)
        let metrics = try runCommand("curl", ["--noproxy", "*", "-s", "--max-time", "10", "\(proxy.proxyURL)/metrics"]).text
        func value(_ name: String) -> Int? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
        }
        XCTAssertGreaterThan(value("tapwire_holds_total") ?? 0, 0, "the queue never filled, so nothing was shown: \(metrics)")
        XCTAssertEqual(value("tapwire_held_clients"), 0)
        XCTAssertEqual(proxy.stop(timeout: 60), 0)

        let lines = try logLines(proxy.logDirectory)
        XCTAssertFalse(lines.contains { $0.contains(#""kind":"loss""#) }, "a loss record was written")
        var seen = [Int](repeating: 0, count: clients * perClient)
        for line in lines {
            guard let r = line.range(of: "/echo?n=") else { continue }
            if let n = Int(line[r.upperBound...].prefix { $0.isNumber }), n < seen.count { seen[n] += 1 }
            XCTAssertTrue(line.contains(#""result":{"success":[1234567,-0.5e3,"text""#), "not decoded: \(line.prefix(300))")
        }
        XCTAssertEqual(seen.filter { $0 != 1 }.count, 0, "records missing or doubled: \(seen.enumerated().filter { $0.element != 1 }.prefix(10))")
    }
}
