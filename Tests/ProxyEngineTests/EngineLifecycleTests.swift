import Foundation
import HTTP1
@testable import ProxyEngine
import XCTest

/// Starting and stopping from other threads: shutdown drains in-flight
/// exchanges, and the cross-thread entry points (`onSignal`, `every`,
/// `loopsResponsive`, `shutdown` from a loop thread) work.
final class EngineLifecycleTests: XCTestCase {
    func testBoundAddressResolvesPortZero() throws {
        let proxy = try RunningEngine()
        XCTAssertEqual(proxy.engine.boundAddresses.count, 1)
        XCTAssertEqual(proxy.engine.boundAddresses.first?.host, "127.0.0.1")
        XCTAssertGreaterThan(proxy.port, 0)
        // Every loop listens on the same port; a few clients land on either and are all answered.
        for _ in 0..<4 {
            let client = try RawClient(port: proxy.port)
            client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(client.readResponses(1).first.map { String(decoding: $0.body, as: UTF8.self) }, "ok\n")
        }
    }

    /// `upstream.maxIdlePerOrigin` 0 keeps no idle upstream connection; the default keeps one.
    func testMaxIdlePerOriginBoundsThePool() throws {
        let origin = try origin()
        for (limit, pooled) in [(0, 0), (64, 1)] {
            let proxy = try RunningEngine(loops: 1) { $0.maxIdlePerOrigin = limit }
            let client = try RawClient(port: proxy.port)
            client.send("GET \(origin.url("/json")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
            XCTAssertEqual(client.readResponses(1).count, 1)
            // The answer can reach the client a moment before the upstream is pooled or closed.
            XCTAssertTrue(eventually {
                proxy.engine.metrics.activeUpstreams.value == pooled && proxy.engine.metrics.pooledUpstreams.value == pooled
            }, "limit \(limit): \(proxy.engine.metrics.activeUpstreams.value) open, \(proxy.engine.metrics.pooledUpstreams.value) pooled")
        }
    }

    /// `limits.clientIdleTimeout` between requests counts from the last answer: a keep-alive
    /// client whose requests straddle the first wait's deadline is not closed there (the
    /// timer fires, finds the wait moved on and waits out the rest), and one left idle is
    /// closed, not before most of the limit has passed.
    func testTheClientIdleTimeoutCountsFromTheLastAnswer() throws {
        let origin = try origin()
        let limit = 1.0
        let proxy = try RunningEngine(loops: 1) { $0.clientIdleTimeout = limit }
        let client = try RawClient(port: proxy.port)
        let request = "GET \(origin.url("/json")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n"
        // Answers at ~0, 0.6, 1.2 and 1.8 limits: the third comes after the first wait's deadline.
        for _ in 0..<3 {
            client.send(request)
            XCTAssertEqual(client.readResponses(1).count, 1, "closed while a keep-alive exchange was due")
            _ = stays(for: 0.6 * limit) { true }
        }
        client.send(request)
        XCTAssertEqual(client.readResponses(1).count, 1)
        let lastAnswer = Date()
        XCTAssertTrue(client.read(timeout: 10 * limit).eof, "an idle client is closed")
        XCTAssertGreaterThan(Date().timeIntervalSince(lastAnswer), 0.8 * limit, "closed before its limit")
        XCTAssertEqual(proxy.sink.exchanges(4).count, 4)
    }

    /// `upstream.idleTimeout` counts from the last return to the pool: a connection lent out
    /// and returned keeps going past its first deadline (the timer runs on and checks the
    /// deadline when it fires), and one left idle is closed.
    func testUpstreamIdleTimeoutCountsFromTheLastReturn() throws {
        let origin = try origin()
        let proxy = try RunningEngine(loops: 1) { $0.upstreamIdleTimeout = 1.5 }
        let client = try RawClient(port: proxy.port)
        let request = "GET \(origin.url("/json")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n"
        // Returned at ~0 s, ~0.9 s and ~1.8 s: the third request comes after the first
        // deadline (1.5 s) and before the second (2.4 s).
        for pause in [0, 0.9, 0.9] {
            Thread.sleep(forTimeInterval: pause)
            client.send(request)
            XCTAssertEqual(client.readResponses(1).count, 1)
        }
        let exchanges = proxy.sink.exchanges(3)
        XCTAssertEqual(exchanges.map(\.connectionReused), [false, true, true])
        XCTAssertEqual(proxy.engine.metrics.activeUpstreams.value, 1)
        // Left idle, it is closed once its last deadline passes.
        XCTAssertTrue(eventually(timeout: 5) { proxy.engine.metrics.activeUpstreams.value == 0 },
                      "\(proxy.engine.metrics.activeUpstreams.value) upstream connections open")
        XCTAssertEqual(proxy.engine.metrics.pooledUpstreams.value, 0)
    }

    /// Every loop binds with SO_REUSEPORT, which would let a second Tapwire bind a port the
    /// first one listens on and silently take part of its clients.
    func testAPortAnotherTapwireListensOnIsRefused() throws {
        let first = try RunningEngine()
        XCTAssertThrowsError(try RunningEngine { $0.listen = ["127.0.0.1:\(first.port)"] }) { error in
            XCTAssertTrue("\(error)".contains("Address already in use"), "\(error)")
        }
        // The first one still answers, alone.
        let client = try RawClient(port: first.port)
        client.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).first.map { String(decoding: $0.body, as: UTF8.self) }, "ok\n")
    }

    /// `OPTIONS *` is answered by the proxy without reading a body; had the connection stayed
    /// open, the body's bytes would have been parsed as the next request (a desync a front
    /// end that frames by Content-Length would not see).
    func testAsteriskOptionsWithABodyClosesInsteadOfParsingTheBody() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let inner = "GET \(origin.url("/json")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n"
        let client = try RawClient(port: proxy.port)
        client.send("OPTIONS * HTTP/1.1\r\nHost: p\r\nContent-Length: \(inner.utf8.count)\r\n\r\n" + inner)
        let answer = client.read(timeout: 5)
        let text = String(decoding: answer.bytes, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        XCTAssertTrue(text.contains("Connection: close\r\n"), text)
        XCTAssertTrue(answer.eof, "closed after the answer")
        XCTAssertEqual(RawClient.splitResponses(answer.bytes).count, 1, "the body was not answered as a request: \(text)")
        // An exchange started from the body would be recorded at the latest when the session closes.
        XCTAssertTrue(eventually { proxy.engine.metrics.activeClients.value == 0 })
        XCTAssertEqual(proxy.sink.events.count, 0, "no exchange started from the body")

        // Without a body the connection stays open for the next request.
        let plain = try RawClient(port: proxy.port)
        plain.send("OPTIONS * HTTP/1.1\r\nHost: p\r\n\r\n" + inner)
        XCTAssertEqual(plain.readResponses(2).count, 2)
    }

    func testShutdownFinishesAnInFlightExchangeBeforeStopping() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.drainTimeout = 20 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/slow?s=1")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        // The exchange is in flight once it holds an upstream connection.
        XCTAssertTrue(eventually { proxy.engine.metrics.activeUpstreams.value == 1 })
        XCTAssertEqual(proxy.sink.events.count, 0, "nothing finished yet")

        proxy.engine.shutdown()
        proxy.engine.waitUntilStopped()

        let captured = proxy.sink.events
        XCTAssertEqual(captured.count, 1, "the in-flight exchange was delivered before waitUntilStopped returned")
        if case .http(let x)? = captured.first {
            XCTAssertEqual(x.response?.status, 200)
            XCTAssertEqual(x.responseBody.text, "slow answer")
            XCTAssertNil(x.error)
        } else {
            XCTFail("expected an HTTP capture, got \(captured)")
        }
        let answer = client.read()
        let text = String(decoding: answer.bytes, as: UTF8.self)
        XCTAssertTrue(text.hasSuffix("slow answer"), text)
        XCTAssertTrue(text.contains("Connection: close\r\n"), "a draining engine closes the client after the answer: \(text)")
        XCTAssertTrue(answer.eof)
        XCTAssertEqual(proxy.engine.metrics.activeClients.value, 0)
        XCTAssertEqual(proxy.engine.metrics.activeUpstreams.value, 0)
    }

    func testShutdownClosesIdleKeepAliveClientsAndRefusesNewOnes() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/json")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        XCTAssertEqual(client.readResponses(1).count, 1)
        // The answer can reach the client (written straight to its socket) a moment
        // before the exchange returns its upstream to the pool.
        _ = eventually(timeout: 2) { proxy.engine.metrics.pooledUpstreams.value == 1 }
        XCTAssertEqual(proxy.engine.metrics.pooledUpstreams.value, 1)

        proxy.stop()
        XCTAssertTrue(client.read(timeout: 5).eof, "the idle client is closed")
        XCTAssertEqual(proxy.engine.metrics.activeClients.value, 0)
        XCTAssertEqual(proxy.engine.metrics.pooledUpstreams.value, 0)
        XCTAssertEqual(proxy.engine.metrics.activeUpstreams.value, 0)
        XCTAssertThrowsError(try RawClient(port: proxy.port), "the listener is closed")
    }

    func testShutdownFromManyThreadsAtOnceStopsOnce() throws {
        let proxy = try RunningEngine()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in proxy.engine.shutdown() }
        proxy.engine.waitUntilStopped()
        XCTAssertThrowsError(try RawClient(port: proxy.port))
    }

    func testSignalHandlerRunsOnTheLoopAndCanShutDown() throws {
        // Until the engine's handler is installed, a stray SIGUSR2 must not kill the test process.
        signal(SIGUSR2, SIG_IGN)
        let proxy = try RunningEngine()
        let handled = Locked(0)
        let engine = proxy.engine
        engine.onSignal(SIGUSR2) {
            handled.update { $0 += 1 }
            engine.shutdown()
        }
        let stopped = expectation(description: "stopped")
        Thread.detachNewThread {
            engine.waitUntilStopped()
            stopped.fulfill()
        }
        // The handler is installed asynchronously on the loop: raise until it runs.
        XCTAssertTrue(eventually(every: 0.02) { kill(getpid(), SIGUSR2); return handled.value > 0 })
        wait(for: [stopped], timeout: 15)
    }

    func testEveryRunsRepeatedlyAndLoopsStayResponsive() throws {
        let proxy = try RunningEngine()
        let ticks = Locked(0)
        proxy.engine.every(0.02) { ticks.update { $0 += 1 } }
        XCTAssertTrue(proxy.engine.loopsResponsive(within: 0.2), "the first call starts the heartbeats")
        XCTAssertTrue(eventually { ticks.value >= 3 }, "ticks: \(ticks.value)")
        XCTAssertTrue(eventually { ticks.value >= 8 }, "ticks: \(ticks.value)")
        XCTAssertTrue(proxy.engine.loopsResponsive(within: 5))
    }
}

