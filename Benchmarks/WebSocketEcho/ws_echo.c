/*
 * WebSocket echo origin and load generator for Benchmarks/ws_bench.py, in C so that the
 * proxies, not the load generator, set the figure (a Python client costs more CPU per
 * message than the proxy it measures).
 *
 *   ws_echo serve PORT LIFETIME_S
 *       An epoll echo origin on 127.0.0.1:PORT: answers the upgrade (Sec-WebSocket-Accept
 *       from libcrypto's SHA-1 and base64), echoes every data frame unmasked with the same
 *       first byte (FIN, opcode), answers ping with pong and close with close. Exits after
 *       LIFETIME_S seconds whatever happens, so that a forgotten origin cannot outlive a run.
 *
 *   ws_echo load PROXY_PORT ORIGIN_PORT CONNECTIONS WINDOW SECONDS
 *       Opens CONNECTIONS connections to the proxy on 127.0.0.1, each with an HTTP CONNECT to
 *       127.0.0.1:ORIGIN_PORT (as browsers reach ws:// through a proxy), then the upgrade;
 *       keeps WINDOW masked 1 KiB JSON text messages in flight per connection for SECONDS,
 *       then stops sending, waits for every echo, closes each connection with a close
 *       frame (1000) and prints one JSON line: echoed in the window, echoed in all, the
 *       window's length and the generator's CPU seconds. Every echo must be byte-identical to
 *       the message sent (each carries its connection and sequence number); anything else
 *       (a mismatch, a lost echo, an unexpected frame, a failed handshake) prints an error
 *       and exits 1.
 *
 * Loopback only; every wait is bounded (handshakes 10 s, draining 15 s, the whole run
 * SECONDS + 60 s by alarm()).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MESSAGE_BYTES 1024
#define HANDSHAKE_TIMEOUT_S 10
#define DRAIN_TIMEOUT_S 15
#define READ_CHUNK 65536
static const char *const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("ws_echo: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* A byte buffer: bytes [off, len) are pending; the buffer owns p. */
typedef struct {
    unsigned char *p;
    size_t off, len, cap;
} Buf;

