"""A raw HTTP/2 client through Tapwire's interception, for the end-to-end tests.

Usage: h2_client.py MODE PROXY_PORT ORIGIN_PORT CA_FILE
Connects to the proxy, CONNECTs to 127.0.0.1:ORIGIN_PORT, speaks TLS (ALPN h2, trusting
CA_FILE), then runs MODE and prints one JSON object:
  concurrent           one /slow?s=2 stream and 30 /json streams at once: completion times
  rapid-reset          opens and resets streams until the connection closes
  made-you-reset       opens streams and makes the proxy reset each (DATA past the content-length)
  settings-flood       sends SETTINGS frames until the connection closes
  continuation-flood   one header block in 6 CONTINUATION frames (the library's own limit is 8)
  header-bomb          one large field referenced many times from the HPACK table
  idle                 one request, then nothing: waits for the proxy to close
  stalled-headers      a HEADERS frame without END_HEADERS, then nothing
  malformed            a connection WINDOW_UPDATE of 0 (a protocol error)
  trailers             GET /chunked (the origin sends a trailer) and a POST with trailers
  grpc                 a gRPC-shaped POST (te: trailers, one message) to /grpc
  early-answer         a POST to /early (answered before its body is read) that stops
                       after 16 KiB of a 1 MiB body: the answer, and how the stream ended
  many                 100 streams at once, each GET /big of 512 KiB: sizes received
  deaf-flood           opens its windows, asks for 8 answers of 16 MiB and never reads; once
                       the proxy's output is full, floods SETTINGS, stays connected and deaf
                       for 6 s, then closes
"""
import json
import socket
import ssl
import struct
import sys
import time

import h2.config
import h2.connection
import h2.events
import hpack


def connect(proxy_port, origin_port, ca_file):
    s = socket.create_connection(("127.0.0.1", proxy_port))
    authority = "127.0.0.1:%d" % origin_port
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("proxy closed during CONNECT")
        head += chunk
    assert b" 200 " in head.split(b"\r\n")[0], head
    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    assert t.selected_alpn_protocol() == "h2", t.selected_alpn_protocol()
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    t.sendall(conn.data_to_send())
    return t, conn, authority


def request_headers(authority, path, method="GET"):
    return [(":method", method), (":scheme", "https"), (":authority", authority), (":path", path)]


def pump(t, conn, deadline):
    """Reads until the peer closes or the deadline; returns (events, closed)."""
    events = []
    t.settimeout(max(0.01, deadline - time.time()))
    try:
        data = t.recv(65536)
    except (socket.timeout, ssl.SSLError, ConnectionResetError):
        return events, time.time() >= deadline
    if not data:
        return events, True
    try:
        events = conn.receive_data(data)
    except Exception:
        return events, True
    out = conn.data_to_send()
    if out:
        try:
            t.sendall(out)
        except OSError:
            return events, True
    return events, False


def responses(t, conn, streams, seconds):
    """Reads until every stream in `streams` ended (or the connection closed, or `seconds`
    passed), acknowledging DATA as it comes. Per stream: headers, body, trailers and the
    seconds from the call to its end."""
    start = time.time()
    deadline = start + seconds
    got = {sid: {"headers": None, "body": b"", "trailers": None, "ended": None} for sid in streams}
    while any(r["ended"] is None for r in got.values()) and time.time() < deadline:
        events, closed = pump(t, conn, deadline)
        for e in events:
            r = got.get(getattr(e, "stream_id", None))
            if r is None:
                continue
            if isinstance(e, h2.events.ResponseReceived):
                r["headers"] = dict(e.headers)
            elif isinstance(e, h2.events.TrailersReceived):
                r["trailers"] = [[k, v] for k, v in e.headers]
            elif isinstance(e, h2.events.DataReceived):
                r["body"] += e.data
                conn.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
            elif isinstance(e, h2.events.StreamEnded):
                r["ended"] = time.time() - start
        out = conn.data_to_send()
        if out:
            t.sendall(out)
        if closed:
            break
    return got


