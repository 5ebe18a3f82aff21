import CLibevent
import Foundation

/// Bytes for one socket, gathered during a callback and then sent with one
/// writev straight to the socket when the bufferevent has nothing queued.
/// Handing them to the bufferevent instead makes libevent add a write event,
/// wait a loop turn and delete the event again: measured at 6 epoll_ctl calls
/// per proxied request, the largest cost after the copies the kernel must do.
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

/// libevent 2.1 reads at most 4096 bytes per readiness event (its EVBUFFER_MAX_READ,
/// with no setter), each after an ioctl(FIONREAD): a 64 KiB body took 16 loop turns
/// and 32 syscalls, a 256 MiB stream 131,072. Called at the start of a read callback,
/// this takes whatever else the socket already holds in large reads. EOF and errors
/// are left for libevent to find on its next read, which reports them as usual.
/// TLS filters are skipped: their socket carries ciphertext.
@discardableResult
func readAvailable(_ bev: OpaquePointer, limit: Int = 1 << 20) -> Int {
    guard bufferevent_get_underlying(bev) == nil else { return 0 }
    let fd = bufferevent_getfd(bev)
    guard fd >= 0 else { return 0 }
    let input = bufferevent_get_input(bev)
    // libevent's read took less than its cap: the socket had no more, and another
    // read would only return EAGAIN (a wasted syscall on every small message).
    guard evbuffer_get_length(input) >= 4096 else { return 0 }
    // A socket bufferevent keeps its input's end frozen outside its own reads.
    evbuffer_unfreeze(input, 0)
    defer { evbuffer_freeze(input, 0) }
    let chunk = 256 * 1024
    var total = 0
    while total < limit {
        var vec = iovec()
        guard evbuffer_reserve_space(input, chunk, &vec, 1) >= 1, let base = vec.iov_base else { break }
        let n = read(fd, base, min(vec.iov_len, chunk))
        if n <= 0 { break }
        vec.iov_len = n
        evbuffer_commit_space(input, &vec, 1)
        total += n
        if n < chunk { break }
    }
    return total
}

