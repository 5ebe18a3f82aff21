import CLibevent
import Foundation
@testable import ProxyEngine
import XCTest

/// `SocketReader` reads a plain socket from its own event and reports through the
/// bufferevent's callbacks exactly what the bufferevent would have: data, EOF, errors
/// and the read timeout (after which reading is off), and nothing while disabled.
final class SocketReaderTests: XCTestCase {
    /// What the bufferevent's callbacks saw; touched on the loop thread, read under `lock`.
    final class Observed {
        let lock = NSLock()
        var reads = 0
        var largestGrowth = 0
        var received = 0
        var events: [Int32] = []
        var errnoAtEvent: Int32 = 0
        /// Whether every byte so far matched `pattern(offset)`.
        var contentMatches = true
        /// Free the reader and the bufferevent from inside the first read callback.
        var closeOnRead = false
        /// Inside the first read callback, hand the socket to a new reader (as a tunnel takes it over).
        var handOverOnRead: ((OpaquePointer, Int32) -> SocketReader)?
        var bev: OpaquePointer?
        var reader: SocketReader?
        func snapshot() -> (reads: Int, received: Int, events: [Int32]) { lock.withLock { (reads, received, events) } }
    }

    private var loop: EventLoop!

    override func setUpWithError() throws {
        loop = try EventLoop(index: 7)
        loop.start()
    }

    override func tearDown() {
        loop.stop()
        loop.waitUntilStopped()
    }

