import Foundation
import XCTest

/// Slow, many and broken clients: the proxy keeps serving everyone else.
final class HostileClientEndToEndTests: XCTestCase {
    func testTricklingClientsNeitherDelayOthersNorStayForever() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(config: ["limits": ["clientIdleTimeout": 3]])
        var slow: [RawClient] = []
        for _ in 0..<400 {
            let c = try RawClient(port: proxy.port)
            c.send("GET \(origin.base)/json HTTP/1.1\r\nHo")
            slow.append(c)
        }
        // A byte now and then, as slowloris does.
        for c in slow.prefix(200) { c.send("s") }
        let start = Date()
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(origin.base)/json"])
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(r.text, "200")
        // Held behind the tricklers it would wait for their 3 s timeout; the margin is for a
        // loaded CI machine, where starting curl alone can take a good part of a second.
        XCTAssertLessThan(elapsed, 2.0, "a normal request took \(elapsed) s next to 400 trickling clients")
        // After clientIdleTimeout every trickler is answered 408 and closed.
        Thread.sleep(forTimeInterval: 3.5)
        var closed = 0
        for c in slow {
            let rr = c.read(timeout: 2)
            if rr.eof && rr.text.hasPrefix("HTTP/1.1 408") { closed += 1 }
        }
        XCTAssertEqual(closed, 400)
    }

    func testRunningOutOfDescriptorsRefusesWithoutSpinningAndRecovers() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess(fileLimit: 64)
        var clients: [RawClient] = []
        for _ in 0..<120 {
            if let c = try? RawClient(port: proxy.port) { clients.append(c) }
        }
        // Accept fails with EMFILE now; the listener must back off, not busy-loop.
        XCTAssertNotNil(proxy.stderr.waitFor(timeout: 5) { $0.contains("accept failed") }, "descriptors never ran out")
        let cpu0 = proxy.cpuSeconds
        Thread.sleep(forTimeInterval: 2)
        let used = proxy.cpuSeconds - cpu0
        XCTAssertLessThan(used, 0.5, "the proxy burnt \(used) CPU seconds in 2 s while out of descriptors")
        clients.removeAll()
        Thread.sleep(forTimeInterval: 1)
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(origin.base)/json"])
        XCTAssertEqual(r.text, "200", "no recovery after descriptors were freed")
    }

    func testResetMidBodyIsRecordedAsUpstreamReset() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        let r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "\(origin.base)/reset-mid-body"])
        XCTAssertEqual(r.status, 18, r.stderr)
        let line = try XCTUnwrap(waitForRecord(proxy.logDirectory) { $0.contains("/reset-mid-body") })
        XCTAssertTrue(line.contains(#""code":"upstreamReset""#), line)
    }
}

/// Request smuggling: a refused request never reaches the origin as a complete request.
final class SmugglingEndToEndTests: XCTestCase {
    func testAmbiguousRequestsNeverReachTheOriginWhole() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        let o = origin.base
        // One valid request, so the count is known to work.
        XCTAssertEqual(try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(o)/json"]).text, "200")
        let attacks: [(String, String)] = [
            ("CL+TE", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /json HTTP/1.1\r\n\r\n"),
            ("duplicate CL", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
            ("xchunked", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
            ("chun\u{212A}ed (KELVIN SIGN)", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chun\u{212A}ed\r\n\r\n0\r\n\r\nGET \(o)/json HTTP/1.1\r\nHost: x\r\n\r\n"),
            ("chunked, identity", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"),
            (" chunked folded", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"),
            ("space before colon", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n"),
            ("NUL in field", "GET \(o)/json HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n"),
            ("negative CL", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"),
            ("chunk size overflow", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF1\r\nhello\r\n0\r\n\r\n"),
            ("no CRLF after chunk data", "POST \(o)/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"),
            ("oversized request line", "GET \(o)/\(String(repeating: "a", count: 70_000)) HTTP/1.1\r\nHost: x\r\n\r\n"),
        ]
        for (name, raw) in attacks {
            let c = try RawClient(port: proxy.port)
            c.send(raw)
            let r = c.read(timeout: 5) { $0.contains("\r\n\r\n") && $0.hasSuffix("\n") }
            XCTAssertTrue(["400", "431", "501"].contains { r.text.hasPrefix("HTTP/1.1 \($0)") } || r.eof,
                          "\(name): \(r.text.prefix(80))")
        }
        Thread.sleep(forTimeInterval: 0.3)
        let count = try runCommand("curl", ["--noproxy", "*", "-s", "\(o)/count"])
        XCTAssertEqual(count.text, "1", "the origin received a complete request from a refused one")
    }
}
