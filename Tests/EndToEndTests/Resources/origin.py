#!/usr/bin/env python3
"""A loopback origin for Tapwire's end-to-end tests. Prints its port, then serves
until stdin closes or it is killed. Only ever binds 127.0.0.1."""
import json, socket, sys, threading, time, zlib, gzip

BIG_CHUNK = b"x" * 65536
# Complete requests read since start (all connections): /count answers it, so a
# test can prove a refused request never reached the origin whole.
COMPLETE = [0]
COMPLETE_LOCK = threading.Lock()
# Connections being served; /count?settled=1 waits until its own is the only one, so
# every byte a client (the proxy) sent before closing has been read and counted.
ACTIVE = [0]
ACTIVE_CHANGED = threading.Condition()
# /slow?hold=KEY answers when /release?hold=KEY comes (or after s seconds): a test
# decides when a slow answer ends instead of guessing a duration.
HOLDS = {}
HOLDS_LOCK = threading.Lock()

def hold_event(key):
    with HOLDS_LOCK:
        return HOLDS.setdefault(key, threading.Event())

def reply(conn, status, reason, headers, body=b""):
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    conn.sendall(head.encode("latin-1") + body)

def read_request(f):
    line = f.readline()
    if not line:
        return None
    while line in (b"\r\n", b"\n"):
        line = f.readline()
        if not line:
            return None
    method, target, version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    headers = []
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, v = h.decode("latin-1").split(":", 1)
        headers.append((k.strip(), v.strip()))
    hd = {k.lower(): v for k, v in headers}
    body = b""
    if target.startswith("/early"):
        pass  # answered before its body is read (see handle)
    elif target.startswith("/sink") and "content-length" in hd:
        # Counts the body without keeping it, so uploads of any size stream.
        left = int(hd["content-length"])
        while left > 0:
            got = f.read(min(left, 1 << 16))
            if not got:
                break
            left -= len(got)
        body = str(int(hd["content-length"]) - left).encode()
    elif "content-length" in hd:
        body = f.read(int(hd["content-length"]))
    elif hd.get("transfer-encoding", "").lower() == "chunked":
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                while f.readline() not in (b"\r\n", b""):
                    pass
                break
            body += f.read(size)
            f.readline()
    return method, target, version, headers, hd, body

def handle(conn):
    with ACTIVE_CHANGED:
        ACTIVE[0] += 1
    try:
        serve(conn)
    finally:
        with ACTIVE_CHANGED:
            ACTIVE[0] -= 1
            ACTIVE_CHANGED.notify_all()

