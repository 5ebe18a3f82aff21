import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// Bodies larger than the high-water mark: reading pauses and resumes on both
/// sides, nothing is lost, and the capture still counts every byte.
final class FlowControlTests: XCTestCase {
    func testLargeResponseToALateReaderArrivesWholeAndIsCountedWhole() throws {
        let origin = try origin()
        let size = 2_000_000
        let proxy = try RunningEngine { $0.highWaterBytes = 16 * 1024; $0.captureMaxBodyBytes = 100_000 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/big?size=\(size)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        // Not reading until the client's socket buffer is full lets the proxy's output pass
        // the high-water mark (the answer is far larger than any socket buffer).
        var last = -1
        XCTAssertTrue(eventually(every: 0.05) {
            let n = unreadBytes(client.fd)
            defer { last = n }
            return n > 0 && n == last
        })
        let responses = client.readResponses(1, timeout: 30)
        XCTAssertEqual(responses.first?.body.count, size)
        XCTAssertTrue(responses.first?.body.allSatisfy { $0 == UInt8(ascii: "x") } ?? false)

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.responseBody.totalBytes, UInt64(size))
        XCTAssertEqual(x.responseBody.bytes.count, 100_000)
        XCTAssertTrue(x.responseBody.truncated)
        XCTAssertNil(x.error)
    }

    func testLargeUploadStreamsThroughAndIsCountedWhole() throws {
        let origin = try origin()
        let size = 1_500_000
        let proxy = try RunningEngine { $0.highWaterBytes = 16 * 1024; $0.captureMaxBodyBytes = 1000 }
        let client = try RawClient(port: proxy.port)
        let body = [UInt8](repeating: UInt8(ascii: "u"), count: size)
        let sender = Thread {
            client.send("POST \(origin.url("/sink")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: \(size)\r\n\r\n")
            client.send(body)
        }
        sender.start()
        let responses = client.readResponses(1, timeout: 30)
        XCTAssertEqual(responses.first.map { String(decoding: $0.body, as: UTF8.self) }, String(size), "the origin counted every byte")

        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.requestBody.totalBytes, UInt64(size))
        XCTAssertEqual(x.requestBody.bytes, Array(body.prefix(1000)))
        XCTAssertNil(x.error)
    }
}


/// A loopback listener that never accepts (the kernel completes connections into its queue
/// until `backlog` is full, then drops SYNs), and its address.
func unacceptedListener(backlog: Int32) throws -> (fd: Int32, address: sockaddr_in) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
    }
    guard bound, listen(fd, backlog) == 0 else {
        close(fd)
        throw NSError(domain: "listener", code: Int(errno))
    }
    return (fd, addr)
}

/// While the upstream connects, a request without a body is complete: what the client sends
/// after it (pipelined requests, or junk) is read only up to a head's worth.
final class ConnectWindowTests: XCTestCase {
    func testBytesAfterABodylessRequestAreNotReadWithoutBoundWhileConnecting() throws {
        // A listener whose accept queue is full: further SYNs are dropped, so a connect to it
        // hangs until upstream.connectTimeout.
        let (listener, addr) = try unacceptedListener(backlog: 0)
        defer { close(listener) }
        let port = Int(UInt16(bigEndian: addr.sin_port))
        // Non-blocking connects fill the queue without waiting for it.
        let fillers: [Int32] = (0..<4).map { _ in
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            var target = addr
            _ = withUnsafePointer(to: &target) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            return fd
        }
        defer { fillers.forEach { close($0) } }
        // The first filler's connect completes into the queue, which is then full.
        XCTAssertTrue(eventually {
            var p = pollfd(fd: fillers[0], events: Int16(POLLOUT), revents: 0)
            return poll(&p, 1, 0) == 1
        })

        let proxy = try RunningEngine { $0.connectTimeout = 5 }
        let client = try RawClient(port: proxy.port)
        client.send("GET http://127.0.0.1:\(port)/ HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        let chunk = [UInt8](repeating: 0x41, count: 1 << 20)
        var sent = 0
        let deadline = Date().addingTimeInterval(1.5)
        while Date() < deadline && sent < 64 << 20 {
            let n = chunk.withUnsafeBytes { Foundation.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL)) }
            if n > 0 { sent += n } else { waitWritable(client.fd, seconds: 0.01) }
        }
        // Socket buffers take a few MiB; without the bound the proxy took all 64.
        XCTAssertLessThan(sent, 24 << 20, "the proxy kept reading while connecting")
    }
}


/// A client that must be closed after its answer (Connection: close) but reads it slowly
/// gets all of it: the limit counts time without progress, not time since the exchange ended.
final class SlowCloseTests: XCTestCase {
    func testASlowButSteadyReaderGetsTheWholeAnswerBeforeTheClose() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.clientIdleTimeout = 0.5 }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var small: Int32 = 16 << 10
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(proxy.port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        XCTAssertEqual(rc, 0)
        let size = 512 << 10
        let request = Array("GET \(origin.url("/big?size=\(size)")) HTTP/1.1\r\nHost: \(origin.authority)\r\nConnection: close\r\n\r\n".utf8)
        XCTAssertEqual(request.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, 0) }, request.count)
        // About 160 KiB/s: the answer takes ~3 s, six times the idle limit, with progress every 0.1 s.
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { Foundation.recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += n
            Thread.sleep(forTimeInterval: 0.1)
        }
        XCTAssertGreaterThan(received, size, "the body (\(size) B) and its head, not cut at the close")
    }
}


/// A peer that stops reading while the other side waits for it (backpressure) ends the
/// exchange after its limit; before, no timeout ran on either side and both sockets stayed.
final class StallTests: XCTestCase {
    func testAClientThatStopsReadingEndsTheExchangeAfterClientIdleTimeout() throws {
        let origin = try origin()
        let proxy = try RunningEngine { $0.clientIdleTimeout = 1 }
        let client = try RawClient(port: proxy.port)
        client.send("GET \(origin.url("/big?size=\(64 << 20)")) HTTP/1.1\r\nHost: \(origin.authority)\r\n\r\n")
        // Never read.
        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.error?.code, .clientTimeout, "\(String(describing: x.error))")
        XCTAssertTrue(eventually { proxy.engine.metrics.activeUpstreams.value == 0 && proxy.engine.metrics.activeClients.value == 0 })
    }

    func testAnOriginThatStopsReadingTheBodyEndsTheExchangeAfterReadTimeout() throws {
        // A listener that never accepts: the kernel takes the first bytes, then nothing.
        let (listener, addr) = try unacceptedListener(backlog: 8)
        defer { close(listener) }
        let port = Int(UInt16(bigEndian: addr.sin_port))

        let proxy = try RunningEngine { $0.upstreamReadTimeout = 1 }
        let client = try RawClient(port: proxy.port)
        let size = 256 << 20
        client.send("POST http://127.0.0.1:\(port)/ HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(size)\r\n\r\n")
        let sender = Thread {
            let chunk = [UInt8](repeating: 0x42, count: 1 << 20)
            var sent = 0
            while sent < size {
                let n = chunk.withUnsafeBytes { Foundation.send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        }
        sender.start()
        guard let x = proxy.sink.exchanges(1).first else { return }
        XCTAssertEqual(x.error?.code, .upstreamTimeout, "\(String(describing: x.error))")
        XCTAssertTrue(eventually { proxy.engine.metrics.activeUpstreams.value == 0 })
        client.resetOnClose()
    }
}
