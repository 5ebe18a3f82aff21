import Foundation
import HTTP1
import ProxyEngine
import XCTest

/// The counters behind `/metrics`, updated from every loop thread.
final class EngineMetricsTests: XCTestCase {
    private func sample(_ text: String, _ name: String) -> Int? {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Int(line.dropFirst(name.count + 1))
        }
        return nil
    }

    func testExchangesAreCountedByStatusClass() throws {
        let origin = try origin()
        let proxy = try RunningEngine()
        let refused = "127.0.0.1:\(closedLoopbackPort())"
        let targets = [origin.url("/json"), origin.url("/status?code=404"), origin.url("/status?code=503"),
                       origin.url("/status?code=302"), "http://\(refused)/"]
        for target in targets {
            let client = try RawClient(port: proxy.port)
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            XCTAssertEqual(client.readResponses(1).count, 1, target)
        }
        _ = proxy.sink.exchanges(targets.count)
        let metrics = proxy.engine.metrics
        XCTAssertEqual(metrics.exchanges.value, targets.count)
        let text = metrics.prometheusText()
        XCTAssertEqual(sample(text, #"tapwire_exchanges_total{status_class="none"}"#), 1)
        XCTAssertEqual(sample(text, #"tapwire_exchanges_total{status_class="1xx"}"#), 0)
        XCTAssertEqual(sample(text, #"tapwire_exchanges_total{status_class="2xx"}"#), 1)
        XCTAssertEqual(sample(text, #"tapwire_exchanges_total{status_class="3xx"}"#), 1)
        XCTAssertEqual(sample(text, #"tapwire_exchanges_total{status_class="4xx"}"#), 1)
        XCTAssertEqual(sample(text, #"tapwire_exchanges_total{status_class="5xx"}"#), 1)
        XCTAssertEqual(sample(text, "tapwire_exchange_duration_seconds_count"), targets.count)
        XCTAssertEqual(sample(text, #"tapwire_exchange_duration_seconds_bucket{le="+Inf"}"#), targets.count)
        XCTAssertGreaterThan(sample(text, "tapwire_client_bytes_total") ?? 0, 0)
        XCTAssertGreaterThan(sample(text, "tapwire_upstream_bytes_total") ?? 0, 0)
        // The refused connection is the one transport failure; every other code is listed at 0.
        for code in TransportError.Code.allCases {
            XCTAssertEqual(sample(text, "tapwire_transport_errors_total{code=\"\(code.rawValue)\"}"),
                           code == .upstreamConnectFailed ? 1 : 0, "\(code)")
        }
        XCTAssertEqual(metrics.transportErrorCount(.upstreamConnectFailed), 1)
    }

    func testEveryTransportErrorCodeHasASeriesFromTheStart() {
        let text = EngineMetrics().prometheusText()
        XCTAssertTrue(text.contains("# TYPE tapwire_transport_errors_total counter\n"))
        let series = text.split(separator: "\n").filter { $0.hasPrefix("tapwire_transport_errors_total{") }
        XCTAssertEqual(series.count, TransportError.Code.allCases.count)
        for code in TransportError.Code.allCases {
            XCTAssertEqual(sample(text, "tapwire_transport_errors_total{code=\"\(code.rawValue)\"}"), 0, "\(code)")
        }
    }

    func testMetricsEndpointServesTheSameText() throws {
        // Set before start, as the daemon does: the loops read it without a lock.
        let proxy = try RunningEngine(beforeStart: { $0.additionalMetrics = { "tapwire_test_extra 7\n" } })
        let client = try RawClient(port: proxy.port)
        client.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        guard let answer = client.readResponses(1).first else { return XCTFail("no answer") }
        XCTAssertTrue(answer.head.contains("Content-Type: text/plain; version=0.0.4"), answer.head)
        let body = String(decoding: answer.body, as: UTF8.self)
        XCTAssertEqual(sample(body, "tapwire_client_connections"), 1, "this client is open while it asks")
        XCTAssertEqual(sample(body, "tapwire_test_extra"), 7)
        XCTAssertEqual(proxy.engine.metrics.exchanges.value, 0, "admin requests are not exchanges")
    }

    /// Many clients on both loops at once, with /metrics read meanwhile: the
    /// counters add up (and the thread sanitizer watches the shared paths).
    func testConcurrentClientsAcrossLoopsAddUp() throws {
        let origin = try origin()
        let proxy = try RunningEngine(loops: 2)
        let clients = 6, requestsEach = 4
        let failures = Locked([String]())
        let group = DispatchGroup()
        for n in 0..<clients {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                guard let client = try? RawClient(port: proxy.port) else {
                    failures.update { $0.append("client \(n) could not connect") }; return
                }
                for i in 0..<requestsEach {
                    let body = "client \(n) request \(i)"
                    client.send("POST \(origin.url("/echo")) HTTP/1.1\r\nHost: \(origin.authority)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                    let got = client.readResponses(1).first.map { String(decoding: $0.body, as: UTF8.self) }
                    if got != body { failures.update { $0.append("client \(n) request \(i): \(got ?? "nothing")") } }
                }
            }
        }
        var scrapes = 0
        // At least one scrape even when the clients finish within the first wait.
        repeat {
            _ = proxy.engine.metrics.prometheusText()
            scrapes += 1
        } while group.wait(timeout: .now() + .milliseconds(5)) == .timedOut
        XCTAssertEqual(failures.value, [])
        let captured = proxy.sink.exchanges(clients * requestsEach)
        XCTAssertEqual(captured.count, clients * requestsEach)
        XCTAssertEqual(Set(captured.map(\.requestBody.text)).count, clients * requestsEach, "every body captured once")
        XCTAssertEqual(proxy.engine.metrics.exchanges.value, clients * requestsEach)
        XCTAssertEqual(sample(proxy.engine.metrics.prometheusText(), #"tapwire_exchanges_total{status_class="2xx"}"#),
                       clients * requestsEach)
        XCTAssertGreaterThan(scrapes, 0)
    }
}