static void buf_reserve(Buf *b, size_t extra) {
    if (b->off > 0 && b->off == b->len) b->off = b->len = 0;
    if (b->len + extra <= b->cap) return;
    if (b->off > 0) { /* compact before growing */
        memmove(b->p, b->p + b->off, b->len - b->off);
        b->len -= b->off;
        b->off = 0;
        if (b->len + extra <= b->cap) return;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    unsigned char *p = realloc(b->p, cap);
    if (!p) die("out of memory");
    b->p = p;
    b->cap = cap;
}

static void buf_append(Buf *b, const void *data, size_t n) {
    buf_reserve(b, n);
    memcpy(b->p + b->len, data, n);
    b->len += n;
}

static size_t buf_pending(const Buf *b) { return b->len - b->off; }

/* Reads what the socket has; returns 0 on EOF, 1 otherwise (EAGAIN included). */
static int read_available(int fd, Buf *b) {
    for (;;) {
        buf_reserve(b, READ_CHUNK);
        ssize_t n = read(fd, b->p + b->len, b->cap - b->len);
        if (n > 0) { b->len += (size_t)n; continue; }
        if (n == 0) return 0;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
        return 0;
    }
}

/* Writes what it can; returns -1 on error, else the bytes still pending. */
static ssize_t flush(int fd, Buf *b) {
    while (buf_pending(b) > 0) {
        ssize_t n = write(fd, b->p + b->off, buf_pending(b));
        if (n > 0) { b->off += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        return -1;
    }
    if (b->off == b->len) b->off = b->len = 0;
    return (ssize_t)buf_pending(b);
}

static void set_nonblocking(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void accept_value(const char *key, size_t key_len, char out[64]) {
    unsigned char digest[SHA_DIGEST_LENGTH];
    char joined[128];
    if (key_len > 60) key_len = 60;
    memcpy(joined, key, key_len);
    memcpy(joined + key_len, WS_GUID, 36);
    SHA1((const unsigned char *)joined, key_len + 36, digest);
    EVP_EncodeBlock((unsigned char *)out, digest, SHA_DIGEST_LENGTH);
}

/* The value of header `name` in the head [head, head+len) (case-insensitive name). */
static const char *header_value(const char *head, size_t len, const char *name, size_t *value_len) {
    size_t name_len = strlen(name);
    const char *end = head + len;
    for (const char *line = memchr(head, '\n', len); line && line + 1 < end; line = memchr(line + 1, '\n', end - line - 1)) {
        const char *p = line + 1;
        if ((size_t)(end - p) > name_len + 1 && strncasecmp(p, name, name_len) == 0 && p[name_len] == ':') {
            p += name_len + 1;
            while (p < end && (*p == ' ' || *p == '\t')) p++;
            const char *q = p;
            while (q < end && *q != '\r' && *q != '\n') q++;
            while (q > p && (q[-1] == ' ' || q[-1] == '\t')) q--;
            *value_len = (size_t)(q - p);
            return p;
        }
    }
    return NULL;
}

/* A frame's header in [p, p+avail): returns the header length, 0 when incomplete. */
static size_t frame_header(const unsigned char *p, size_t avail, uint64_t *payload_len, int *masked) {
    if (avail < 2) return 0;
    size_t h = 2;
    uint64_t n = p[1] & 0x7f;
    *masked = (p[1] & 0x80) != 0;
    if (n == 126) {
        if (avail < 4) return 0;
        n = ((uint64_t)p[2] << 8) | p[3];
        h = 4;
    } else if (n == 127) {
        if (avail < 10) return 0;
        n = 0;
        for (int i = 0; i < 8; i++) n = (n << 8) | p[2 + i];
        h = 10;
    }
    if (*masked) h += 4;
    if (avail < h) return 0;
    *payload_len = n;
    return h;
}

static void frame_append_header(Buf *b, unsigned char first, uint64_t n, const unsigned char *mask) {
    unsigned char h[14];
    size_t len = 0;
    h[len++] = first;
    unsigned char m = mask ? 0x80 : 0;
    if (n < 126) {
        h[len++] = m | (unsigned char)n;
    } else if (n <= 0xffff) {
        h[len++] = m | 126;
        h[len++] = (unsigned char)(n >> 8);
        h[len++] = (unsigned char)n;
    } else {
        h[len++] = m | 127;
        for (int i = 7; i >= 0; i--) h[len++] = (unsigned char)(n >> (8 * i));
    }
    if (mask) { memcpy(h + len, mask, 4); len += 4; }
    buf_append(b, h, len);
}

/* XORs n bytes at p with the 4-byte mask (RFC 6455 §5.3), 8 bytes a step: the generator
 * masks and the origin unmasks every byte, and a byte loop would make them cost about what
 * the proxy does. */
static void apply_mask(unsigned char *p, uint64_t n, const unsigned char mask[4]) {
    uint64_t m8;
    unsigned char m[8] = {mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3]};
    memcpy(&m8, m, 8);
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        v ^= m8;
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++) p[i] ^= mask[i & 3];
}

/* ---------------------------------------------------------------- origin */

typedef struct {
    int fd;
    int upgraded, closing;
    uint32_t events;
    Buf in, out;
} OriginConn;

static void origin_close(int ep, OriginConn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in.p);
    free(c->out.p);
    free(c);
}

/* Consumes complete handshakes and frames from c->in, appending replies to c->out;
 * returns 0 when the connection must close now. */