def serve(conn):
    f = conn.makefile("rb")
    served = 0
    drop_next = False
    try:
        while True:
            req = read_request(f)
            if req is None:
                return
            method, target, version, headers, hd, body = req
            served += 1
            with COMPLETE_LOCK:
                COMPLETE[0] += 1
            if drop_next:
                # A keep-alive connection the origin gives up on: closed without an answer.
                return
            path, _, query = target.partition("?")
            params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
            nobody = method == "HEAD"
            if hd.get("expect", "").lower() == "100-continue":
                pass  # the body was already read above only if sent; curl waits briefly
            if path == "/json":
                b = b'{"id":12345678901234567890,"ok":true,"name":"tap","items":[1,2,3],"password":"hunter2"}'
                reply(conn, 200, "OK", [("Content-Type", "application/json"), ("Content-Length", len(b))], b"" if nobody else b)
            elif path == "/secrets":
                # Secrets in a response head and at depth in its JSON, for the redaction tests.
                b = b'{"user":{"name":"ann","profile":{"password":"NESTED-SECRET-6"}},"items":[{"token":"ARRAY-SECRET-7"}]}'
                reply(conn, 200, "OK", [("Content-Type", "application/json"), ("Set-Cookie", "session=SETCOOKIE-SECRET-5; HttpOnly"),
                                        ("Content-Length", len(b))], b"" if nobody else b)
            elif path == "/gzip-json":
                b = gzip.compress(b'{"compressed":true,"n":1.50}')
                reply(conn, 200, "OK", [("Content-Type", "application/json"), ("Content-Encoding", "gzip"), ("Content-Length", len(b))], b)
            elif path == "/inspect":
                # What arrived, as JSON: a re-sent request (tapwire curl, replay) is compared with it.
                import base64
                b = json.dumps({"method": method, "target": target, "headers": headers,
                                "body": base64.b64encode(body).decode()}).encode()
                reply(conn, 200, "OK", [("Content-Type", "application/json"), ("Content-Length", len(b))], b)
            elif path == "/echo":
                ct = hd.get("content-type", "application/octet-stream")
                reply(conn, 200, "OK", [("Content-Type", ct), ("Content-Length", len(body)), ("X-Method", method),
                                        ("X-Host", hd.get("host", "")), ("X-Seen-Headers", ",".join(k.lower() for k, _ in headers)),
                                        ("X-Served", served)], body)
            elif path == "/count":
                if params.get("settled") == "1":
                    with ACTIVE_CHANGED:
                        ACTIVE_CHANGED.wait_for(lambda: ACTIVE[0] <= 1, timeout=10)
                with COMPLETE_LOCK:
                    b = str(COMPLETE[0] - 1).encode()  # not counting this request
                reply(conn, 200, "OK", [("Content-Length", len(b))], b)
            elif path == "/drop-next":
                b = b"kept alive, for now"
                reply(conn, 200, "OK", [("Content-Length", len(b))], b)
                drop_next = True
            elif path == "/early":
                # 413 before reading the body, then the connection closes (the body unread).
                reply(conn, 413, "Content Too Large", [("Content-Length", 0), ("Connection", "close")])
                conn.shutdown(socket.SHUT_WR)
                return
            elif path == "/sink":
                reply(conn, 200, "OK", [("Content-Length", len(body))], body)
            elif path == "/slow":
                if "hold" in params:
                    hold_event(params["hold"]).wait(float(params.get("s", "30")))
                else:
                    time.sleep(float(params.get("s", "1")))
                b = b"slow answer"
                reply(conn, 200, "OK", [("Content-Length", len(b))], b)
            elif path == "/release":
                hold_event(params.get("hold", "")).set()
                b = b"released"
                reply(conn, 200, "OK", [("Content-Length", len(b))], b)
            elif path == "/chunked":
                reply(conn, 200, "OK", [("Content-Type", "text/plain"), ("Transfer-Encoding", "chunked")])
                for piece in (b"hello ", b"chunked ", b"world"):
                    conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                conn.sendall(b"0\r\nX-Trailer: yes\r\n\r\n")
            elif path == "/grpc":
                # A unary gRPC answer as an HTTP/1.1 origin can give it: one length-prefixed
                # protobuf message ({1: 150, 2: "ok"}) in a chunked body, the status in trailers.
                message = b"\x08\x96\x01\x12\x02ok"
                framed = b"\x00" + len(message).to_bytes(4, "big") + message
                reply(conn, 200, "OK", [("Content-Type", "application/grpc"), ("Transfer-Encoding", "chunked")])
                conn.sendall(b"%x\r\n%s\r\n" % (len(framed), framed))
                conn.sendall(b"0\r\ngrpc-status: 0\r\ngrpc-message: fine\r\n\r\n")
            elif path in ("/events/openai", "/events/anthropic"):
                # A streamed completion, one event a chunk with a pause between, as the APIs send it.
                if path == "/events/openai":
                    events = [b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n']
                    events += [b'data: {"choices":[{"index":0,"delta":{"content":%s}}]}\n\n' % json.dumps(p).encode()
                               for p in ("Hello", ", wor", "ld! \u2603")]
                    events += [b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', b"data: [DONE]\n\n"]
                else:
                    events = [b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"}}\n\n',
                              b'event: ping\ndata: {"type":"ping"}\n\n']
                    events += [b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
                               b'"delta":{"type":"text_delta","text":%s}}\n\n' % json.dumps(p).encode()
                               for p in ("Hello", ", world", "!")]
                    events += [b'event: message_stop\ndata: {"type":"message_stop"}\n\n']
                reply(conn, 200, "OK", [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                                        ("Transfer-Encoding", "chunked")])
                for event in events:
                    conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
                    time.sleep(0.02)
                conn.sendall(b"0\r\n\r\n")
            elif path == "/msgpack":
                # {"id": 2^64-1, "pi": float 64 3.5, "at": timestamp 32 of 2026-12-04T18:46:40Z, "raw": bin 01 02}
                b = (b"\x84\xa2id\xcf" + b"\xff" * 8 + b"\xa2pi\xcb\x40\x0c" + b"\x00" * 6
                     + b"\xa2at\xd6\xff\x6b\x13\x0a\x90" + b"\xa3raw\xc4\x02\x01\x02")
                reply(conn, 200, "OK", [("Content-Type", "application/x-msgpack"), ("Content-Length", len(b))], b)
            elif path == "/big":
                size = int(params.get("size", "1048576"))
                reply(conn, 200, "OK", [("Content-Type", "application/octet-stream"), ("Content-Length", size)])
                sent = 0
                while sent < size:
                    n = min(len(BIG_CHUNK), size - sent)
                    conn.sendall(BIG_CHUNK[:n])
                    sent += n
            elif path == "/status":
                code = int(params.get("code", "200"))
                if code in (204, 304):
                    reply(conn, code, "X", [])
                else:
                    b = b"status body"
                    reply(conn, code, "X", [("Content-Length", len(b))], b"" if nobody else b)
            elif path == "/close-delimited":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nuntil the end")
                conn.shutdown(socket.SHUT_WR)
                return
            elif path == "/reset-mid-body":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"y" * 1000)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()
                return
            elif path == "/malformed":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
                return
            elif path == "/never":
                # No answer: the connection stays until the client gives up (or s seconds pass).
                conn.settimeout(float(params.get("s", "30")))
                try:
                    while conn.recv(65536):
                        pass
                except socket.timeout:
                    pass
                return
            elif path == "/close-after":
                b = b"once"
                reply(conn, 200, "OK", [("Content-Length", len(b)), ("X-Served", served)], b)
                conn.shutdown(socket.SHUT_RDWR)
                return
            elif path == "/continue":
                reply(conn, 100, "Continue", [])
                reply(conn, 200, "OK", [("Content-Length", 2)], b"ok")
            elif path == "/ws":
                reply(conn, 101, "Switching Protocols", [("Upgrade", "websocket"), ("Connection", "Upgrade")])
                while True:
                    data = conn.recv(65536)
                    if not data:
                        break
                    conn.sendall(data)
                return
            else:
                b = b"not found"
                reply(conn, 404, "Not Found", [("Content-Length", len(b))], b)
            if hd.get("connection", "").lower() == "close":
                return
    except (ConnectionError, ValueError, OSError):
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass

def serve_tls(conn, tls):
    try:
        conn = tls.wrap_socket(conn, server_side=True)
    except (OSError, ValueError):
        conn.close()
        return
    handle(conn)

def main():
    # origin.py [PORT] [--tls CERT KEY]: HTTPS with the given certificate.
    args = sys.argv[1:]
    tls = None
    if "--tls" in args:
        i = args.index("--tls")
        import ssl
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args[i + 1], args[i + 2])
        del args[i:i + 3]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(args[0]) if args else 0))
    s.listen(256)
    print(s.getsockname()[1], flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), s.close(), sys.exit(0)), daemon=True).start()
    def watchdog():
        sys.stdin.read()
        import os
        os._exit(0)
    threading.Thread(target=watchdog, daemon=True).start()
    while True:
        try:
            c, _ = s.accept()
        except OSError:
            return
        threading.Thread(target=serve_tls if tls else handle, args=(c, tls) if tls else (c,), daemon=True).start()

main()
