#!/usr/bin/env python3
"""Writes the differential corpus that Tests/HTTP1Tests/DifferentialH11Tests.swift replays.

Each case is the raw bytes of requests or responses (possibly pipelined), stored as a
latin-1 string in "input", plus h11's verdict: every complete message h11 parsed from the start of
the file (head, body bytes, bytes consumed), then how the stream ended: "clean"
(nothing left), "tunnel" (a 2xx answer to CONNECT: the rest is not HTTP), "reject" (h11 raised a protocol error) or "incomplete" (the data
ran out, end of stream included, before a message was complete).

All cases live in one file, verdicts.json: SwiftPM warns about every file in a test
target it does not know, and one line of warning is better than several hundred.

Deterministic: a fixed seed, so re-running gives the same files. Needs h11:
  make fuzz-deps; Fuzz/.venv/bin/python Fuzz/h11/generate_corpus.py
"""
import json
import os
import random
import shutil
import sys

import h11

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "Tests", "HTTP1Tests", "Resources", "h11-corpus")
SEED = 20261202
# Tapwire's test parses with the same head limit as h11's default max_incomplete_event_size.
MAX_HEAD = 16 * 1024
FEED = 512          # h11 is fed in pieces, so its head limit applies as it would on a socket
MAX_MESSAGES = 4


def text(b):
    """Bytes as a JSON string of code points 0-255 (latin-1), so any byte survives."""
    return b.decode("latin-1")


# ---------------------------------------------------------------- h11 side