def concurrent(t, conn, authority):
    start = time.time()
    slow = conn.get_next_available_stream_id()
    conn.send_headers(slow, request_headers(authority, "/slow?s=2"), end_stream=True)
    fast = []
    for _ in range(30):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, request_headers(authority, "/json?h2=%d" % sid), end_stream=True)
        fast.append(sid)
    t.sendall(conn.data_to_send())
    got = responses(t, conn, [slow] + fast, 20)
    status = {sid: r["headers"] and r["headers"].get(":status") for sid, r in got.items()}
    done = {sid: r["ended"] for sid, r in got.items()}
    sizes = {sid: len(r["body"]) for sid, r in got.items()}
    print(json.dumps({"slow": done.get(slow), "fast": [done.get(s) for s in fast],
                      "statuses": [status.get(s) for s in [slow] + fast],
                      "sizes": [sizes.get(s, 0) for s in fast]}))


def until_closed(t, conn, send_more, seconds=10):
    """Calls send_more() while the connection is open; reports the GOAWAY's error code."""
    goaway = None
    closed = False
    deadline = time.time() + seconds
    sent = 0
    while not closed and time.time() < deadline:
        try:
            if send_more(sent):
                sent += 1
                t.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            pass
        t.settimeout(0.001 if sent < 100000 else 0.2)
        try:
            data = t.recv(65536)
            if not data:
                closed = True
            else:
                for e in conn.receive_data(data):
                    if isinstance(e, h2.events.ConnectionTerminated):
                        goaway = int(e.error_code)
        except (socket.timeout, ssl.SSLWantReadError):
            pass
        except (ssl.SSLError, ConnectionResetError, BrokenPipeError, h2.exceptions.ProtocolError):
            closed = True
    print(json.dumps({"goaway": goaway, "closed": closed, "sent": sent}))


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def main():
    mode, proxy_port, origin_port, ca_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    t, conn, authority = connect(proxy_port, origin_port, ca_file)
    if mode == "concurrent":
        concurrent(t, conn, authority)
    elif mode == "rapid-reset":
        def reset_one(_):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, request_headers(authority, "/slow?s=5"), end_stream=True)
            conn.reset_stream(sid)
            return True
        until_closed(t, conn, reset_one)
    elif mode == "made-you-reset":
        def provoke(_):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, request_headers(authority, "/slow?s=5", "POST") + [("content-length", "1")], end_stream=False)
            t.sendall(conn.data_to_send())
            # Two bytes against a content-length of 1: a stream error the proxy answers with
            # RST_STREAM (PROTOCOL_ERROR), so the client never resets anything itself.
            t.sendall(frame(0, 1, sid, b"xx"))
            return True
        until_closed(t, conn, provoke)
    elif mode == "settings-flood":
        def settings(n):
            conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100 + n % 7})
            return True
        until_closed(t, conn, settings)
    elif mode == "continuation-flood":
        encoder = hpack.Encoder()
        first = encoder.encode(request_headers(authority, "/json"))
        raw = [frame(1, 0, 1, first)]  # HEADERS without END_HEADERS
        # Fewer than nghttp2's own default limit (8): only the configured limit can refuse it.
        for i in range(6):
            raw.append(frame(9, 0, 1, encoder.encode([("x-filler-%d" % i, "v")])))
        state = {"i": 0}

        def continuation(_):
            if state["i"] >= len(raw):
                return False
            t.sendall(raw[state["i"]])
            state["i"] += 1
            return False
        until_closed(t, conn, continuation)
    elif mode == "header-bomb":
        def bomb(n):
            if n > 0:
                return False
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, request_headers(authority, "/json") + [("x-bomb", "a" * 4000)] * 40, end_stream=True)
            return True
        until_closed(t, conn, bomb)
    elif mode == "trailers":
        conn.send_headers(1, request_headers(authority, "/chunked?h2=trailers"), end_stream=True)
        conn.send_headers(3, request_headers(authority, "/echo?h2=reqtrailers", "POST"), end_stream=False)
        conn.send_data(3, b"abc")
        conn.send_headers(3, [("x-request-trailer", "sent")], end_stream=True)
        t.sendall(conn.data_to_send())
        got = responses(t, conn, [1, 3], 10)
        print(json.dumps({"trailers": got[1]["trailers"], "body": got[1]["body"].decode(),
                          "echo": got[3]["body"].decode(), "ended": sorted(sid for sid, r in got.items() if r["ended"] is not None)}))
    elif mode == "malformed":
        state = {"sent": False}

        def bad(_):
            if not state["sent"]:
                state["sent"] = True
                t.sendall(frame(8, 0, 0, struct.pack(">I", 0)))
            return False
        until_closed(t, conn, bad)
    elif mode == "grpc":
        message = b"\x0a\x05hello"
        conn.send_headers(1, request_headers(authority, "/grpc?h2=grpc", "POST")
                          + [("content-type", "application/grpc"), ("te", "trailers")], end_stream=False)
        conn.send_data(1, b"\x00" + len(message).to_bytes(4, "big") + message, end_stream=True)
        t.sendall(conn.data_to_send())
        r = responses(t, conn, [1], 10)[1]
        status = r["headers"] or {}
        print(json.dumps({"status": status.get(":status"), "contentType": status.get("content-type"),
                          "trailers": r["trailers"], "body": r["body"].hex()}))
    elif mode == "early-answer":
        conn.send_headers(1, request_headers(authority, "/early?h2=early", "POST") + [("content-length", str(1 << 20))],
                          end_stream=False)
        conn.send_data(1, b"x" * 16384)
        t.sendall(conn.data_to_send())
        status, ended, reset = None, False, None
        deadline = time.time() + 10
        while time.time() < deadline and reset is None:
            t.settimeout(0.2)
            try:
                data = t.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            if not data:
                break
            for e in conn.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived):
                    status = dict(e.headers).get(":status")
                elif isinstance(e, h2.events.StreamEnded):
                    ended = True
                elif isinstance(e, h2.events.StreamReset):
                    reset = int(e.error_code)
            t.sendall(conn.data_to_send())
        print(json.dumps({"status": status, "ended": ended, "reset": reset}))
    elif mode == "many":
        # 100 streams at once (the default stream limit), answers of 512 KiB each.
        ids = []
        for n in range(100):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, request_headers(authority, "/big?size=524288&h2=many%d" % n), end_stream=True)
            ids.append(sid)
        t.sendall(conn.data_to_send())
        got = responses(t, conn, ids, 90)
        print(json.dumps({"sizes": [len(got[s]["body"]) for s in ids], "ended": sum(r["ended"] is not None for r in got.values())}))
    elif mode == "stalled-headers":
        state = {"sent": False}

        def stall(_):
            if not state["sent"]:
                state["sent"] = True
                t.sendall(frame(1, 0, 1, hpack.Encoder().encode(request_headers(authority, "/json"))))
            return False
        until_closed(t, conn, stall)
    elif mode == "idle":
        def one(n):
            if n > 0:
                return False
            conn.send_headers(1, request_headers(authority, "/json?h2=idle"), end_stream=True)
            return True
        until_closed(t, conn, one)
    elif mode == "deaf-flood":
        conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2 ** 31 - 1})
        conn.increment_flow_control_window(2 ** 31 - 1 - 65535)
        for n in range(8):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, request_headers(authority, "/big?size=16777216&h2=deaf%d" % n), end_stream=True)
        t.sendall(conn.data_to_send())
        time.sleep(1.5)  # the answers fill the socket buffers and the proxy's output
        for n in range(200):
            conn.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100 + n % 7})
            t.sendall(conn.data_to_send())
        time.sleep(6)
        t.close()
        print(json.dumps({"sent": 200}))
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
