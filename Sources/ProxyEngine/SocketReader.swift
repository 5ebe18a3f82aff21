import CLibevent
import Foundation

/// Reads a plain socket into its bufferevent's input from an `EV_READ` event of its own,
/// and reports what it read through the bufferevent's own callbacks, so their owners
/// see the same calls as before: data through the read callback; EOF, errors and the
/// read timeout through the event callback with `BEV_EVENT_READING | …`, after which
/// reading is off, as the bufferevent leaves it.
///
/// Why: libevent 2.1's socket bufferevent issues `ioctl(FIONREAD)` before every read and
/// reads at most 4096 bytes per readiness (`EVBUFFER_MAX_READ`, no setter): with two
/// reads per proxied request, that ioctl is a large share of the read-side syscalls.
/// Here one `read(2)` into the loop's scratch buffer takes a small message, copied into
/// the input (a few hundred bytes; reserving 16 KiB in the input would make every
/// message a large allocation, off malloc's fast path); a full
/// scratch buffer is followed by reads straight into the input up to `maxPerEvent`,
/// after which the loop serves others (epoll is level-triggered: the event fires again).
///
/// The bufferevent's read watermarks, rate limits and read suspension are not honoured:
/// Tapwire uses none of them on plain sockets.
///
/// A TLS filter keeps the bufferevent's reading (its socket carries ciphertext): for it
/// every call here goes to the bufferevent, so owners need not know which kind they have.
///
/// The owner must call `detach` before it frees the bufferevent or hands it to another
/// owner (a tunnel, a TLS filter): the event is freed and `bev` is never touched again.
final class SocketReader {
    /// The first read of each readiness, into `EventLoop.readScratch`: one syscall for any
    /// head or small body.
    static let firstReadBytes = 16 * 1024
    static let laterReadBytes = 256 * 1024
    /// Bytes taken from one socket per readiness before the loop moves on.
    static let maxPerEvent = 1 << 20

    private let bev: OpaquePointer
    /// Kept for its scratch buffer.
    private let loop: EventLoop
    /// nil: the bufferevent reads (a TLS filter, or `event_new` failed).
    private var event: OpaquePointer?
    private let fd: Int32
    private var timeout: timeval?
    /// libevent keeps the last timeout given to `event_add` and re-arms it whenever a
    /// persistent event fires, even after `event_add(ev, NULL)`; only `event_remove_timer`
    /// on a pending timer forgets it. True while it may hold one.
    private var libeventHasTimeout = false
    private var enabled = false
    private var detached = false
    /// A read error that came after data in the same readiness: reported next time, as
    /// the bufferevent would have (its next read is where it would have met the error).
    private var deferredErrno: Int32 = 0

