import Foundation
import HTTP1
import ProxyEngine
import TLSInterception
import XCTest

/// HTTP/2 streams under `log.whenBehind: wait`, in process so the sink can be held behind
/// at will: a stream's request waits, unread, while the sink is behind, and starts when it
/// catches up. The client is the raw `h2` client of the end-to-end tests.
final class HTTP2HoldTests: XCTestCase {
    /// Interception with a throwaway CA; origins are not verified (a self-signed test origin).
    final class Interceptor: TLSInterceptor {
        let leaves: LeafCertificateCache
        let upstream: UpstreamTLSContext
        init(ca: CertificateAuthority) throws {
            leaves = LeafCertificateCache(ca: ca, offerHTTP2: true)
            upstream = try UpstreamTLSContext(insecure: true)
        }
        func intercepts(host: String) -> Bool { true }
        func serverSSL(forHost host: String) throws -> OpaquePointer { try leaves.makeSSL(forHost: host) }
        func clientSSL(forHost host: String) throws -> OpaquePointer { try upstream.makeSSL(host: host) }
        func negotiatedProtocol(ssl: OpaquePointer) -> String? { negotiatedALPN(ssl) }
        func free(ssl: OpaquePointer) { freeSSL(ssl) }
        func failureDescription(ssl: OpaquePointer?, error: UInt) -> String { "handshake failed" }
    }

    func testAStreamWaitsWhileTheSinkIsBehindAndStartsWhenItCatchesUp() throws {
        guard (try? run("python3", ["-c", "import h2"]))?.status == 0 else { throw XCTSkip("needs Python's h2 module") }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("tw-h2hold-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let cert = work.appendingPathComponent("origin.pem").path, key = work.appendingPathComponent("origin.key").path
        let made = try run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                                       "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert])
        XCTAssertEqual(made.status, 0)
        let origin = try OriginServer(tls: (cert, key))
        let ca = try CertificateAuthority.loadOrCreate(directory: work.appendingPathComponent("ca").path)
        let caFile = work.appendingPathComponent("ca.pem")
        try Data(ca.certificatePEM.utf8).write(to: caFile)
        let proxy = try RunningEngine(tlsInterceptor: try Interceptor(ca: ca))

        proxy.sink.behind.store(true, ordering: .relaxed)
        let script = packageRoot.appendingPathComponent("Tests/EndToEndTests/Resources/h2_client.py").path
        let result = Locked<(status: Int32, text: String)?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let r = try? self.run("python3", [script, "concurrent", String(proxy.port), String(origin.port), caFile.path])
            result.update { $0 = r }
            done.signal()
        }
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 1 }, "no stream was held")
        XCTAssertEqual(done.wait(timeout: .now() + 0.5), .timedOut, "a held stream was answered")
        XCTAssertEqual(proxy.sink.events.count, 0, "a held stream reached the origin")
        XCTAssertGreaterThan(proxy.engine.metrics.holds.value, 0)

        proxy.sink.catchUp()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let output = try XCTUnwrap(result.value ?? nil)
        XCTAssertEqual(output.status, 0, output.text)
        XCTAssertTrue(output.text.contains(#""statuses": ["200""#), output.text)
        XCTAssertFalse(output.text.contains("null"), "a stream was not answered: \(output.text)")
        XCTAssertTrue(eventually { proxy.engine.metrics.heldClients.value == 0 })
        proxy.sink.waitForCount(31)
    }

    private func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, text: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [executable] + arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
