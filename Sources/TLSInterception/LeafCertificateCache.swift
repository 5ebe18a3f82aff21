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

    /// Whether the leaves' contexts let ALPN pick `h2` (`tls.http2`).
    public let offerHTTP2: Bool

    public init(ca: CertificateAuthority, capacity: Int = 1000, offerHTTP2: Bool = false) {
        self.authority = ca
        self.offerHTTP2 = offerHTTP2
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

        let fresh = try ServerContext(host: name, authority: authority, now: now, offerHTTP2: offerHTTP2)
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
    /// `host`, owned by the caller, presenting `host`'s certificate. A ClientHello
    /// whose SNI names another host is refused (see `followClientSNI`). The SSL
    /// keeps this cache alive until it is freed.
    public func makeSSL(forHost host: String) throws(TLSSetupError) -> OpaquePointer {
        let name = try HostName(host)
        let ssl = try context(forHost: host).makeSSL()
        let retained = Unmanaged.passRetained(SSLBinding(cache: self, host: name.text))
        guard bindingSlot >= 0, SSL_set_ex_data(ssl, bindingSlot, retained.toOpaque()) == 1 else {
            retained.release()
            SSL_free(ssl)
            throw .openSSL(operation: "SSL_set_ex_data", details: drainOpenSSLErrors())
        }
        return ssl
    }

    /// The SNI name a handshake on `ssl` was refused for, if that is why it failed.
    public static func refusedServerName(_ ssl: OpaquePointer) -> String? {
        guard bindingSlot >= 0, let pointer = SSL_get_ex_data(ssl, bindingSlot) else { return nil }
        return Unmanaged<SSLBinding>.fromOpaque(pointer).takeUnretainedValue().refusedServerName
    }
}

/// What `makeSSL(forHost:)` attaches to each SSL: the CONNECT host (canonical) and
/// the cache. Touched only by the SSL's own handshake, on one loop thread.
final class SSLBinding {
    let cache: LeafCertificateCache
    let host: String
    var refusedServerName: String?
    init(cache: LeafCertificateCache, host: String) { self.cache = cache; self.host = host }
}

/// The ex_data slot where `makeSSL(forHost:)` leaves a retained `SSLBinding`;
/// OpenSSL calls the free function when the SSL is freed.
/// (A global `let` is initialised once, thread-safely.)
private let bindingSlot: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil) {
    _, pointer, _, _, _, _ in
    guard let pointer else { return }
    Unmanaged<SSLBinding>.fromOpaque(pointer).release()
}

/// Servername callback of every ServerContext. A ClientHello without SNI, or with the
/// CONNECT host (case and a trailing dot aside), goes on with that host's certificate.
/// Any other name is refused with `unrecognized_name`: Tapwire connects to and verifies
/// the CONNECT host, so a certificate for the SNI name would vouch for a host nobody
/// checked (a client that CONNECTs to an address it resolved itself, a poisoned
/// resolver, a CONNECT target chosen by a dependency). It also kept `tls.ignore` from
/// applying to the SNI name.
func followClientSNI(_ ssl: OpaquePointer?, _ alert: UnsafeMutablePointer<Int32>?,
                     _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let ssl, bindingSlot >= 0, let pointer = SSL_get_ex_data(ssl, bindingSlot),
          let serverName = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) else { return SSL_TLSEXT_ERR_OK }
    let binding = Unmanaged<SSLBinding>.fromOpaque(pointer).takeUnretainedValue()
    let requested = String(cString: serverName)
    if let name = try? HostName(requested), name.text == binding.host { return SSL_TLSEXT_ERR_OK }
    binding.refusedServerName = requested
    alert?.pointee = SSL_AD_UNRECOGNIZED_NAME
    return SSL_TLSEXT_ERR_ALERT_FATAL
}