    /// Takes over reading `bev` when it is a plain socket; reading starts as `enabled`.
    /// `pendingErrno`: an error the previous owner's reader met after data and had not
    /// reported yet (`detach`'s result); this reader reports it first.
    init(loop: EventLoop, bev: OpaquePointer, enabled: Bool, pendingErrno: Int32 = 0) {
        self.bev = bev
        self.loop = loop
        deferredErrno = pendingErrno
        fd = bufferevent_getfd(bev)
        if bufferevent_get_underlying(bev) == nil && fd >= 0 {
            let ctx = Unmanaged.passUnretained(self).toOpaque()
            event = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { _, what, ctx in
                guard let ctx else { return }
                // The owner may drop this reader from inside the callbacks it makes.
                let reader = Unmanaged<SocketReader>.fromOpaque(ctx).takeUnretainedValue()
                withExtendedLifetime(reader) { reader.ready(what) }
            }, ctx)
        }
        if event != nil { bufferevent_disable(bev, Int16(EV_READ)) }
        setEnabled(enabled)
        // The socket that failed is readable (EOF) anyway; this does not rely on it.
        if let event, enabled, deferredErrno != 0 { event_active(event, EV_READ, 0) }
    }

    deinit { if let event { event_free(event) } }

    func setEnabled(_ on: Bool) {
        guard !detached else { return }
        guard let event else {
            if on { bufferevent_enable(bev, Int16(EV_READ)) } else { bufferevent_disable(bev, Int16(EV_READ)) }
            return
        }
        guard on != enabled else { return }
        enabled = on
        if on { add(event) } else { event_del(event) }
    }

    /// Fails reading with `BEV_EVENT_TIMEOUT` after `seconds` without a byte (nil: never).
    /// Like the bufferevent's, it only ticks while reading is enabled.
    func setTimeout(_ seconds: Double?) {
        guard !detached else { return }
        guard let event else { setBuffereventReadTimeout(bev, seconds); return }
        if let s = seconds {
            timeout = timeval(tv_sec: Int(s), tv_usec: Int((s - Double(Int(s))) * 1e6))
            if enabled { add(event) }
        } else {
            timeout = nil
            if enabled && libeventHasTimeout {
                event_remove_timer(event)
                libeventHasTimeout = false
            }
        }
    }

    private func add(_ event: OpaquePointer) {
        if var tv = timeout {
            event_add(event, &tv)
            libeventHasTimeout = true
        } else if libeventHasTimeout {
            // Arm and remove a timer: the way to make libevent forget the old one.
            var tv = timeval(tv_sec: 3600, tv_usec: 0)
            event_add(event, &tv)
            event_remove_timer(event)
            libeventHasTimeout = false
        } else {
            event_add(event, nil)
        }
    }

    /// Stops reading for good and hands reading back to the bufferevent, on if
    /// `buffereventReads` (a TLS filter reads through it), off otherwise. Returns a read
    /// error met after data and not reported yet (0: none), for the next owner's reader:
    /// the socket reported it once, and reading again would only find EOF.
    @discardableResult
    func detach(buffereventReads: Bool = false) -> Int32 {
        guard !detached else { return 0 }
        detached = true
        defer { deferredErrno = 0 }
        if let event {
            event_free(event)
            self.event = nil
            if buffereventReads { bufferevent_enable(bev, Int16(EV_READ)) }
        }
        return deferredErrno
    }

    private func ready(_ what: Int16) {
        if Int32(what) & EV_TIMEOUT != 0 {
            stop(with: BEV_EVENT_READING | BEV_EVENT_TIMEOUT, errno: 0)
            return
        }
        if deferredErrno != 0 {
            let code = deferredErrno
            deferredErrno = 0
            stop(with: BEV_EVENT_READING | BEV_EVENT_ERROR, errno: code)
            return
        }
        let input = bufferevent_get_input(bev)
        var total = 0
        var end: Int32?  // 0: EOF, else errno
        func failed(_ n: Int) {
            let e = errno
            if n == 0 { end = 0 } else if e != EAGAIN && e != EWOULDBLOCK && e != EINTR { end = e }
        }
        let first = read(fd, loop.readScratch, SocketReader.firstReadBytes)
        if first <= 0 { failed(first) } else {
            // A socket bufferevent keeps its input's end frozen outside its own reads.
            evbuffer_unfreeze(input, 0)
            if evbuffer_add(input, loop.readScratch, first) == 0 { total = first } else { end = ENOMEM }
            while total > 0 && total < SocketReader.maxPerEvent && first == SocketReader.firstReadBytes {
                var vec = iovec()
                guard evbuffer_reserve_space(input, SocketReader.laterReadBytes, &vec, 1) >= 1,
                      let base = vec.iov_base else { break }
                let n = read(fd, base, min(vec.iov_len, SocketReader.laterReadBytes))
                if n <= 0 { failed(n); break }
                vec.iov_len = n
                evbuffer_commit_space(input, &vec, 1)
                total += n
                if n < SocketReader.laterReadBytes { break }
            }
            evbuffer_freeze(input, 0)
        }
        if total > 0 {
            // An error after data is reported on the next readiness, where the bufferevent's
            // next read would have met it (a reset socket stays readable, at EOF); an EOF
            // is simply found again by the next read.
            if let end, end != 0 { deferredErrno = end }
            var readCallback: bufferevent_data_cb?
            var arg: UnsafeMutableRawPointer?
            bufferevent_getcb(bev, &readCallback, nil, nil, &arg)
            readCallback?(bev, arg)
            return
        }
        if let end { stop(with: end == 0 ? BEV_EVENT_READING | BEV_EVENT_EOF : BEV_EVENT_READING | BEV_EVENT_ERROR, errno: end) }
    }

    /// Reading ends (EOF, error, timeout): off, then the owner hears of it.
    private func stop(with what: Int32, errno code: Int32) {
        setEnabled(false)
        var eventCallback: bufferevent_event_cb?
        var arg: UnsafeMutableRawPointer?
        bufferevent_getcb(bev, nil, nil, &eventCallback, &arg)
        errno = code
        eventCallback?(bev, Int16(what), arg)
    }
}

/// A socket's bufferevent passing from one owner to the next (a session or an upstream
/// connection to a tunnel), with the read error its reader still owed (see `detach`).
struct HandedOverSocket {
    let bev: OpaquePointer
    let pendingErrno: Int32
    /// For an upstream socket, the parent proxy it goes through (`ParentProxy.via`).
    var via: String? = nil
}