static int origin_process(OriginConn *c) {
    if (!c->upgraded) {
        const char *head = (const char *)c->in.p + c->in.off;
        size_t avail = buf_pending(&c->in);
        const char *end = memmem(head, avail, "\r\n\r\n", 4);
        if (!end) return avail < 16384;
        size_t head_len = (size_t)(end - head) + 4, key_len = 0;
        const char *key = header_value(head, head_len, "Sec-WebSocket-Key", &key_len);
        if (!key) {
            const char *bad = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            buf_append(&c->out, bad, strlen(bad));
            c->closing = 1;
            return 1;
        }
        char accept[64], reply[256];
        accept_value(key, key_len, accept);
        int n = snprintf(reply, sizeof reply,
                         "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
        buf_append(&c->out, reply, (size_t)n);
        c->in.off += head_len;
        c->upgraded = 1;
    }
    while (!c->closing) {
        unsigned char *p = c->in.p + c->in.off;
        uint64_t n;
        int masked;
        size_t h = frame_header(p, buf_pending(&c->in), &n, &masked);
        if (h == 0 || buf_pending(&c->in) - h < n) break;
        unsigned char *payload = p + h;
        if (masked) {
            apply_mask(payload, n, p + h - 4);
        }
        unsigned char opcode = p[0] & 0x0f;
        unsigned char first = p[0];
        if (opcode == 0x9) first = (unsigned char)((p[0] & 0xf0) | 0xA); /* ping: pong */
        if (opcode != 0xA) { /* pongs are not answered */
            frame_append_header(&c->out, first, n, NULL);
            buf_append(&c->out, payload, (size_t)n);
        }
        if (opcode == 0x8) c->closing = 1;
        c->in.off += h + (size_t)n;
    }
    return 1;
}

static void origin_set_events(int ep, OriginConn *c, uint32_t events) {
    if (c->events == events) return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
}

__attribute__((noreturn)) static void serve(int port, int lifetime) {
    alarm((unsigned)lifetime);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 1024) < 0) die("listen on %d: %s", port, strerror(errno));
    set_nonblocking(lfd);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event events[256];
    for (;;) {
        int k = epoll_wait(ep, events, 256, -1);
        if (k < 0 && errno == EINTR) continue;
        for (int i = 0; i < k; i++) {
            OriginConn *c = events[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept(lfd, NULL, NULL)) >= 0) {
                    set_nonblocking(fd);
                    OriginConn *n = calloc(1, sizeof *n);
                    if (!n) die("out of memory");
                    n->fd = fd;
                    n->events = EPOLLIN;
                    struct epoll_event e = {.events = EPOLLIN, .data.ptr = n};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
                }
                continue;
            }
            int open = 1;
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                open = read_available(c->fd, &c->in);
                if (!origin_process(c)) open = 0;
            }
            ssize_t left = flush(c->fd, &c->out);
            if (left < 0 || (!open && left > 0) || (c->closing && left == 0) || !open) {
                origin_close(ep, c);
                continue;
            }
            origin_set_events(ep, c, left > 0 ? EPOLLIN | EPOLLOUT : EPOLLIN);
        }
    }
}

/* ---------------------------------------------------------------- load generator */

typedef struct {
    int fd, index;
    uint32_t events;
    uint64_t sent, echoed;
    int close_sent, close_received;
    Buf in, out;
} ClientConn;

static uint32_t rng_state = 2463534242u;
static uint32_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* The message template: 1024 bytes of JSON; TAG_AT holds "cccccc-ssssssssssss", the
 * connection and the sequence number, so that an echo delivered to the wrong connection or
 * out of order is a mismatch too. */
static char message_template[MESSAGE_BYTES + 1];
static size_t tag_at;
#define TAG_LEN 19

static void build_template(void) {
    char doc[4096];
    int n = snprintf(doc, sizeof doc, "{\"tag\":\"%0*d\",\"items\":[", TAG_LEN, 0);
    for (int i = 0; i < 14; i++)
        n += snprintf(doc + n, sizeof doc - n, "%s{\"name\":\"item-%d\",\"price\":%g,\"tags\":[\"a\",\"b\"]}",
                      i ? "," : "", i, i * 1.5);
    n += snprintf(doc + n, sizeof doc - n, "],\"pad\":\"");
    int pad = MESSAGE_BYTES - n - 2;
    if (pad < 0) die("template too long");
    memset(doc + n, 'x', (size_t)pad);
    n += pad;
    n += snprintf(doc + n, sizeof doc - n, "\"}");
    if (n != MESSAGE_BYTES) die("template is %d bytes", n);
    memcpy(message_template, doc, MESSAGE_BYTES);
    tag_at = strlen("{\"tag\":\"");
}

static void message_for(char *out, int conn, uint64_t seq) {
    memcpy(out, message_template, MESSAGE_BYTES);
    char tag[TAG_LEN + 2];
    snprintf(tag, sizeof tag, "%06u-%012llu", (unsigned)conn % 1000000u, (unsigned long long)(seq % 1000000000000ull));
    memcpy(out + tag_at, tag, TAG_LEN);
}

static void send_message(ClientConn *c) {
    char msg[MESSAGE_BYTES];
    message_for(msg, c->index, c->sent);
    uint32_t m = rng();
    unsigned char mask[4];
    memcpy(mask, &m, 4);
    frame_append_header(&c->out, 0x81, MESSAGE_BYTES, mask);
    buf_reserve(&c->out, MESSAGE_BYTES);
    unsigned char *dst = c->out.p + c->out.len;
    memcpy(dst, msg, MESSAGE_BYTES);
    apply_mask(dst, MESSAGE_BYTES, mask);
    c->out.len += MESSAGE_BYTES;
    c->sent++;
}

static void send_close(ClientConn *c) {
    unsigned char payload[2] = {0x03, 0xe8}, mask[4];
    uint32_t m = rng();
    memcpy(mask, &m, 4);
    frame_append_header(&c->out, 0x88, 2, mask);
    for (int i = 0; i < 2; i++) payload[i] ^= mask[i];
    buf_append(&c->out, payload, 2);
    c->close_sent = 1;
}

