#ifndef TAPWIRE_CLIBEVENT_SHIM_H
#define TAPWIRE_CLIBEVENT_SHIM_H
// These three first: without them the event2 headers' fd_set clashes with
// CDispatch's when Foundation is imported in the same file.
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
// The loops' wake-up (EventLoop.execute): an eventfd, not libevent's cross-thread event_active.
#include <sys/eventfd.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <event2/bufferevent_ssl.h>

// The loops run libevent without its locks (see EventLoop): its process-wide random
// generator (evdns transaction ids) is then shared by the loop threads unguarded,
// which is safe only when libevent draws from the C library's arc4random.
#ifndef EVENT__HAVE_ARC4RANDOM
#error "libevent built without arc4random: its RNG needs evthread locks, which Tapwire does not enable"
#endif

// libevent macros Swift cannot call.
static inline struct event *tw_evtimer_new(struct event_base *b, event_callback_fn cb, void *arg) {
    return event_new(b, -1, 0, cb, arg);
}
static inline int tw_evtimer_add(struct event *ev, double seconds) {
    struct timeval tv;
    tv.tv_sec = (time_t)seconds;
    tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
    return event_add(ev, &tv);
}
static inline int tw_evtimer_pending(struct event *ev) {
    return event_pending(ev, EV_TIMEOUT, NULL);
}
#endif
