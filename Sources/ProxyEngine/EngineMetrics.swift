import HTTP1
import Synchronization

/// Process-wide counters, updated by every loop without locks and read by
/// `/metrics` and `sd_notify` STATUS lines.
/// A relaxed atomic counter that can live in arrays (Atomic itself is ~Copyable).
public final class Counter: Sendable {
    private let atomic = Atomic<Int>(0)
    public init() {}
    public func add(_ n: Int = 1) { atomic.add(n, ordering: .relaxed) }
    public func sub(_ n: Int = 1) { atomic.subtract(n, ordering: .relaxed) }
    public var value: Int { atomic.load(ordering: .relaxed) }
}

public final class EngineMetrics: Sendable {
    public let activeClients = Counter()
    public let activeUpstreams = Counter()
    public let pooledUpstreams = Counter()
    public let activeTunnels = Counter()
    public let exchanges = Counter()
    /// Index 0 = no response (transport failure), 1…5 = status class.
    let byStatusClass: [Counter] = (0..<6).map { _ in Counter() }
    public let bytesFromClients = Counter()
    public let bytesFromUpstreams = Counter()
    public let refusedConnections = Counter()
    /// Clients whose next request waits, unread, for the log to catch up (`log.whenBehind: wait`).
    public let heldClients = Counter()
    public let holds = Counter()
    /// Upper bounds (seconds) of the total-duration histogram.
    public static let latencyBuckets: [Double] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    let latencyCounts: [Counter] = (0...EngineMetrics.latencyBuckets.count).map { _ in Counter() }
    let latencySumMicros = Counter()
    /// Transport failures recorded (exchanges and tunnels), one counter per
    /// `TransportError.Code`, in `allCases` order, so every series exists from the start.
    let transportErrors: [Counter] = TransportError.Code.allCases.map { _ in Counter() }

    public init() {}

    /// An exchange or tunnel record carries this failure.
    func recordTransportError(_ code: TransportError.Code) {
        // A linear search over a dozen cases, on the failure path only.
        guard let i = TransportError.Code.allCases.firstIndex(of: code) else { return }
        transportErrors[i].add()
    }

    /// How many records carried `code` so far.
    public func transportErrorCount(_ code: TransportError.Code) -> Int {
        TransportError.Code.allCases.firstIndex(of: code).map { transportErrors[$0].value } ?? 0
    }

    func recordExchange(status: Int?, duration: Double) {
        exchanges.add()
        let cls = status.map { max(1, min(5, $0 / 100)) } ?? 0
        byStatusClass[cls].add()
        let i = EngineMetrics.latencyBuckets.firstIndex { duration <= $0 } ?? EngineMetrics.latencyBuckets.count
        latencyCounts[i].add()
        latencySumMicros.add(Int(duration * 1e6))
    }

    /// Prometheus text exposition format (version 0.0.4).
    public func prometheusText() -> String {
        func v(_ a: Counter) -> Int { a.value }
        var s = ""
        func gauge(_ name: String, _ help: String, _ value: Int, type: String = "gauge") {
            s += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        s += "# HELP tapwire_exchanges_total HTTP exchanges finished, by response status class.\n# TYPE tapwire_exchanges_total counter\n"
        for (i, label) in ["none", "1xx", "2xx", "3xx", "4xx", "5xx"].enumerated() {
            s += "tapwire_exchanges_total{status_class=\"\(label)\"} \(v(byStatusClass[i]))\n"
        }
        s += "# HELP tapwire_transport_errors_total Exchanges and tunnels that ended with a transport failure, by error code.\n# TYPE tapwire_transport_errors_total counter\n"
        for (i, code) in TransportError.Code.allCases.enumerated() {
            s += "tapwire_transport_errors_total{code=\"\(code.rawValue)\"} \(v(transportErrors[i]))\n"
        }
        gauge("tapwire_client_connections", "Open client connections.", v(activeClients))
        gauge("tapwire_upstream_connections", "Open upstream connections (in use or pooled).", v(activeUpstreams))
        gauge("tapwire_upstream_pool_size", "Idle upstream connections in the pools.", v(pooledUpstreams))
        gauge("tapwire_tunnels", "Open CONNECT and WebSocket tunnels.", v(activeTunnels))
        gauge("tapwire_client_bytes_total", "Bytes received from clients.", v(bytesFromClients), type: "counter")
        gauge("tapwire_upstream_bytes_total", "Bytes received from upstreams.", v(bytesFromUpstreams), type: "counter")
        gauge("tapwire_refused_connections_total", "Clients refused (limits, access).", v(refusedConnections), type: "counter")
        gauge("tapwire_held_clients", "Clients whose next request waits for the log to catch up (log.whenBehind: wait).", v(heldClients))
        gauge("tapwire_holds_total", "Requests held until the log caught up (log.whenBehind: wait).", v(holds), type: "counter")
        s += "# HELP tapwire_exchange_duration_seconds Time from request head to last response byte.\n# TYPE tapwire_exchange_duration_seconds histogram\n"
        var cumulative = 0
        for (i, le) in EngineMetrics.latencyBuckets.enumerated() {
            cumulative += v(latencyCounts[i])
            s += "tapwire_exchange_duration_seconds_bucket{le=\"\(le)\"} \(cumulative)\n"
        }
        cumulative += v(latencyCounts[EngineMetrics.latencyBuckets.count])
        s += "tapwire_exchange_duration_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
        s += "tapwire_exchange_duration_seconds_sum " + String(Double(v(latencySumMicros)) / 1e6) + "\n"
        s += "tapwire_exchange_duration_seconds_count \(cumulative)\n"
        return s
    }
}