    /// A bufferevent on `fd` read by a `SocketReader`; its input is drained into `received`.
    private func attach(_ fd: Int32, _ observed: Observed, timeout: Double? = nil, enabled: Bool = true) {
        let done = DispatchSemaphore(value: 0)
        loop.execute { [loop] in
            guard let loop, let bev = bufferevent_socket_new(loop.base, fd, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue)) else { return }
            let ctx = Unmanaged.passUnretained(observed).toOpaque()
            bufferevent_setcb(bev, { bev, ctx in
                guard let ctx, let bev else { return }
                let o = Unmanaged<Observed>.fromOpaque(ctx).takeUnretainedValue()
                let input = bufferevent_get_input(bev)
                let n = evbuffer_get_length(input)
                var bytes = [UInt8](repeating: 0, count: n)
                _ = bytes.withUnsafeMutableBytes { evbuffer_remove(input, $0.baseAddress, n) }
                o.lock.withLock {
                    for (i, b) in bytes.enumerated() where b != SocketReaderTests.pattern(o.received + i) { o.contentMatches = false; break }
                    o.reads += 1; o.received += n; o.largestGrowth = max(o.largestGrowth, n)
                }
                if let handOver = o.handOverOnRead {
                    o.handOverOnRead = nil
                    let pending = o.reader?.detach() ?? 0
                    o.reader = handOver(bev, pending)
                }
                if o.closeOnRead {
                    // As a session closing inside its read callback: the reader goes, then the bufferevent.
                    o.reader?.detach()
                    o.reader = nil
                    bufferevent_free(bev)
                    o.bev = nil
                }
            }, nil, { _, what, ctx in
                guard let ctx else { return }
                let o = Unmanaged<Observed>.fromOpaque(ctx).takeUnretainedValue()
                let e = errno
                o.lock.withLock { o.events.append(Int32(what)); o.errnoAtEvent = e }
            }, ctx)
            bufferevent_enable(bev, Int16(EV_READ | EV_WRITE))
            let reader = SocketReader(loop: loop, bev: bev, enabled: enabled)
            reader.setTimeout(timeout)
            observed.bev = bev
            observed.reader = reader
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success)
    }

    private func release(_ observed: Observed) {
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            observed.reader?.detach()
            observed.reader = nil
            if let bev = observed.bev { bufferevent_free(bev) }
            observed.bev = nil
            done.signal()
        }
        _ = done.wait(timeout: .now() + 5)
    }

    private func onLoop(_ work: @escaping () -> Void) {
        let done = DispatchSemaphore(value: 0)
        loop.execute { work(); done.signal() }
        _ = done.wait(timeout: .now() + 5)
    }

    private func waitFor(_ what: String, _ observed: Observed, seconds: Double = 10,
                         _ condition: ((reads: Int, received: Int, events: [Int32])) -> Bool) {
        if !eventually(timeout: seconds, every: 0.002, { condition(observed.snapshot()) }) {
            XCTFail("timed out waiting for \(what): \(observed.snapshot())")
        }
    }

    private func socketPair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (fds[0], fds[1])
    }

    /// The byte at `offset` of everything a test's peer sends.
    static func pattern(_ offset: Int) -> UInt8 { UInt8(truncatingIfNeeded: offset % 251) }

    private func writeAll(_ fd: Int32, _ count: Int, from start: Int = 0) {
        let bytes = (0..<count).map { SocketReaderTests.pattern(start + $0) }
        var off = 0
        bytes.withUnsafeBytes { raw in
            while off < count {
                let n = write(fd, raw.baseAddress! + off, count - off)
                if n > 0 { off += n } else if errno != EINTR && errno != EAGAIN { XCTFail("write: \(errno)"); return }
            }
        }
    }

    func testSmallMessageArrivesInOneReadAndEOFFollows() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o)
        writeAll(peer, 300)
        waitFor("300 bytes", o) { $0.received == 300 }
        XCTAssertEqual(o.snapshot().reads, 1)
        shutdown(peer, Int32(SHUT_WR))
        waitFor("EOF", o) { !$0.events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [BEV_EVENT_READING | BEV_EVENT_EOF])
        // Reading is off after EOF, as the bufferevent leaves it: no second report.
        _ = stays(for: 0.05) { o.snapshot().events.count == 1 }
        XCTAssertEqual(o.snapshot().events.count, 1)
        release(o)
        close(peer)
    }

    /// A write far larger than the socket buffer arrives whole, over many readinesses.
    func testLargeWriteArrivesWholeThenEOF() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o)
        let total = 6 << 20
        let writer = Thread { self.writeAll(peer, total); shutdown(peer, Int32(SHUT_WR)) }
        writer.start()
        waitFor("all bytes and EOF", o, seconds: 30) { $0.received == total && !$0.events.isEmpty }
        XCTAssertTrue(o.lock.withLock { o.contentMatches }, "bytes arrived reordered or changed")
        XCTAssertLessThanOrEqual(o.lock.withLock { o.largestGrowth }, SocketReader.maxPerEvent + SocketReader.laterReadBytes)
        XCTAssertEqual(o.snapshot().events, [BEV_EVENT_READING | BEV_EVENT_EOF])
        release(o)
        close(peer)
    }

    func testDisabledReaderDeliversNothingUntilEnabled() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o, enabled: false)
        writeAll(peer, 1000)
        shutdown(peer, Int32(SHUT_WR))
        _ = stays(for: 0.1) { o.snapshot().received == 0 && o.snapshot().events.isEmpty }
        XCTAssertEqual(o.snapshot().received, 0)
        XCTAssertEqual(o.snapshot().events, [])
        onLoop { o.reader?.setEnabled(true) }
        waitFor("bytes then EOF", o) { $0.received == 1000 && !$0.events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [BEV_EVENT_READING | BEV_EVENT_EOF])
        release(o)
        close(peer)
    }

    func testReadTimeoutFiresOnlyWhileReadingAndTurnsReadingOff() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o, timeout: 0.2, enabled: false)
        _ = stays(for: 0.4) { o.snapshot().events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [], "the timeout ticked while reading was off")
        onLoop { o.reader?.setEnabled(true) }
        waitFor("timeout", o) { !$0.events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [BEV_EVENT_READING | BEV_EVENT_TIMEOUT])
        // Off after the timeout: bytes sent now are not read.
        writeAll(peer, 10)
        _ = stays(for: 0.1) { o.snapshot().received == 0 }
        XCTAssertEqual(o.snapshot().received, 0)
        release(o)
        close(peer)
    }

    func testClearingTheTimeoutStopsIt() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o, timeout: 0.3)
        onLoop { o.reader?.setTimeout(nil) }
        _ = stays(for: 0.6) { o.snapshot().events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [])
        writeAll(peer, 5)
        waitFor("bytes", o) { $0.received == 5 }
        release(o)
        close(peer)
    }

    /// A reset connection is an error (with its errno), not an EOF.
    func testResetIsReportedAsAnError() {
        let (ours, peer) = tcpPair()
        let o = Observed()
        attach(ours, o)
        reset(peer)
        waitFor("error", o) { !$0.events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [BEV_EVENT_READING | BEV_EVENT_ERROR])
        XCTAssertEqual(o.lock.withLock { o.errnoAtEvent }, ECONNRESET)
        release(o)
    }

    /// A connected TCP pair (ours non-blocking) on loopback.
    private func tcpPair() -> (ours: Int32, peer: Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) } }
        XCTAssertEqual(listen(listener, 1), 0)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
        let peer = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(peer, $0, len) } }
        let ours = accept(listener, nil, nil)
        _ = fcntl(ours, F_SETFL, fcntl(ours, F_GETFL) | O_NONBLOCK)
        return (ours, peer)
    }

    private func reset(_ fd: Int32) {
        var linger = Foundation.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Foundation.linger>.size))
        close(fd)
    }

    /// Data and a reset met in one readiness: the data first, then the error (with its
    /// errno) on the next readiness, as the bufferevent's next read would have found it.
    func testErrorAfterDataInOneReadinessIsReportedAfterTheData() {
        checkErrorAfterData(handOver: nil)
    }

    /// The same, but the socket changes owner in the read callback (a 101 answer, then a
    /// tunnel): the error the first reader owed is reported by the next, not lost as EOF.
    func testAnErrorOwedAtHandOverIsReportedByTheNextReader() {
        checkErrorAfterData { [loop] bev, pending in SocketReader(loop: loop!, bev: bev, enabled: true, pendingErrno: pending) }
    }

    /// A full first read, then a reset, both waiting before reading starts: one readiness
    /// meets the data and then the error.
    private func checkErrorAfterData(handOver: ((OpaquePointer, Int32) -> SocketReader)?,
                                     file: StaticString = #filePath, line: UInt = #line) {
        let (ours, peer) = tcpPair()
        let o = Observed()
        o.handOverOnRead = handOver
        attach(ours, o, enabled: false)
        writeAll(peer, SocketReader.firstReadBytes)  // fills the first read: the reader reads on
        XCTAssertTrue(eventually { unreadBytes(ours) == SocketReader.firstReadBytes }, file: file, line: line)
        reset(peer)
        // The reset has arrived when the socket reports an error or hang-up (poll does not clear it).
        XCTAssertTrue(eventually {
            var p = pollfd(fd: ours, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLERR | POLLHUP) != 0
        }, file: file, line: line)
        onLoop { o.reader?.setEnabled(true) }
        waitFor("data then the error", o) { !$0.events.isEmpty }
        XCTAssertEqual(o.snapshot().received, SocketReader.firstReadBytes, file: file, line: line)
        XCTAssertEqual(o.snapshot().events, [BEV_EVENT_READING | BEV_EVENT_ERROR], "the reset became an EOF", file: file, line: line)
        XCTAssertEqual(o.lock.withLock { o.errnoAtEvent }, ECONNRESET, file: file, line: line)
        release(o)
    }

    /// libevent re-arms a persistent event's last timeout whenever it fires, even after
    /// `event_add(ev, NULL)`: a timeout cleared while reading is off must stay cleared.
    func testTimeoutClearedWhileOffStaysClearedAfterReadsResume() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o, timeout: 0.3)
        onLoop {
            o.reader?.setEnabled(false)
            o.reader?.setTimeout(nil)
            o.reader?.setEnabled(true)
        }
        writeAll(peer, 5)
        waitFor("bytes", o) { $0.received == 5 }
        _ = stays(for: 0.6) { o.snapshot().events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [], "a cleared timeout came back after a read")
        release(o)
        close(peer)
    }

    /// A timeout is pushed back by every readiness, like the bufferevent's.
    func testActivityPushesTheTimeoutBack() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o, timeout: 0.5)
        for i in 0..<6 {
            // A byte every 0.1 s, each well within the 0.5 s timeout.
            _ = stays(for: 0.1) { o.snapshot().events.isEmpty }
            writeAll(peer, 1, from: i)
        }
        XCTAssertEqual(o.snapshot().events, [], "timed out while bytes kept coming")
        waitFor("timeout after the last byte", o) { !$0.events.isEmpty }
        XCTAssertEqual(o.snapshot().events, [BEV_EVENT_READING | BEV_EVENT_TIMEOUT])
        XCTAssertEqual(o.snapshot().received, 6)
        release(o)
        close(peer)
    }

    /// The owner frees the reader and the bufferevent inside the read callback (a session
    /// closing on a bad request): nothing is touched afterwards (run under ASan by
    /// `make test-sanitize`), and the socket is closed.
    func testOwnerMayFreeEverythingInsideTheReadCallback() {
        let (ours, peer) = socketPair()
        let o = Observed()
        o.closeOnRead = true
        attach(ours, o)
        writeAll(peer, 100)
        waitFor("the read", o) { $0.reads == 1 }
        XCTAssertTrue(eventually {
            var p = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
            return poll(&p, 1, 0) == 1
        }, "the bufferevent did not close the socket")
        var byte: UInt8 = 0
        XCTAssertEqual(read(peer, &byte, 1), 0, "the bufferevent did not close the socket")
        XCTAssertEqual(o.snapshot().reads, 1)
        close(peer)
    }

    /// After a plain `detach()` nothing is read: the bufferevent's own reading stays off.
    func testDetachStopsDelivery() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o)
        onLoop { o.reader?.detach() }
        writeAll(peer, 10)
        _ = stays(for: 0.1) { o.snapshot().received == 0 }
        XCTAssertEqual(o.snapshot().received, 0)
        release(o)
        close(peer)
    }

    /// After `detach(buffereventReads: true)` the bufferevent reads again (a TLS filter
    /// stacked on the socket depends on it), and the detached reader reports nothing.
    func testDetachHandsReadingBackToTheBufferevent() {
        let (ours, peer) = socketPair()
        let o = Observed()
        attach(ours, o)
        onLoop { o.reader?.detach(buffereventReads: true); o.reader = nil }
        writeAll(peer, 700)
        waitFor("bytes through the bufferevent's own read", o) { $0.received == 700 }
        release(o)
        close(peer)
    }
}
