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
        // After clientIdleTimeout every trickler is answered 408 and closed (each read waits
        // for that close; the first ones wait out the timeout, the rest are closed by then).
        var closed = 0
        for c in slow {
            let rr = c.read(timeout: 10)
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
        // Time is the point: the CPU a busy loop would burn while nothing can be accepted.
        Thread.sleep(forTimeInterval: 2)
        let used = proxy.cpuSeconds - cpu0
        XCTAssertLessThan(used, 0.5, "the proxy burnt \(used) CPU seconds in 2 s while out of descriptors")
        clients.removeAll()
        // Recovered once the proxy has closed its side of them and the listener's back-off ended.
        var r = CommandResult(status: 0, stdout: Data(), stderr: "")
        try eventually(every: 0.05) {
            r = try curlViaProxy(proxy.proxyURL, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "\(origin.base)/json"])
            return r.text == "200"
        }
        XCTAssertEqual(r.text, "200", "no recovery after descriptors were freed")
    }

    /// A client can send its head a few bytes at a time, and every read looks at the head
    /// again: rescanning it from byte 0 each time would make a head's cost on the event loop
    /// quadratic in its size. 25 clients trickle 256 KiB heads of short fields (the most line
    /// ends to find) in pieces the proxy reads one by one; that must cost the event loops at
    /// most twice the CPU of the same heads sent whole. The measure is the CPU of the loop
    /// threads alone (`tapwire-loop-*`, from /proc; ratios, not wall times): the
    /// serialization and writer threads encode the same records either way, and counting
    /// them would dilute the loop's share.
    ///
    /// The pieces are 4 KiB: each read costs the loop a fixed amount (the system call, TCP
    /// receive and acknowledgement, the dispatch to the session) whatever the parser does,
    /// which in small pieces alone exceeds twice the cost of a whole head. Heads this large
    /// (`limits.maxHeaderBytes` is raised for them) make a rescan's quadratic share stand
    /// out of that fixed cost. The parser's own work per byte is checked at 1-byte reads in
    /// ResumingHeadParserTests.
    func testHeadsTrickledInSmallReadsCostAboutWhatWholeHeadsCost() throws {
        let origin = try OriginServer()
        // No archive compression: it would land in one phase or the other at random.
        let proxy = try TapwireProcess(config: ["log": ["compress": false], "limits": ["maxHeaderBytes": 512 << 10]])
        let clients = 25, headBytes = 256 << 10, piece = 4096, rounds = 4
        func heads(_ tag: String) -> [[UInt8]] {
            (0..<clients).map { i in
                var text = "GET \(origin.base)/status?code=200&\(tag)=\(i) HTTP/1.1\r\nHost: x\r\n"
                var k = 0
                while text.utf8.count < headBytes - 40 { text += "X: \(k % 10)\r\n"; k += 1 }
                text += "X-Pad: " + String(repeating: "p", count: headBytes - text.utf8.count - 11) + "\r\n\r\n"
                return Array(text.utf8)
            }
        }
        var recorded = 0
        /// Sends each head in pieces of `piece` bytes, one piece to each client in turn, and
        /// the next turn once the proxy has read all that was sent (so each piece is a read of
        /// its own); reads every answer and waits for the records, so no phase's work spills
        /// into the next. Returns the event loops' CPU seconds and the proxy's read calls.
        func send(_ tag: String, piece: Int) throws -> (cpu: Double, reads: Int) {
            let cpu0 = proxy.loopCPUSeconds, reads0 = proxy.readCalls
            for round in 0..<rounds {
                let all = heads("\(tag)\(round)")
                let sockets = try all.map { _ in try RawClient(port: proxy.port) }
                for offset in stride(from: 0, to: headBytes, by: piece) {
                    let before = proxy.bytesRead
                    for (c, head) in zip(sockets, all) { c.send(Array(head[offset..<min(offset + piece, head.count)])) }
                    let sent = min(piece, headBytes - offset) * clients
                    XCTAssertTrue(eventually(every: 0.0002) { proxy.bytesRead >= before + sent }, "\(tag): the proxy stopped reading")
                }
                for c in sockets { XCTAssertTrue(c.read { $0.hasSuffix("status body") }.text.hasPrefix("HTTP/1.1 200"), tag) }
                recorded += clients
                XCTAssertTrue(eventually(timeout: 30, every: 0.02) { proxy.metric("tapwire_records_written_total") >= recorded },
                              "\(tag): records missing")
            }
            return (proxy.loopCPUSeconds - cpu0, proxy.readCalls - reads0)
        }
        _ = try send("warm", piece: headBytes)
        let whole = try send("whole", piece: headBytes)
        let trickled = try send("trickled", piece: piece)
        XCTAssertGreaterThanOrEqual(trickled.reads, rounds * clients * (headBytes / piece), "fewer reads than pieces")
        let report = "trickled \(trickled.cpu) s in \(trickled.reads) reads, whole \(whole.cpu) s in \(whole.reads) reads, ratio \(trickled.cpu / whole.cpu)"
        print(report)
        XCTAssertGreaterThan(whole.cpu, 0, "no event-loop CPU measured: are the loop threads named tapwire-loop-*?")
        XCTAssertLessThanOrEqual(trickled.cpu, 2 * whole.cpu, "trickled heads cost over twice whole ones: \(report)")
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
        // Stopped, the proxy has sent the origin all it ever will; the count waits until the
        // origin has read every connection to its end.
        XCTAssertEqual(proxy.stop(), 0)
        let count = try runCommand("curl", ["--noproxy", "*", "-s", "\(o)/count?settled=1"])
        XCTAssertEqual(count.text, "1", "the origin received a complete request from a refused one")
    }
}
