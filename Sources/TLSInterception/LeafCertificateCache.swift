import COpenSSL
import Foundation
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
public final class LeafCertificateCache: @unchecked Sendable {
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
    // NSLock rather than Synchronization.Mutex: on Linux the thread sanitizer cannot see
    // Mutex's futex-based locking, and reported concurrent lookups as races (see EventLoop.inbox).
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var state = State()

    public init(ca: CertificateAuthority, capacity: Int = 1000) {
        self.authority = ca
        self.capacity = max(1, capacity)
    }

    public var count: Int { withState { $0.entries.count } }
    public var statistics: Statistics { withState { $0.statistics } }

    private func withState<T>(_ body: (inout State) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }

    /// The server context for `host` (a DNS name or an IP literal, IPv6 with
    /// or without brackets). Names are case-insensitive; a trailing dot is ignored.
    public func context(forHost host: String) throws(TLSSetupError) -> ServerContext {
        let name = try HostName(host)
        let now = Int(time(nil))
        let cached: ServerContext? = withState { state in
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
        return withState { state in
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

    /// A new server-side `SSL` for a client that asked (by CONNECT) for
    /// `host`, owned by the caller. If the client's ClientHello names a
    /// different valid host in SNI, that host's certificate is presented
    /// instead, since that is the name the client will verify. The SSL keeps
    /// this cache alive until it is freed.
    public func makeSSL(forHost host: String) throws(TLSSetupError) -> OpaquePointer {
        let ssl = try context(forHost: host).makeSSL()
        let retained = Unmanaged.passRetained(self)
        guard cacheSlot >= 0, SSL_set_ex_data(ssl, cacheSlot, retained.toOpaque()) == 1 else {
            retained.release()
            SSL_free(ssl)
            throw .openSSL(operation: "SSL_set_ex_data", details: drainOpenSSLErrors())
        }
        return ssl
    }
}

/// The ex_data slot where `makeSSL(forHost:)` leaves a retained reference to
/// its cache; OpenSSL calls the free function when the SSL is freed.
/// (A global `let` is initialised once, thread-safely.)
private let cacheSlot: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil) {
    _, pointer, _, _, _, _ in
    guard let pointer else { return }
    Unmanaged<LeafCertificateCache>.fromOpaque(pointer).release()
}

/// Servername callback of every ServerContext: switches the SSL to the SNI
/// host's context when the SSL came from `makeSSL(forHost:)`. An SNI name we
/// cannot make a certificate for keeps the CONNECT host's certificate, and
/// the client's own verification then decides.
func followClientSNI(_ ssl: OpaquePointer?, _ alert: UnsafeMutablePointer<Int32>?,
                     _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let ssl, cacheSlot >= 0, let cachePointer = SSL_get_ex_data(ssl, cacheSlot),
          let serverName = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) else { return SSL_TLSEXT_ERR_OK }
    let cache = Unmanaged<LeafCertificateCache>.fromOpaque(cachePointer).takeUnretainedValue()
    guard let context = try? cache.context(forHost: String(cString: serverName)) else { return SSL_TLSEXT_ERR_OK }
    withExtendedLifetime(context) {
        if SSL_get_SSL_CTX(ssl) != context.sslContext {
            // SSL_set_SSL_CTX takes its own reference to the new context.
            if SSL_set_SSL_CTX(ssl, context.sslContext) == nil { _ = drainOpenSSLErrors() }
        }
    }
    return SSL_TLSEXT_ERR_OK
}