/* Blocking read until the end of an HTTP head; returns its length, leaves extra bytes in b. */
static size_t read_head(int fd, Buf *b, const char *what, int conn) {
    for (;;) {
        const char *head = (const char *)b->p + b->off;
        const char *end = buf_pending(b) ? memmem(head, buf_pending(b), "\r\n\r\n", 4) : NULL;
        if (end) return (size_t)(end - head) + 4;
        if (buf_pending(b) > 16384) die("connection %d: %s: head too long", conn, what);
        buf_reserve(b, 4096);
        ssize_t n = read(fd, b->p + b->len, b->cap - b->len);
        if (n <= 0) die("connection %d: %s: %s", conn, what, n == 0 ? "closed" : strerror(errno));
        b->len += (size_t)n;
    }
}

static void write_all(int fd, const char *s, size_t n, int conn) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("connection %d: write: %s", conn, strerror(errno));
        s += w;
        n -= (size_t)w;
    }
}

static void client_handshake(ClientConn *c, int proxy_port, int origin_port) {
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = HANDSHAKE_TIMEOUT_S};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)proxy_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0) die("connection %d: connect to proxy: %s", c->index, strerror(errno));
    char req[512];
    int n = snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", origin_port, origin_port);
    write_all(c->fd, req, (size_t)n, c->index);
    size_t h = read_head(c->fd, &c->in, "CONNECT", c->index);
    if (h < 12 || memcmp(c->in.p + c->in.off + 9, "200", 3) != 0)
        die("connection %d: CONNECT answered: %.*s", c->index, (int)(h > 40 ? 40 : h), c->in.p + c->in.off);
    c->in.off += h;

    unsigned char raw[16];
    for (int i = 0; i < 16; i += 4) { uint32_t r = rng(); memcpy(raw + i, &r, 4); }
    char key[32], expected[64];
    EVP_EncodeBlock((unsigned char *)key, raw, 16);
    accept_value(key, strlen(key), expected);
    n = snprintf(req, sizeof req,
                 "GET /echo HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", origin_port, key);
    write_all(c->fd, req, (size_t)n, c->index);
    h = read_head(c->fd, &c->in, "upgrade", c->index);
    const char *head = (const char *)c->in.p + c->in.off;
    size_t accept_len = 0;
    const char *accept = header_value(head, h, "Sec-WebSocket-Accept", &accept_len);
    if (h < 12 || memcmp(head + 9, "101", 3) != 0 || !accept || accept_len != strlen(expected) || memcmp(accept, expected, accept_len) != 0)
        die("connection %d: upgrade answered: %.*s", c->index, (int)(h > 200 ? 200 : h), head);
    c->in.off += h;
    set_nonblocking(c->fd);
}

/* Consumes complete frames: checks every echo; returns the echoes counted. */
static uint64_t client_process(ClientConn *c) {
    uint64_t counted = 0;
    char expected[MESSAGE_BYTES];
    for (;;) {
        unsigned char *p = c->in.p + c->in.off;
        uint64_t n;
        int masked;
        size_t h = frame_header(p, buf_pending(&c->in), &n, &masked);
        if (h == 0 || buf_pending(&c->in) - h < n) break;
        if (masked) die("connection %d: a masked frame from the server", c->index);
        unsigned char opcode = p[0] & 0x0f;
        if (opcode == 0x8) {
            if (!c->close_sent) die("connection %d: closed by the server (%llu echoed)", c->index, (unsigned long long)c->echoed);
            c->close_received = 1;
        } else if (p[0] != 0x81 || n != MESSAGE_BYTES) {
            die("connection %d: echo %llu: frame 0x%02x of %llu bytes, expected a final text frame of %d",
                c->index, (unsigned long long)c->echoed, p[0], (unsigned long long)n, MESSAGE_BYTES);
        } else {
            if (c->echoed >= c->sent) die("connection %d: an echo of a message never sent", c->index);
            message_for(expected, c->index, c->echoed);
            if (memcmp(p + h, expected, MESSAGE_BYTES) != 0) {
                size_t at = 0;
                while (at < MESSAGE_BYTES && p[h + at] == (unsigned char)expected[at]) at++;
                die("connection %d: echo %llu differs from the message sent at byte %zu", c->index,
                    (unsigned long long)c->echoed, at);
            }
            c->echoed++;
            counted++;
        }
        c->in.off += h + (size_t)n;
    }
    return counted;
}

