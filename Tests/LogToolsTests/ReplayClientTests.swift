import Foundation
import XCTest
@testable import LogTools
import TLSInterception

/// What `tapwire replay` sends, without sockets.
final class ReplayClientTests: XCTestCase {
    let request = RecordedRequest(id: "0000018c2b1f4a1e-000002", method: "POST", url: "http://user@api.local:8080/v1/a?b=1",
                                  headers: [(name: "Content-Type", value: "application/json"), (name: "X-Trace", value: "1")],
                                  body: Array(#"{"a":1}"#.utf8))

    func testThroughTheProxyTheTargetIsAbsoluteAndTheRecordIsNamed() throws {
        let bytes = try ReplayClient(route: .proxy(host: "127.0.0.1", port: 8080)).wireForm(request)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "POST http://user@api.local:8080/v1/a?b=1 HTTP/1.1\r\nHost: api.local:8080\r\nContent-Type: application/json\r\n"
                       + "X-Trace: 1\r\nX-Tapwire-Replay-Of: 0000018c2b1f4a1e-000002\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}")
    }

    func testDirectlyTheTargetIsOriginFormWithoutTheReplayField() throws {
        let bytes = try ReplayClient(route: .direct).wireForm(request)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "POST /v1/a?b=1 HTTP/1.1\r\nHost: api.local:8080\r\nContent-Type: application/json\r\n"
                       + "X-Trace: 1\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}")
    }

    func testOnlyHTTPAndHTTPSAreSent() {
        var ftp = request
        ftp.url = "ftp://api.local/v1"
        XCTAssertThrowsError(try ReplayClient(route: .direct).wireForm(ftp)) { error in
            XCTAssertTrue("\(error)".contains("only http:// and https://"), "\(error)")
        }
    }

    /// Inside the CONNECT tunnel the proxy stands in for the origin: origin form, replay field kept.
    func testHTTPSThroughTheProxyIsOriginFormAndNamesTheRecord() throws {
        var https = request
        https.url = "https://api.local/v1/a?b=1"
        let bytes = try ReplayClient(route: .proxy(host: "127.0.0.1", port: 8080)).wireForm(https)
        XCTAssertEqual(String(decoding: bytes, as: UTF8.self),
                       "POST /v1/a?b=1 HTTP/1.1\r\nHost: api.local\r\nContent-Type: application/json\r\n"
                       + "X-Trace: 1\r\nX-Tapwire-Replay-Of: 0000018c2b1f4a1e-000002\r\nContent-Length: 7\r\nConnection: close\r\n\r\n{\"a\":1}")
        let direct = try ReplayClient(route: .direct).wireForm(https)
        XCTAssertFalse(String(decoding: direct, as: UTF8.self).contains("X-Tapwire-Replay-Of"))
    }

    private func https(decrypting pattern: String) -> ReplayClient.HTTPS {
        ReplayClient.HTTPS(proxyCAFile: "/nonexistent/ca.pem", upstreamCAFile: nil, insecureUpstream: false,
                           proxyDecrypts: { $0 == pattern })
    }

    /// A host the proxy tunnels blind would carry the replay field to the origin, unrecorded.
    func testHTTPSThroughAProxyThatDoesNotDecryptTheHostIsRefused() throws {
        var secure = request
        secure.url = "https://api.local:8443/v1"
        let proxy = ReplayClient.Route.proxy(host: "127.0.0.1", port: 8080)
        let blind = ReplayClient(route: proxy, https: https(decrypting: "other.local"))
        let reason = try XCTUnwrap(blind.refusal(secure))
        XCTAssertTrue(reason.contains("does not decrypt api.local") && reason.contains("--direct"), reason)
        XCTAssertThrowsError(try blind.send(secure)) { XCTAssertEqual("\($0)", reason) }
        XCTAssertNil(ReplayClient(route: proxy, https: https(decrypting: "api.local")).refusal(secure))
        XCTAssertNil(ReplayClient(route: .direct, https: https(decrypting: "other.local")).refusal(secure),
                     "direct replays reach the origin whatever the proxy decrypts")
        XCTAssertNotNil(ReplayClient(route: proxy).refusal(secure), "no tls settings, no https")
        XCTAssertNil(blind.refusal(request), "plain http is never refused for this")
    }

    /// A one-connection loopback "proxy" that reads the CONNECT and answers `answer`.
    private func fakeProxy(answering answer: [UInt8]) throws -> (port: Int, done: DispatchSemaphore) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound, listen(listener, 1) == 0 else { close(listener); throw XCTSkip("no loopback listener") }
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            defer { close(listener); done.signal() }
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 1024)
            _ = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            _ = answer.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            shutdown(fd, Int32(SHUT_WR))
            _ = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        }
        return (Int(UInt16(bigEndian: address.sin_port)), done)
    }

    private func sendHTTPSThroughFakeProxy(answer: [UInt8]) throws -> String {
        signal(SIGPIPE, SIG_IGN)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tw-replay-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ca = try CertificateAuthority.loadOrCreate(directory: directory)
        let (port, done) = try fakeProxy(answering: answer)
        defer { done.wait() }
        var secure = request
        secure.url = "https://api.local/v1"
        let client = ReplayClient(route: .proxy(host: "127.0.0.1", port: port), timeout: 5,
                                  https: .init(proxyCAFile: ca.certificatePath, upstreamCAFile: nil, insecureUpstream: false,
                                               proxyDecrypts: { _ in true }))
        do {
            _ = try client.send(secure)
            return "sent"
        } catch {
            return error.message
        }
    }

    func testAProxyRefusingTheTunnelIsReportedWithItsStatusLine() throws {
        let message = try sendHTTPSThroughFakeProxy(answer: Array("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".utf8))
        XCTAssertTrue(message.contains("refused CONNECT api.local:443: HTTP/1.1 403 Forbidden"), message)
    }

    /// `maxTunnelResponseHead`: a CONNECT answer that never ends its head is not read forever.
    func testAnEndlessTunnelResponseHeadIsCutOff() throws {
        let endless = Array("HTTP/1.1 200 OK\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: ReplayClient.maxTunnelResponseHead + 10)
        let message = try sendHTTPSThroughFakeProxy(answer: endless)
        XCTAssertTrue(message.contains("head over \(ReplayClient.maxTunnelResponseHead) bytes"), message)
    }

    func testListenAddressesBecomeRoutes() {
        XCTAssertEqual(ReplayClient.proxyRoute("127.0.0.1:3128"), .proxy(host: "127.0.0.1", port: 3128))
        XCTAssertEqual(ReplayClient.proxyRoute("0.0.0.0:3128"), .proxy(host: "127.0.0.1", port: 3128))
        XCTAssertEqual(ReplayClient.proxyRoute("[::]:3128"), .proxy(host: "::1", port: 3128))
        XCTAssertEqual(ReplayClient.proxyRoute("[::1]:80"), .proxy(host: "::1", port: 80))
        XCTAssertNil(ReplayClient.proxyRoute("localhost"))
        XCTAssertNil(ReplayClient.proxyRoute("h:99999"))
    }
}
