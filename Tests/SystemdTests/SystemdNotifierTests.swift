#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
import Systemd

final class SystemdNotifierTests: XCTestCase {
    func testNoNotifierWithoutNotifySocket() {
        XCTAssertNil(SystemdNotifier(environment: [:]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]))
    }

    func testNoNotifierForUnusableAddress() {
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative/notify"]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@"]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/" + String(repeating: "x", count: 120)]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@" + String(repeating: "x", count: 120)]))
    }

    func testLifecycleMessagesOnPathSocket() throws {
        let receiver = try DatagramReceiver()
        try assertLifecycleMessages(to: receiver)
    }

    func testLifecycleMessagesOnAbstractSocket() throws {
        let receiver = try DatagramReceiver(abstractName: "tapwire-test-\(UUID().uuidString)")
        try assertLifecycleMessages(to: receiver)
    }

    private func assertLifecycleMessages(to receiver: DatagramReceiver,
                                         file: StaticString = #filePath, line: UInt = #line) throws {
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]),
                                     file: file, line: line)

        XCTAssertTrue(notifier.ready(), file: file, line: line)
        XCTAssertEqual(receiver.receive(), "READY=1", file: file, line: line)

        XCTAssertTrue(notifier.status("listening on 127.0.0.1:8080"), file: file, line: line)
        XCTAssertEqual(receiver.receive(), "STATUS=listening on 127.0.0.1:8080", file: file, line: line)

        let before = Self.monotonicMicroseconds()
        XCTAssertTrue(notifier.reloading(), file: file, line: line)
        let after = Self.monotonicMicroseconds()
        let reloading = try XCTUnwrap(receiver.receive(), file: file, line: line)
        let fields = reloading.split(separator: "\n").map(String.init)
        XCTAssertEqual(fields.count, 2, "got \(reloading)", file: file, line: line)
        XCTAssertEqual(fields.first, "RELOADING=1", file: file, line: line)
        let stamp = try XCTUnwrap(fields.last.flatMap { $0.hasPrefix("MONOTONIC_USEC=") ? UInt64($0.dropFirst(15)) : nil },
                                  "got \(reloading)", file: file, line: line)
        XCTAssertTrue((before...after).contains(stamp), "\(stamp) not in \(before)...\(after)", file: file, line: line)
        XCTAssertTrue(notifier.ready(), file: file, line: line)
        XCTAssertEqual(receiver.receive(), "READY=1", file: file, line: line)

        XCTAssertTrue(notifier.watchdog(), file: file, line: line)
        XCTAssertEqual(receiver.receive(), "WATCHDOG=1", file: file, line: line)

        XCTAssertTrue(notifier.stopping(), file: file, line: line)
        XCTAssertEqual(receiver.receive(), "STOPPING=1", file: file, line: line)

        XCTAssertNil(receiver.receive(), "one datagram per message", file: file, line: line)
        XCTAssertEqual(notifier.failureCount, 0, file: file, line: line)
    }

    func testReadyWithStatusIsOneDatagram() throws {
        let receiver = try DatagramReceiver()
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]))
        notifier.ready(status: "2 listeners")
        XCTAssertEqual(receiver.receive(), "READY=1\nSTATUS=2 listeners")
        XCTAssertNil(receiver.receive())
    }

    func testStatusNewlinesCannotInjectFields() throws {
        let receiver = try DatagramReceiver()
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]))
        notifier.status("bad config\nREADY=1")
        XCTAssertEqual(receiver.receive(), "STATUS=bad config READY=1")
    }

    func testSendFieldsInKeyOrder() throws {
        let receiver = try DatagramReceiver()
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]))
        XCTAssertTrue(notifier.send(["STATUS": "draining\n3 open", "STOPPING": "1", "ERRNO": "0"]))
        XCTAssertEqual(receiver.receive(), "ERRNO=0\nSTATUS=draining 3 open\nSTOPPING=1")
    }

    func testSendRefusesMalformedKeys() throws {
        let receiver = try DatagramReceiver()
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]))
        XCTAssertFalse(notifier.send(["A=B": "1"]))
        XCTAssertFalse(notifier.send(["": "1"]))
        XCTAssertFalse(notifier.send([String: String]()))
        XCTAssertNil(receiver.receive())
        XCTAssertEqual(notifier.failureCount, 3)
    }

    func testRawTextIsSentVerbatim() throws {
        let receiver = try DatagramReceiver()
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]))
        XCTAssertTrue(notifier.send("MAINPID=4242\nREADY=1"))
        XCTAssertEqual(receiver.receive(), "MAINPID=4242\nREADY=1")
    }

    func testExtendTimeoutInMicroseconds() throws {
        let receiver = try DatagramReceiver()
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]))
        notifier.extendTimeout(seconds: 1.5)
        XCTAssertEqual(receiver.receive(), "EXTEND_TIMEOUT_USEC=1500000")
    }

    func testFailuresAreCountedWhenNobodyListens() throws {
        let receiver = try DatagramReceiver()
        let missing = receiver.notifySocket + "-gone"
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": missing]))
        XCTAssertFalse(notifier.ready())
        XCTAssertFalse(notifier.watchdog())
        XCTAssertEqual(notifier.failureCount, 2)
    }

    /// A manager that stops reading fills the socket's queue; sends must then fail
    /// at once rather than block the caller's event loop.
    func testFullQueueFailsInsteadOfBlocking() throws {
        let receiver = try DatagramReceiver()
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.notifySocket]))
        var delivered = 0
        while notifier.watchdog() {
            delivered += 1
            guard delivered < 100_000 else { return XCTFail("queue never filled") }
        }
        XCTAssertGreaterThan(delivered, 0)
        XCTAssertEqual(notifier.failureCount, 1)
        var drained = 0
        while receiver.receive() != nil { drained += 1 }
        XCTAssertEqual(drained, delivered)
        XCTAssertTrue(notifier.ready(), "sending works again once the queue drains")
    }

    func testWatchdogIntervalIsHalfOfWatchdogUsec() {
        XCTAssertEqual(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"]), 15)
        XCTAssertEqual(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "1000"]), 0.0005)
        XCTAssertEqual(SystemdNotifier.watchdogInterval(
            environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": String(getpid())]), 15)
    }

    func testNoWatchdogIntervalWhenUnsetOrForAnotherProcess() {
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: [:]))
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"]))
        XCTAssertNil(SystemdNotifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30s"]))
        XCTAssertNil(SystemdNotifier.watchdogInterval(
            environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": String(getpid() + 1)]))
        XCTAssertNil(SystemdNotifier.watchdogInterval(
            environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "self"]))
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