static int load(int proxy_port, int origin_port, int connections, int window, double seconds) {
    alarm((unsigned)(seconds + 60));
    signal(SIGPIPE, SIG_IGN);
    rng_state ^= (uint32_t)getpid();
    build_template();
    ClientConn *conns = calloc((size_t)connections, sizeof *conns);
    if (!conns) die("out of memory");
    int ep = epoll_create1(0);
    for (int i = 0; i < connections; i++) {
        conns[i].index = i;
        client_handshake(&conns[i], proxy_port, origin_port);
        conns[i].events = EPOLLIN;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &conns[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
    }
    double start = now(), end = start + seconds, cpu_start = cpu_seconds();
    for (int i = 0; i < connections; i++)
        for (int w = 0; w < window; w++) send_message(&conns[i]);
    uint64_t echoed = 0, echoed_in_window = 0;
    int sending = 1, closing = 0;
    double window_end = end, cpu_window = 0, deadline = end + DRAIN_TIMEOUT_S;
    struct epoll_event events[256];
    for (;;) {
        for (int i = 0; i < connections; i++) {
            ClientConn *c = &conns[i];
            if (c->fd < 0) continue;
            ssize_t left = flush(c->fd, &c->out);
            if (left < 0) die("connection %d: write: %s", i, strerror(errno));
            uint32_t want = left > 0 ? EPOLLIN | EPOLLOUT : EPOLLIN;
            if (want != c->events) {
                struct epoll_event ev = {.events = want, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                c->events = want;
            }
        }
        int k = epoll_wait(ep, events, 256, 50);
        if (k < 0 && errno != EINTR) die("epoll_wait: %s", strerror(errno));
        for (int j = 0; j < k; j++) {
            ClientConn *c = events[j].data.ptr;
            if (!(events[j].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) continue;
            int open = read_available(c->fd, &c->in);
            uint64_t got = client_process(c);
            echoed += got;
            if (sending)
                for (uint64_t g = 0; g < got; g++) send_message(c);
            if (!open) {
                if (!c->close_received) die("connection %d: closed by the proxy (%llu of %llu echoed)", c->index,
                                            (unsigned long long)c->echoed, (unsigned long long)c->sent);
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
            }
        }
        double t = now();
        if (sending && t >= end) {
            sending = 0;
            window_end = t;
            echoed_in_window = echoed;
            cpu_window = cpu_seconds() - cpu_start;
        }
        if (!sending && !closing) {
            int drained = 1;
            for (int i = 0; i < connections; i++) drained &= conns[i].echoed == conns[i].sent;
            if (drained) {
                closing = 1;
                for (int i = 0; i < connections; i++) send_close(&conns[i]);
            }
        }
        if (closing) {
            int done = 1;
            for (int i = 0; i < connections; i++) done &= conns[i].close_received || conns[i].fd < 0;
            if (done) break;
        }
        if (t > deadline) {
            uint64_t sent = 0;
            for (int i = 0; i < connections; i++) sent += conns[i].sent;
            die("%s after %d s: %llu of %llu messages echoed", closing ? "close not answered" : "echoes missing",
                DRAIN_TIMEOUT_S, (unsigned long long)echoed, (unsigned long long)sent);
        }
    }
    for (int i = 0; i < connections; i++) {
        if (conns[i].fd >= 0) close(conns[i].fd);
        free(conns[i].in.p);
        free(conns[i].out.p);
    }
    free(conns);
    printf("{\"connections\":%d,\"window\":%d,\"seconds\":%.3f,\"echoed\":%llu,\"echoedTotal\":%llu,\"cpuSeconds\":%.3f}\n",
           connections, window, window_end - start, (unsigned long long)echoed_in_window, (unsigned long long)echoed,
           cpu_window);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "serve") == 0) serve(atoi(argv[2]), atoi(argv[3]));
    if (argc == 7 && strcmp(argv[1], "load") == 0) {
        int conns = atoi(argv[4]), window = atoi(argv[5]);
        double seconds = atof(argv[6]);
        if (conns < 1 || window < 1 || seconds <= 0) die("CONNECTIONS, WINDOW and SECONDS must be positive");
        return load(atoi(argv[2]), atoi(argv[3]), conns, window, seconds);
    }
    fprintf(stderr, "usage: ws_echo serve PORT LIFETIME_S\n"
                    "       ws_echo load PROXY_PORT ORIGIN_PORT CONNECTIONS WINDOW SECONDS\n");
    return 2;
}
