#if canImport(Glibc)
import Glibc
#endif
import Foundation
import XCTest
import Systemd

final class SocketActivationTests: XCTestCase {
    func testDescriptorsFromThreeWhenMeantForUs() throws {
        // Descriptors 3 and 4 belong to the test process; their close-on-exec flag is
        // cleared here to see listenFDs set it, and restored afterwards.
        var saved: [Int32: Int32] = [:]
        var opened: [Int32] = []
        defer {
            for (fd, flags) in saved { _ = fcntl(fd, F_SETFD, flags) }
            for fd in opened { close(fd) }
        }
        for fd: Int32 in [3, 4] {
            var flags = fcntl(fd, F_GETFD)
            if flags < 0 {
                let placeholder = open("/dev/null", O_RDONLY)
                guard placeholder == fd else {
                    if placeholder >= 0 { close(placeholder) }
                    throw XCTSkip("descriptor \(fd) is not free to stand in for a passed socket")
                }
                opened.append(fd)
                flags = fcntl(fd, F_GETFD)
            }
            saved[fd] = flags
            XCTAssertEqual(fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC), 0)
        }

        let fds = SocketActivation.listenFDs(environment: ["LISTEN_PID": String(getpid()), "LISTEN_FDS": "2"])

        XCTAssertEqual(fds, [3, 4])
        for fd in fds {
            XCTAssertNotEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0, "fd \(fd) should be close-on-exec")
        }
    }

    func testNothingWhenMeantForAnotherProcess() {
        XCTAssertEqual(SocketActivation.listenFDs(
            environment: ["LISTEN_PID": String(getpid() + 1), "LISTEN_FDS": "2"]), [])
    }

    func testNothingWhenAbsentOrMalformed() {
        let pid = String(getpid())
        XCTAssertEqual(SocketActivation.listenFDs(environment: [:]), [])
        XCTAssertEqual(SocketActivation.listenFDs(environment: ["LISTEN_FDS": "1"]), [])
        XCTAssertEqual(SocketActivation.listenFDs(environment: ["LISTEN_PID": pid]), [])
        XCTAssertEqual(SocketActivation.listenFDs(environment: ["LISTEN_PID": pid, "LISTEN_FDS": "0"]), [])
        XCTAssertEqual(SocketActivation.listenFDs(environment: ["LISTEN_PID": pid, "LISTEN_FDS": "-1"]), [])
        XCTAssertEqual(SocketActivation.listenFDs(environment: ["LISTEN_PID": pid, "LISTEN_FDS": "two"]), [])
    }

    func testUnsetEnvironmentClearsTheProcessEnvironment() {
        setenv("LISTEN_PID", String(getpid() + 1), 1)
        setenv("LISTEN_FDS", "1", 1)
        setenv("LISTEN_FDNAMES", "http", 1)
        defer { unsetenv("LISTEN_PID"); unsetenv("LISTEN_FDS"); unsetenv("LISTEN_FDNAMES") }

        let fds = SocketActivation.listenFDs(
            environment: ["LISTEN_PID": String(getpid() + 1), "LISTEN_FDS": "1"], unsetEnvironment: true)

        XCTAssertEqual(fds, [])
        XCTAssertNil(getenv("LISTEN_PID"))
        XCTAssertNil(getenv("LISTEN_FDS"))
        XCTAssertNil(getenv("LISTEN_FDNAMES"))
    }

    func testEnvironmentIsKeptByDefault() {
        setenv("LISTEN_FDS", "1", 1)
        defer { unsetenv("LISTEN_FDS") }
        _ = SocketActivation.listenFDs(environment: ["LISTEN_FDS": "1"])
        XCTAssertEqual(getenv("LISTEN_FDS").map { String(cString: $0) }, "1")
    }

    func testNamesFollowListenFDNames() {
        XCTAssertEqual(SocketActivation.listenFDNames(count: 2, environment: ["LISTEN_FDNAMES": "http:admin"]),
                       ["http", "admin"])
        XCTAssertEqual(SocketActivation.listenFDNames(count: 2, environment: [:]), ["unknown", "unknown"])
        XCTAssertEqual(SocketActivation.listenFDNames(count: 2, environment: ["LISTEN_FDNAMES": "http"]),
                       ["unknown", "unknown"])
        XCTAssertEqual(SocketActivation.listenFDNames(count: 0, environment: ["LISTEN_FDNAMES": "http"]), [])
    }
}
