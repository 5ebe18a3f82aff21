import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Per-host server contexts, made on first use and kept in memory, bounded
/// by `capacity` with least-recently-used eviction. Thread-safe.
///
/// Certificates are generated outside the lock, so a slow signature never
/// blocks lookups of other hosts; if two threads race on the same new host,
/// the first one stored wins and both get the same context.
public final class LeafCertificateCache: Sendable {
    /// A cached leaf is replaced when it has less than this left to live.
    static let renewalMarginSeconds = 86_400

    public struct Statistics: Equatable, Sendable {
        public var hits = 0
        public var misses = 0
        public var evictions = 0
    }

    private struct Entry {
        let context: ServerContext
        var lastUse: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
        var statistics = Statistics()
    }

    public let capacity: Int
    private let authority: CertificateAuthority
    private let state = Mutex(State())

    public init(ca: CertificateAuthority, capacity: Int = 1000) {
        self.authority = ca
        self.capacity = max(1, capacity)
    }

    public var count: Int { state.withLock { $0.entries.count } }
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The server context for `host` (a DNS name or an IP literal, IPv6 with
    /// or without brackets). Names are case-insensitive; a trailing dot is ignored.
    public func context(forHost host: String) throws(TLSSetupError) -> ServerContext {
        let name = try HostName(host)
        let now = Int(time(nil))
        let cached: ServerContext? = state.withLock { state in
            guard var entry = state.entries[name.text],
                  entry.context.notAfter - now > Self.renewalMarginSeconds else { return nil }
            state.clock += 1
            entry.lastUse = state.clock
            state.entries[name.text] = entry
            state.statistics.hits += 1
            return entry.context
        }
        if let cached { return cached }

        let fresh = try ServerContext(host: name, authority: authority, now: now)
        return state.withLock { state in
            state.clock += 1
            if var raced = state.entries[name.text], raced.context.notAfter - now > Self.renewalMarginSeconds {
                raced.lastUse = state.clock
                state.entries[name.text] = raced
                state.statistics.hits += 1
                return raced.context
            }
            state.statistics.misses += 1
            if state.entries[name.text] == nil && state.entries.count >= capacity {
                // A linear scan: at most `capacity` comparisons, paid only
                // when a certificate is being generated anyway.
                if let oldest = state.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
                    state.entries[oldest] = nil
                    state.statistics.evictions += 1
                }
            }
            state.entries[name.text] = Entry(context: fresh, lastUse: state.clock)
            return fresh
        }
    }
}
