import COpenSSL
import Foundation
@testable import TLSInterception
import XCTest

/// The client session `tapwire replay` uses, over a socket pair whose far end is a test
/// server on its own thread.
final class BlockingTLSStreamTests: XCTestCase {
    private var authority: CertificateAuthority!
    private var sockets: [Int32] = [-1, -1]

    override func setUpWithError() throws {
        // A failing test must fail, not kill the process with a write to a closed peer.
        signal(SIGPIPE, SIG_IGN)
        authority = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets), 0)
        var limit = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(sockets[0], SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    override func tearDown() {
        for fd in sockets where fd >= 0 { close(fd) }
    }

    /// Answers one read with `answer`, then closes the socket without close_notify, as an
    /// origin ending a `Connection: close` response may.
    private func serve(_ cache: LeafCertificateCache, host: String, answer: String) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        let fd = sockets[1]
        sockets[1] = -1
        DispatchQueue.global().async {
            defer { close(fd); done.signal() }
            guard let ssl = try? cache.makeSSL(forHost: host) else { return }
            defer { SSL_free(ssl) }
            SSL_set_fd(ssl, fd)
            guard SSL_accept(ssl) == 1 else { return }
            var buffer = [UInt8](repeating: 0, count: 256)
            guard buffer.withUnsafeMutableBytes({ SSL_read(ssl, $0.baseAddress, Int32($0.count)) }) > 0 else { return }
            _ = Array(answer.utf8).withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
        }
        return done
    }

    private func readAll(_ stream: BlockingTLSStream) throws -> String {
        var text = ""
        var chunk = [UInt8](repeating: 0, count: 64)
        while true {
            let n = try stream.read(into: &chunk)
            if n == 0 { return text }
            text += String(decoding: chunk[..<n], as: UTF8.self)
        }
    }

    func testExchangeEndsAtACloseWithoutCloseNotify() throws {
        let done = serve(LeafCertificateCache(ca: authority), host: "example.test", answer: "pong")
        let context = try UpstreamTLSContext(upstreamCAFile: authority.certificatePath, systemTrust: false)
        let stream = try BlockingTLSStream(fd: sockets[0], context: context, host: "example.test")
        try stream.write(Array("ping".utf8))
        XCTAssertEqual(try readAll(stream), "pong")
        done.wait()
    }

    func testServerFromAnotherCAIsRefusedNamingTheReason() throws {
        let other = try CertificateAuthority.loadOrCreate(directory: try makeTemporaryDirectory(self))
        let done = serve(LeafCertificateCache(ca: other), host: "example.test", answer: "pong")
        let context = try UpstreamTLSContext(upstreamCAFile: authority.certificatePath, systemTrust: false)
        XCTAssertThrowsError(try BlockingTLSStream(fd: sockets[0], context: context, host: "example.test")) { error in
            let failure = error as? BlockingTLSStream.Failure
            XCTAssertEqual(failure?.timedOut, false)
            XCTAssertTrue("\(error)".contains("certificate not trusted: unable to get local issuer certificate"), "\(error)")
        }
        done.wait()
    }

    func testASilentPeerIsATimeout() throws {
        var limit = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(sockets[0], SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let context = try UpstreamTLSContext(upstreamCAFile: authority.certificatePath, systemTrust: false)
        XCTAssertThrowsError(try BlockingTLSStream(fd: sockets[0], context: context, host: "example.test")) { error in
            XCTAssertEqual((error as? BlockingTLSStream.Failure)?.timedOut, true, "\(error)")
            XCTAssertTrue("\(error)".contains("--timeout"), "\(error)")
        }
    }
}
