import CLibevent
import Foundation
import HTTP1

/// Asynchronous name resolution with evdns, returning every address so the
/// connector can fall back from one to the next (IPv6 → IPv4 and back).
enum Resolver {
    private final class Request {
        let completion: (Result<[SocketAddress], TransportError>) -> Void
        let host: String
        init(host: String, completion: @escaping (Result<[SocketAddress], TransportError>) -> Void) {
            self.host = host; self.completion = completion
        }
    }

    /// `completion` runs on the loop thread, never inside this call; `lookedUp` is false for a
    /// numeric host, which needs no DNS query (its record's `metrics.dns` is null).
    static func resolve(host: String, port: Int, on loop: EventLoop,
                        completion: @escaping (_ result: Result<[SocketAddress], TransportError>, _ lookedUp: Bool) -> Void) {
        // Numeric hosts need no resolver (and must work without one).
        if let numeric = SocketAddress(parsing: host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)") {
            loop.execute { completion(.success([numeric]), false) }
            return
        }
        guard let dns = loop.dns else {
            loop.execute { completion(.failure(TransportError(.upstreamDNSFailed, "no resolver available for \(host)")), true) }
            return
        }
        // An absolute name ("localhost.", "example.com.") names the same host, but evdns
        // matched it against /etc/hosts as given and found nothing: "localhost." failed. A name
        // with another dot is tried as given before any search domain anyway (ndots 1); a single
        // label ("intranet.") may now also meet the search domains, as it would without the dot.
        let lookup = host.count > 1 && host.hasSuffix(".") ? String(host.dropLast()) : host
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        let request = Request(host: host) { result in loop.execute { completion(result, true) } }
        let ctx = Unmanaged.passRetained(request).toOpaque()
        _ = evdns_getaddrinfo(dns, lookup, String(port), &hints, { result, list, ctx in
            guard let ctx else { return }
            let request = Unmanaged<Request>.fromOpaque(ctx).takeRetainedValue()
            defer { if let list { evutil_freeaddrinfo(list) } }
            guard result == 0 else {
                let why = String(cString: evutil_gai_strerror(result))
                request.completion(.failure(TransportError(.upstreamDNSFailed, "cannot resolve \(request.host): \(why)")))
                return
            }
            var out: [SocketAddress] = []
            var p = list
            while let ai = p {
                if let sa = ai.pointee.ai_addr, let a = SocketAddress(sa, length: socklen_t(ai.pointee.ai_addrlen)),
                   !out.contains(a) { out.append(a) }
                p = ai.pointee.ai_next
            }
            if out.isEmpty {
                request.completion(.failure(TransportError(.upstreamDNSFailed, "\(request.host) has no addresses")))
            } else {
                request.completion(.success(out))
            }
        }, ctx)
    }
}
