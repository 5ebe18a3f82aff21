import CLibevent
import Foundation

/// Bytes for one socket, gathered during a callback and then sent with one
/// writev straight to the socket when the bufferevent has nothing queued.
/// Handing them to the bufferevent instead makes libevent add a write event,
/// wait a loop turn and delete the event again: several epoll_ctl calls per
/// proxied request, the largest cost after the copies the kernel must do.
/// Whatever the socket does not take at once is queued in the bufferevent as
/// usual, so ordering, backpressure and write callbacks are unchanged.
final class SocketOutput {
    /// Chains moved in by `evbuffer_remove_buffer`; nil only if allocation failed,
    /// in which case everything goes to the bufferevent directly.
    let staging: OpaquePointer?

    init() { staging = evbuffer_new() }
    deinit { if let staging { evbuffer_free(staging) } }

    var pending: Int { staging.map { evbuffer_get_length($0) } ?? 0 }

    /// Where to put bytes for `bev` now.
    func buffer(for bev: OpaquePointer) -> OpaquePointer {
        staging ?? bufferevent_get_output(bev)
    }

    func add(_ bytes: [UInt8], for bev: OpaquePointer) {
        let target = buffer(for: bev)
        bytes.withUnsafeBytes { _ = evbuffer_add(target, $0.baseAddress, $0.count) }
    }

    /// Lets `fill` write up to `capacity` bytes in place at the end of what is staged (a
    /// `WireFormSink`). Should libevent have no memory for them, nothing is added, as when
    /// `evbuffer_add` fails.
    func write(capacity: Int, for bev: OpaquePointer, _ fill: (UnsafeMutablePointer<UInt8>) -> Int) {
        let target = buffer(for: bev)
        var vec = iovec()
        guard capacity > 0, evbuffer_reserve_space(target, capacity, &vec, 1) == 1, let raw = vec.iov_base,
              vec.iov_len >= capacity else { return }
        vec.iov_len = fill(raw.bindMemory(to: UInt8.self, capacity: capacity))
        _ = evbuffer_commit_space(target, &vec, 1)
    }

    /// Sends the staged bytes: directly when nothing is queued ahead of them and the
    /// bufferevent is a plain socket (a TLS filter must encrypt them), else queued.
    func flush(to bev: OpaquePointer) {
        guard let staging, evbuffer_get_length(staging) > 0 else { return }
        let queued = bufferevent_get_output(bev)
        if evbuffer_get_length(queued) == 0 && bufferevent_get_underlying(bev) == nil {
            let fd = bufferevent_getfd(bev)
            if fd >= 0 { _ = evbuffer_write(staging, fd) }
        }
        if evbuffer_get_length(staging) > 0 { evbuffer_add_buffer(queued, staging) }
    }
}