def h11_message(kind, data, method):
    """Parses one message from the start of `data` with a fresh h11 connection.
    Returns (outcome, message or None, detail)."""
    conn = h11.Connection(h11.SERVER if kind == "request" else h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
    if kind == "response":
        conn.send(h11.Request(method=method, target="/", headers=[("Host", "example.com")]))
        conn.send(h11.EndOfMessage())
    fed = 0
    eof = False
    head = None
    body = bytearray()

    def consumed():
        return fed - len(conn.trailing_data[0])

    def message():
        m = {"headers": [[text(n), text(v)] for n, v in head.headers.raw_items()],
             "body": text(bytes(body)), "consumed": consumed(),
             "version": text(head.http_version)}
        if kind == "request":
            m["method"] = text(head.method)
            m["target"] = text(head.target)
        else:
            m["status"] = head.status_code
            m["reason"] = text(head.reason)
        return m

    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                if fed < len(data):
                    piece = data[fed:fed + FEED]
                    conn.receive_data(piece)
                    fed += len(piece)
                elif not eof:
                    conn.receive_data(b"")
                    eof = True
                else:
                    return "incomplete", None, "need data after end of stream"
            elif event is h11.PAUSED:
                # A 2xx answer to CONNECT: the head is the whole message.
                if head is not None and not isinstance(head, h11.Request):
                    return "accept", message(), ""
                return "incomplete", None, "paused"
            elif isinstance(event, h11.InformationalResponse):
                head = event
                return "accept", message(), ""
            elif isinstance(event, (h11.Request, h11.Response)):
                head = event
                if kind == "response" and method == "CONNECT" and 200 <= event.status_code < 300:
                    return "accept", message(), ""
            elif isinstance(event, h11.Data):
                body.extend(event.data)
            elif isinstance(event, h11.EndOfMessage):
                return "accept", message(), ""
            elif isinstance(event, h11.ConnectionClosed):
                return "incomplete", None, "closed"
    except h11.ProtocolError as error:
        # An error only raised once the end of stream was fed means the data ran out.
        return ("incomplete" if eof else "reject"), None, str(error)


def h11_verdict(kind, data, method):
    messages = []
    rest = data
    while True:
        if not rest:
            return messages, "clean", ""
        if len(messages) == MAX_MESSAGES:
            return messages, "clean", "stopped after %d messages" % MAX_MESSAGES
        outcome, msg, detail = h11_message(kind, rest, method)
        if outcome != "accept":
            return messages, outcome, detail
        if msg["consumed"] <= 0:
            return messages, "reject", "no progress"
        messages.append(msg)
        rest = rest[msg["consumed"]:]
        if kind == "response" and method == "CONNECT" and 200 <= msg["status"] < 300:
            return messages, "tunnel", ""   # what follows is tunnelled bytes, not HTTP


# ---------------------------------------------------------------- inputs

CRLF = b"\r\n"


def wire(start, headers, body=b"", eol=CRLF):
    out = start + eol
    for h in headers:
        out += (h if isinstance(h, bytes) else h[0] + b": " + h[1]) + eol
    return out + eol + body


def chunked(pieces, trailers=(), ext=b""):
    out = b""
    for p in pieces:
        out += b"%x" % len(p) + ext + CRLF + p + CRLF
    out += b"0" + CRLF
    for n, v in trailers:
        out += n + b": " + v + CRLF
    return out + CRLF


HOST = (b"Host", b"example.com")

REQUESTS = {
    "get": wire(b"GET / HTTP/1.1", [HOST]),
    "get-query": wire(b"GET /search?q=a%20b&x=1 HTTP/1.1", [HOST, (b"Accept", b"*/*"), (b"User-Agent", b"curl/8.0")]),
    "get-absolute": wire(b"GET http://example.com:8080/a/b?c HTTP/1.1", [(b"Host", b"example.com:8080")]),
    "get-http10": wire(b"GET /old HTTP/1.0", [(b"Accept", b"text/html")]),
    "options-star": wire(b"OPTIONS * HTTP/1.1", [HOST]),
    "connect": wire(b"CONNECT example.com:443 HTTP/1.1", [(b"Host", b"example.com:443")]),
    "head": wire(b"HEAD /x HTTP/1.1", [HOST, (b"X-Empty", b"")]),
    "post-cl": wire(b"POST /form HTTP/1.1", [HOST, (b"Content-Type", b"application/x-www-form-urlencoded"),
                                              (b"Content-Length", b"7")], b"a=1&b=2"),
    "post-cl0": wire(b"POST /e HTTP/1.1", [HOST, (b"Content-Length", b"0")]),
    "put-cl-binary": wire(b"PUT /bin HTTP/1.1", [HOST, (b"Content-Length", b"6")], b"\x00\xff\r\n\x80\x7f"),
    "post-chunked": wire(b"POST /up HTTP/1.1", [HOST, (b"Transfer-Encoding", b"chunked")], chunked([b"Wiki", b"pedia", b" in\r\n\r\nchunks."])),
    "post-chunked-ext": wire(b"POST /up HTTP/1.1", [HOST, (b"Transfer-Encoding", b"chunked")], chunked([b"hello", b"world!"], ext=b";name=value")),
    "post-chunked-trailers": wire(b"POST /up HTTP/1.1", [HOST, (b"Transfer-Encoding", b"chunked"), (b"Trailer", b"X-Sum")],
                                  chunked([b"abc"], trailers=[(b"X-Sum", b"42"), (b"X-Other", b"v")])),
    "post-chunked-upper": wire(b"POST /up HTTP/1.1", [HOST, (b"Transfer-Encoding", b"Chunked")], chunked([b"x" * 26])),
    "patch-json": wire(b"PATCH /api/1 HTTP/1.1", [HOST, (b"Content-Type", b"application/json"), (b"Content-Length", b"13")], b'{"a":[1,2,3]}'),
    "delete-obs-text": wire(b"DELETE /r HTTP/1.1", [HOST, (b"X-Name", b"caf\xc3\xa9 \xff\xfe")]),
    "many-headers": wire(b"GET /m HTTP/1.1", [HOST] + [(b"X-H%d" % i, b"value %d" % i) for i in range(40)]),
    "odd-names": wire(b"GET / HTTP/1.1", [HOST, (b"x-lower", b"1"), (b"X-UPPER", b"2"), (b"!#$%&'*+-.^_`|~", b"3")]),
    "ows-values": wire(b"GET / HTTP/1.1", [HOST, b"X-A:   padded \t ", b"X-B:\tx\ty", b"X-C:"]),
    "method-token": wire(b"M-SEARCH * HTTP/1.1", [HOST, (b"Man", b'"ssdp:discover"')]),
}

RESPONSES = {
    "200-cl": (wire(b"HTTP/1.1 200 OK", [(b"Content-Type", b"text/plain"), (b"Content-Length", b"12")], b"hello world!"), "GET"),
    "200-chunked": (wire(b"HTTP/1.1 200 OK", [(b"Transfer-Encoding", b"chunked")], chunked([b"one", b"two", b"three"])), "GET"),
    "200-chunked-trailer": (wire(b"HTTP/1.1 200 OK", [(b"Transfer-Encoding", b"chunked")], chunked([b"x"], trailers=[(b"Etag", b'"1"')])), "GET"),
    "200-close": (wire(b"HTTP/1.1 200 OK", [(b"Connection", b"close")], b"body until close"), "GET"),
    "200-http10": (wire(b"HTTP/1.0 200 OK", [(b"Server", b"old")], b"legacy body"), "GET"),
    "204": (wire(b"HTTP/1.1 204 No Content", [(b"Date", b"Wed, 02 Dec 2026 11:00:00 GMT")]), "DELETE"),
    "304": (wire(b"HTTP/1.1 304 Not Modified", [(b"ETag", b'"abc"'), (b"Content-Length", b"100")]), "GET"),
    "head-cl": (wire(b"HTTP/1.1 200 OK", [(b"Content-Length", b"1000")]), "HEAD"),
    "404": (wire(b"HTTP/1.1 404 Not Found", [(b"Content-Length", b"9")], b"not found"), "GET"),
    "500-empty-reason": (wire(b"HTTP/1.1 500 ", [(b"Content-Length", b"0")]), "POST"),
    "200-no-reason": (wire(b"HTTP/1.1 200", [(b"Content-Length", b"2")], b"ok"), "GET"),
    "100-then-200": (wire(b"HTTP/1.1 100 Continue", []) + wire(b"HTTP/1.1 200 OK", [(b"Content-Length", b"1")], b"!"), "POST"),
    "103-then-200": (wire(b"HTTP/1.1 103 Early Hints", [(b"Link", b"</s.css>; rel=preload")]) + wire(b"HTTP/1.1 200 OK", [(b"Content-Length", b"0")]), "GET"),
    "connect-200": (wire(b"HTTP/1.1 200 Connection Established", []) + b"\x16\x03\x01tls bytes", "CONNECT"),
    "reason-obs-text": (wire(b"HTTP/1.1 200 D\xe9j\xe0 vu\tok", [(b"Content-Length", b"0")]), "GET"),
    "cl-list-same": (wire(b"HTTP/1.1 200 OK", [(b"Content-Length", b"3, 3")], b"abc"), "GET"),
}


def header_variants(base_start, headers, body):
    """Named mutations of a message's framing and syntax."""
    h = list(headers)
    yield "cl-and-te", wire(base_start, h + [(b"Content-Length", b"5"), (b"Transfer-Encoding", b"chunked")], chunked([b"hello"]))
    yield "te-and-cl", wire(base_start, h + [(b"Transfer-Encoding", b"chunked"), (b"Content-Length", b"5")], chunked([b"hello"]))
    yield "dup-cl-same", wire(base_start, h + [(b"Content-Length", b"5"), (b"Content-Length", b"5")], b"hello")
    yield "dup-cl-differ", wire(base_start, h + [(b"Content-Length", b"5"), (b"Content-Length", b"6")], b"hello!")
    yield "cl-list-differ", wire(base_start, h + [(b"Content-Length", b"5, 6")], b"hello!")
    yield "cl-plus", wire(base_start, h + [(b"Content-Length", b"+5")], b"hello")
    yield "cl-negative", wire(base_start, h + [(b"Content-Length", b"-1")], b"")
    yield "cl-hex", wire(base_start, h + [(b"Content-Length", b"0x5")], b"hello")
    yield "cl-empty", wire(base_start, h + [(b"Content-Length", b"")], b"")
    yield "cl-space-inside", wire(base_start, h + [(b"Content-Length", b"1 2")], b"x" * 12)
    yield "cl-huge", wire(base_start, h + [(b"Content-Length", b"99999999999999999999999")], b"x")
    yield "cl-leading-zeros", wire(base_start, h + [(b"Content-Length", b"0005")], b"hello")
    yield "cl-short-body", wire(base_start, h + [(b"Content-Length", b"10")], b"hello")
    yield "cl-long-body", wire(base_start, h + [(b"Content-Length", b"3")], b"hello")
    yield "te-gzip-chunked", wire(base_start, h + [(b"Transfer-Encoding", b"gzip, chunked")], chunked([b"\x1f\x8b"]))
    yield "te-chunked-gzip", wire(base_start, h + [(b"Transfer-Encoding", b"chunked, gzip")], chunked([b"\x1f\x8b"]))
    yield "te-identity", wire(base_start, h + [(b"Transfer-Encoding", b"identity")], b"")
    yield "te-chunked-twice-list", wire(base_start, h + [(b"Transfer-Encoding", b"chunked, chunked")], chunked([b"a"]))
    yield "te-chunked-two-fields", wire(base_start, h + [(b"Transfer-Encoding", b"chunked"), (b"Transfer-Encoding", b"chunked")], chunked([b"a"]))
    yield "te-chunked-param", wire(base_start, h + [(b"Transfer-Encoding", b"chunked;q=1")], chunked([b"a"]))
    yield "te-empty", wire(base_start, h + [(b"Transfer-Encoding", b"")], b"")
    yield "te-xchunked", wire(base_start, h + [(b"Transfer-Encoding", b"xchunked")], chunked([b"a"]))
    yield "te-comma-chunked", wire(base_start, h + [(b"Transfer-Encoding", b", chunked")], chunked([b"a"]))
    te = h + [(b"Transfer-Encoding", b"chunked")]
    yield "chunk-size-0x", wire(base_start, te, b"0x5\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-negative", wire(base_start, te, b"-5\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-empty", wire(base_start, te, b"\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-space-before", wire(base_start, te, b" 5\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-space-after", wire(base_start, te, b"5 \r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-bws-ext", wire(base_start, te, b"5 ;a=b\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-17-digits", wire(base_start, te, b"00000000000000005\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-overflow", wire(base_start, te, b"FFFFFFFFFFFFFFFFF\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-16-digits", wire(base_start, te, b"0000000000000005\r\nhello\r\n0\r\n\r\n")
    yield "chunk-size-upper-hex", wire(base_start, te, b"A\r\n0123456789\r\n0\r\n\r\n")
    yield "chunk-size-bare-lf", wire(base_start, te, b"5\nhello\r\n0\r\n\r\n")
    yield "chunk-data-no-crlf", wire(base_start, te, b"5\r\nhelloX\r\n0\r\n\r\n")
    yield "chunk-data-bare-lf", wire(base_start, te, b"5\r\nhello\n0\r\n\r\n")
    yield "chunk-data-too-long", wire(base_start, te, b"3\r\nhello\r\n0\r\n\r\n")
    yield "chunk-ext-quoted", wire(base_start, te, b'5;a="b;c"\r\nhello\r\n0\r\n\r\n')
    yield "chunk-ext-nul", wire(base_start, te, b"5;a=\x00\r\nhello\r\n0\r\n\r\n")
    yield "chunk-ext-bare-cr", wire(base_start, te, b"5;a\rb\r\nhello\r\n0\r\n\r\n")
    yield "chunk-last-no-final-crlf", wire(base_start, te, b"5\r\nhello\r\n0\r\n")
    yield "chunk-trailer-obs-fold", wire(base_start, te, b"1\r\na\r\n0\r\nX: a\r\n b\r\n\r\n")
    yield "chunk-trailer-no-colon", wire(base_start, te, b"1\r\na\r\n0\r\nbroken\r\n\r\n")
    yield "chunk-trailer-bare-lf", wire(base_start, te, b"1\r\na\r\n0\r\nX: 1\n\r\n")
    yield "chunk-truncated", wire(base_start, te, b"5\r\nhel")
    yield "obs-fold", wire(base_start, h + [b"X-Folded: first", b"  second"], body)
    yield "obs-fold-tab", wire(base_start, h + [b"X-Folded: first", b"\tsecond"], body)
    yield "first-line-fold", wire(base_start, [b" X-Lead: 1"] + h, body)
    yield "space-before-colon", wire(base_start, h + [b"X-Space : v"], body)
    yield "tab-before-colon", wire(base_start, h + [b"X-Tab\t: v"], body)
    yield "no-colon", wire(base_start, h + [b"X-No-Colon"], body)
    yield "empty-name", wire(base_start, h + [b": v"], body)
    yield "name-non-token", wire(base_start, h + [b"X(Y): v"], body)
    yield "name-obs-text", wire(base_start, h + [b"X-\xe9: v"], body)
    yield "value-nul", wire(base_start, h + [b"X-Nul: a\x00b"], body)
    yield "value-del", wire(base_start, h + [b"X-Del: a\x7fb"], body)
    yield "value-bare-cr", wire(base_start, h + [b"X-Cr: a\rb"], body)
    yield "value-vtab", wire(base_start, h + [b"X-Vt: a\x0bb"], body)
    yield "value-formfeed", wire(base_start, h + [b"X-Ff: a\x0cb"], body)
    yield "value-esc", wire(base_start, h + [b"X-Esc: a\x1bb"], body)
    yield "bare-lf-everywhere", wire(base_start, h, body, eol=b"\n")
    yield "bare-lf-one-line", base_start + CRLF + b"".join(n + b": " + v + b"\n" for n, v in h[:1]) + b"".join(n + b": " + v + CRLF for n, v in h[1:]) + CRLF + body
    yield "bare-cr-line-end", wire(base_start, h, body, eol=b"\r")
    yield "cr-cr-lf", base_start + b"\r\r\n" + b"".join(n + b": " + v + CRLF for n, v in h) + CRLF + body
    yield "lf-only-terminator", base_start + CRLF + b"".join(n + b": " + v + CRLF for n, v in h) + b"\n" + body
    yield "leading-crlf", CRLF + wire(base_start, h, body)
    yield "leading-two-crlf", CRLF + CRLF + wire(base_start, h, body)
    yield "leading-lf", b"\n" + wire(base_start, h, body)
    yield "oversize-header", wire(base_start, h + [(b"X-Big", b"a" * 20000)], body)
    yield "large-header-ok", wire(base_start, h + [(b"X-Large", b"b" * 8000)], body)
    yield "nul-in-start-line", wire(base_start.replace(b" ", b"\x00", 1), h, body)
    yield "truncated-head", wire(base_start, h, body)[:len(base_start) + 5]


def request_line_variants():
    hh = [HOST]
    for name, line in [
        ("version-1.2", b"GET / HTTP/1.2"), ("version-2.0", b"GET / HTTP/2.0"), ("version-0.9", b"GET / HTTP/0.9"),
        ("version-1.10", b"GET / HTTP/1.10"), ("version-lower", b"GET / http/1.1"), ("version-short", b"GET / HTTP/1"),
        ("version-missing", b"GET /"), ("version-space", b"GET / HTTP/ 1.1"),
        ("double-space", b"GET  / HTTP/1.1"), ("trailing-space", b"GET / HTTP/1.1 "), ("tab-separator", b"GET\t/\tHTTP/1.1"),
        ("lower-method", b"get / HTTP/1.1"), ("method-bad-char", b"GE(T / HTTP/1.1"), ("method-empty", b" / HTTP/1.1"),
        ("target-space", b"GET /a b HTTP/1.1"), ("target-obs-text", b"GET /caf\xc3\xa9 HTTP/1.1"),
        ("target-del", b"GET /a\x7f HTTP/1.1"), ("target-fragment", b"GET /a#frag HTTP/1.1"),
        ("target-long", b"GET /" + b"p" * 4000 + b" HTTP/1.1"), ("target-oversize", b"GET /" + b"p" * 17000 + b" HTTP/1.1"),
        ("only-method", b"GET"), ("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
    ]:
        yield "request-line/" + name, wire(line, hh)
    yield "host/missing", wire(b"GET / HTTP/1.1", [(b"Accept", b"*/*")])
    yield "host/missing-http10", wire(b"GET / HTTP/1.0", [])
    yield "host/two", wire(b"GET / HTTP/1.1", [HOST, (b"Host", b"other.example")])
    yield "host/two-same", wire(b"GET / HTTP/1.1", [HOST, HOST])
    yield "host/empty", wire(b"GET / HTTP/1.1", [(b"Host", b"")])
    yield "host/space-inside", wire(b"GET / HTTP/1.1", [(b"Host", b"exa mple.com")])
    yield "host/slash", wire(b"GET / HTTP/1.1", [(b"Host", b"example.com/evil")])
    yield "host/userinfo", wire(b"GET / HTTP/1.1", [(b"Host", b"user@example.com")])
    yield "host/ipv6", wire(b"GET / HTTP/1.1", [(b"Host", b"[::1]:8080")])
    yield "host/lowercase-name", wire(b"GET / HTTP/1.1", [(b"host", b"example.com")])


def status_line_variants():
    for name, line in [
        ("status-2-digits", b"HTTP/1.1 20 OK"), ("status-4-digits", b"HTTP/1.1 2000 OK"), ("status-000", b"HTTP/1.1 000 Zero"),
        ("status-099", b"HTTP/1.1 099 Low"), ("status-600", b"HTTP/1.1 600 High"), ("status-999", b"HTTP/1.1 999 Max"),
        ("status-letters", b"HTTP/1.1 2x0 OK"), ("status-no-space", b"HTTP/1.1200 OK"), ("two-spaces", b"HTTP/1.1  200 OK"),
        ("reason-tab-first", b"HTTP/1.1 200\tOK"), ("reason-nul", b"HTTP/1.1 200 O\x00K"), ("reason-del", b"HTTP/1.1 200 O\x7fK"),
        ("version-1.2", b"HTTP/1.2 200 OK"), ("version-2", b"HTTP/2 200 OK"), ("version-lower", b"http/1.1 200 OK"),
        ("version-0.9", b"HTTP/0.9 200 OK"), ("no-version", b"200 OK"), ("icy", b"ICY 200 OK"),
    ]:
        yield "status-line/" + name, wire(line, [(b"Content-Length", b"2")], b"ok")


def random_mutations(rng, messages, count):
    """Seeded byte-level damage: flips, inserts, deletes and CR/LF/NUL/SP injection."""
    specials = [0x0D, 0x0A, 0x00, 0x20, 0x09, 0x3A, 0x2C, 0x3B, 0x7F, 0x80, 0xFF]
    names = sorted(messages)
    for i in range(count):
        name = rng.choice(names)
        data = bytearray(messages[name])
        for _ in range(rng.randint(1, 3)):
            pos = rng.randrange(len(data) + 1)
            op = rng.randrange(4)
            byte = rng.choice(specials) if rng.random() < 0.7 else rng.randrange(256)
            if op == 0 and pos < len(data):
                data[pos] = byte
            elif op == 1:
                data.insert(pos, byte)
            elif op == 2 and pos < len(data):
                del data[pos]
            else:
                data = data[:pos] + data[pos:pos + rng.randint(1, 8)] + data[pos:]
        yield "random/%s-%d" % (name, i), bytes(data)


def cases():
    rng = random.Random(SEED)
    for name, data in REQUESTS.items():
        yield "valid/req-" + name, "request", data, None
    for name, (data, method) in RESPONSES.items():
        yield "valid/resp-" + name, "response", data, method

    # Pipelined pairs: every message boundary must fall in the same place.
    req_names = sorted(REQUESTS)
    for i in range(12):
        a, b = rng.choice(req_names), rng.choice(req_names)
        yield "pipelined/req-%s+%s" % (a, b), "request", REQUESTS[a] + REQUESTS[b], None
    resp_names = sorted(n for n in RESPONSES if n not in ("200-close", "200-http10", "connect-200"))
    for i in range(8):
        a, b = rng.choice(resp_names), rng.choice(resp_names)
        if RESPONSES[a][1] == RESPONSES[b][1]:
            yield "pipelined/resp-%s+%s" % (a, b), "response", RESPONSES[a][0] + RESPONSES[b][0], RESPONSES[a][1]

    for name, data in header_variants(b"POST /p HTTP/1.1", [HOST], b""):
        yield "%s/req" % name, "request", data, None
    for name, data in header_variants(b"HTTP/1.1 200 OK", [(b"Server", b"s")], b""):
        yield "%s/resp" % name, "response", data, "GET"
    for name, data in request_line_variants():
        yield name, "request", data, None
    for name, data in status_line_variants():
        yield name, "response", data, "GET"

    # HTTP/1.0 messages with a Transfer-Encoding.
    yield "te-http10/req", "request", wire(b"POST / HTTP/1.0", [(b"Transfer-Encoding", b"chunked")], chunked([b"a"])), None
    yield "te-http10/resp", "response", wire(b"HTTP/1.0 200 OK", [(b"Transfer-Encoding", b"chunked")], chunked([b"a"])), "GET"

    # Truncations of valid messages at seeded offsets: never accepted as complete.
    all_requests = sorted(REQUESTS.items())
    for i in range(20):
        name, data = rng.choice(all_requests)
        cut = rng.randrange(1, len(data))
        yield "truncated/req-%s-%d" % (name, cut), "request", data[:cut], None
    all_responses = sorted((n, d) for n, (d, m) in RESPONSES.items() if m == "GET")
    for i in range(10):
        name, data = rng.choice(all_responses)
        cut = rng.randrange(1, len(data))
        yield "truncated/resp-%s-%d" % (name, cut), "response", data[:cut], "GET"

    for name, data in random_mutations(rng, REQUESTS, 60):
        yield name, "request", data, None
    for name, data in random_mutations(rng, {n: d for n, (d, m) in RESPONSES.items() if m == "GET"}, 30):
        yield name, "response", data, "GET"


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    verdicts = []
    seen = set()
    for name, kind, data, method in cases():
        assert name not in seen, name
        seen.add(name)
        messages, end, detail = h11_verdict(kind, data, method or "GET")
        case = {"name": name, "input": text(data), "kind": kind, "messages": messages, "end": end}
        if kind == "response":
            case["requestMethod"] = method
        if detail:
            case["detail"] = detail
        verdicts.append(case)
    with open(os.path.join(OUT, "verdicts.json"), "w") as f:
        json.dump({"generator": "Fuzz/h11/generate_corpus.py", "h11": h11.__version__, "seed": SEED,
                   "maxHeadBytes": MAX_HEAD, "cases": verdicts}, f, indent=1, sort_keys=True)
        f.write("\n")
    ends = {}
    for c in verdicts:
        ends[c["end"]] = ends.get(c["end"], 0) + 1
    print("%d cases (%s) -> %s" % (len(verdicts), ", ".join("%s %d" % kv for kv in sorted(ends.items())), OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