/// An exchange still running when the drain time is up is cut, and still reported.
final class DrainTimeoutTests: XCTestCase {
    func testAnExchangeCutAtTheDrainDeadlineIsStillCaptured() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.drainTimeout = 0.3 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/never?s=3")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        XCTAssertTrue(eventually { proxy.engine.metrics.activeUpstreams.value == 1 })
        proxy.stop()

        let captured = proxy.sink.events
        XCTAssertEqual(captured.count, 1, "reported before waitUntilStopped returned")
        if case .http(let x)? = captured.first {
            XCTAssertNil(x.response)
            XCTAssertEqual(x.error?.code, .shuttingDown, "cut by the proxy's own shutdown, not by the client")
        } else {
            XCTFail("expected an HTTP capture, got \(captured)")
        }
        XCTAssertTrue(client.read(timeout: 5).eof)
        XCTAssertEqual(proxy.engine.metrics.activeUpstreams.value, 0)
    }
}

/// Socket activation: every loop listens on the socket systemd passed, and systemd keeps
/// its own descriptor open, so the socket still listens during the drain.
final class InheritedListenerShutdownTests: XCTestCase {
    /// The first loop's listener closed the shared descriptor on free while another loop
    /// still had it in its epoll set; that loop's removal then failed (EBADF), the stale
    /// entry stayed, and a client connecting during the drain made it report readable on
    /// every epoll_wait: a loop at 100% CPU until the drain ended.
    func testAConnectionDuringTheDrainDoesNotSpinALoop() throws {
        let origin = try origin()
        for _ in 0..<3 {  // which loop lets go first varies: three tries catch the bad order
            let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            XCTAssertGreaterThanOrEqual(socketFD, 0)
            defer { close(socketFD) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            XCTAssertEqual(bound, 0)
            XCTAssertEqual(listen(socketFD, 16), 0)
            // systemd keeps `socketFD`; the proxy gets its own descriptor, as after exec.
            let proxy = try RunningEngine(loops: 2) { $0.listen = []; $0.inheritedListeners = [dup(socketFD)]; $0.drainTimeout = 1.2 }
            let busy = try RawClient(port: proxy.port)
            busy.send("GET \(origin.url("/never?s=3")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
            XCTAssertTrue(eventually { proxy.engine.metrics.activeUpstreams.value == 1 })
            let ours = proxy.engine.configuration.inheritedListeners[0]
            proxy.engine.shutdown()
            // Every loop has let go of the listener once the engine closed its descriptor.
            XCTAssertTrue(eventually { fcntl(ours, F_GETFD) == -1 })
            let late = try RawClient(port: proxy.port)  // queued in the backlog systemd still holds
            let before = Self.processCPUSeconds()
            usleep(700_000)
            let spent = Self.processCPUSeconds() - before
            proxy.stop()
            XCTAssertLessThan(spent, 0.35, "\(spent) s of CPU in 0.7 s of drain: a loop spun")
            _ = late
        }
    }

    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// `waitUntilStopped` is a state, not a one-shot event: the daemon's main thread,
/// a test's teardown and a signal handler's helper may all wait on the same engine.
final class WaitUntilStoppedTests: XCTestCase {
    func testEveryWaiterReturnsAndLateCallsReturnAtOnce() throws {
        let proxy = try RunningEngine()
        let engine = proxy.engine
        let returned = expectation(description: "both waiters return")
        returned.expectedFulfillmentCount = 2
        for _ in 0..<2 { Thread.detachNewThread { engine.waitUntilStopped(); returned.fulfill() } }
        engine.shutdown()
        wait(for: [returned], timeout: 15)

        let late = expectation(description: "a call after the stop returns")
        Thread.detachNewThread { engine.waitUntilStopped(); late.fulfill() }
        wait(for: [late], timeout: 5)
    }
}

/// Shutdown racing live traffic on every loop: whatever was captured was
/// delivered before `waitUntilStopped` returned, and every gauge is back at 0.
final class ShutdownUnderLoadTests: XCTestCase {
    func testShutdownWhileClientsAreBusyLeavesNothingBehind() throws {
        let origin = try origin()
        let proxy = try RunningEngine(loops: 2) { $0.drainTimeout = 5 }
        let answered = Locked(0)
        let keepGoing = Locked(true)
        let group = DispatchGroup()
        for n in 0..<4 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                while keepGoing.value {
                    guard let client = try? RawClient(port: proxy.port) else { return }
                    for i in 0..<3 {
                        let path = (n + i) % 2 == 0 ? "/json" : "/big?size=200000"
                        client.send("GET \(origin.url(path)) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
                        guard client.readResponses(1, timeout: 10).count == 1 else { break }
                        answered.update { $0 += 1 }
                    }
                }
            }
        }
        XCTAssertTrue(eventually { answered.value >= 8 }, "traffic is flowing: \(answered.value)")
        proxy.stop()
        let atStop = proxy.sink.events.count
        keepGoing.update { $0 = false }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "every client saw the engine go away")

        XCTAssertGreaterThanOrEqual(atStop, answered.value, "every answered exchange was captured by the time the engine stopped")
        XCTAssertEqual(proxy.sink.events.count, atStop, "nothing is delivered after waitUntilStopped")
        XCTAssertEqual(proxy.engine.metrics.exchanges.value, atStop)
        let m = proxy.engine.metrics
        XCTAssertEqual([m.activeClients.value, m.activeUpstreams.value, m.pooledUpstreams.value, m.activeTunnels.value], [0, 0, 0, 0])
    }
}

/// A start that fails leaves nothing running, so shutting the engine down must not wait for loops that never ran.
final class FailedStartTests: XCTestCase {
    func testShutdownAfterAFailedStartReturns() throws {
        var config = EngineConfiguration()
        config.loops = 2
        // A second port after a good one: the first is bound before the second fails.
        config.listen = ["127.0.0.1:0", "256.0.0.1:1"]
        let engine = ProxyEngine(configuration: config, sink: nil)
        XCTAssertThrowsError(try engine.start())
        let stopped = expectation(description: "stopped")
        Thread.detachNewThread {
            engine.shutdown()
            engine.waitUntilStopped()
            stopped.fulfill()
        }
        wait(for: [stopped], timeout: 15)
    }
}

/// `log.loopNice` is applied to the loop threads from another thread, once.
final class LoopPriorityTests: XCTestCase {
    private func nice(_ tid: Int32) -> Int32 {
        errno = 0
        return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid))
    }

    func testLowerLoopPriorityRaisesEachLoopsNiceOnce() throws {
        let proxy = try RunningEngine(loops: 2) { $0.loopNice = 3 }
        defer { proxy.stop() }
        let tids = proxy.engine.loopThreadIDs
        XCTAssertEqual(tids.count, 2)
        XCTAssertTrue(tids.allSatisfy { $0 > 0 }, "\(tids)")
        let before = tids.map(nice)
        let callers = nice(0)
        // From a thread that is not a loop, as the pipeline's worker does.
        let result = DispatchQueue.global().sync { proxy.engine.lowerLoopPriority() }
        XCTAssertEqual(result?.lowered, 2)
        XCTAssertEqual(result?.error, 0)
        XCTAssertEqual(tids.map(nice), before.map { min(19, $0 + 3) })
        XCTAssertEqual(nice(0), callers, "the calling thread keeps its priority")
        XCTAssertNil(proxy.engine.lowerLoopPriority(), "once only")
        XCTAssertEqual(tids.map(nice), before.map { min(19, $0 + 3) })
    }

    func testLoopNiceZeroNeverLowers() throws {
        let proxy = try RunningEngine(loops: 1) { $0.loopNice = 0 }
        defer { proxy.stop() }
        let before = proxy.engine.loopThreadIDs.map(nice)
        XCTAssertNil(proxy.engine.lowerLoopPriority())
        XCTAssertEqual(proxy.engine.loopThreadIDs.map(nice), before)
    }
}
