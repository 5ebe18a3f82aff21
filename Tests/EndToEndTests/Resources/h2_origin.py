"""A raw HTTP/2 origin over TLS (ALPN h2) that misbehaves on purpose, for the end-to-end tests.

Usage: h2_origin.py CERT KEY
Prints its port, then one line "connection N" per accepted connection. Paths:
  /ok        200, body "ok"
  /rst       200 and "part", then RST_STREAM (INTERNAL_ERROR) on the stream
  /goaway    200 and "first", then GOAWAY naming this stream as the last, then "second"
             and the stream's end; the connection closes a moment later
  /refuse    unless it is its connection's first stream: GOAWAY naming the stream before
             it as the last (it is refused, never processed), then the connection closes;
             as a connection's first stream, 200 "fresh"
  /slow      200 and "slow" after 0.5 s (to have streams in flight on one connection)
  /hold      no WINDOW_UPDATE ever (as on every path), and 200 "held" only after 8 s: an
             upload to it stops at the first window
  /bomb      200 with 20,000 copies of one 4,000-byte field: a byte or two each on the wire
             (HPACK refers back to the first), 80 MB of header list decoded
  /malformed 200 and "part", then a connection WINDOW_UPDATE of 0 (a protocol error); the
             body's end follows 0.5 s later
  /pingflood 200 and "part", then 5,000 PINGs written without reading the answers
A GOAWAY received from Tapwire prints "goaway CODE" (its error code).
Stops when stdin closes.
"""
import socket
import ssl
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.errors
import h2.exceptions
import struct

connections = 0
lock = threading.Lock()


def goaway(last_stream_id):
    """A GOAWAY frame (NO_ERROR) written raw: the h2 package sends nothing after its own."""
    return struct.pack(">I", 8)[1:] + bytes([0x7, 0]) + struct.pack(">III", 0, last_stream_id, 0)


def serve(sock, number):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    send_lock = threading.Lock()
    closing = False

    def flush():
        with send_lock:
            data = conn.data_to_send()
            if data:
                sock.sendall(data)

    def answer(stream_id, path):
        nonlocal closing
        head = [(":status", "200"), ("content-type", "text/plain")]
        if path.startswith("/bomb"):
            head += [("x-bomb", "b" * 4000)] * 20000
        if not (path.startswith("/refuse") and stream_id > 1):
            with send_lock:
                conn.send_headers(stream_id, head)
        if path.startswith("/ok"):
            with send_lock:
                conn.send_data(stream_id, b"ok", end_stream=True)
        elif path.startswith("/rst"):
            with send_lock:
                conn.send_data(stream_id, b"part")
            flush()
            time.sleep(0.1)
            with send_lock:
                conn.reset_stream(stream_id, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
        elif path.startswith("/goaway"):
            with send_lock:
                conn.send_data(stream_id, b"first")
            flush()
            time.sleep(0.1)
            with send_lock:
                sock.sendall(goaway(stream_id))
                conn.send_data(stream_id, b"second", end_stream=True)
            flush()
            closing = True
        elif path.startswith("/refuse") and stream_id > 1:
            with send_lock:
                sock.sendall(goaway(stream_id - 2))
            closing = True
            return
        elif path.startswith("/refuse"):
            with send_lock:
                conn.send_data(stream_id, b"fresh", end_stream=True)
        elif path.startswith("/malformed"):
            with send_lock:
                conn.send_data(stream_id, b"part")
            flush()
            time.sleep(0.1)
            with send_lock:
                sock.sendall(struct.pack(">I", 4)[1:] + bytes([0x8, 0]) + struct.pack(">II", 0, 0))
            time.sleep(0.5)
            with send_lock:
                conn.send_data(stream_id, b"rest", end_stream=True)
        elif path.startswith("/pingflood"):
            with send_lock:
                conn.send_data(stream_id, b"part")
            flush()
            ping = struct.pack(">I", 8)[1:] + bytes([0x6, 0]) + struct.pack(">I", 0) + b"12345678"
            with send_lock:
                sock.sendall(ping * 5000)
            return
        elif path.startswith("/hold"):
            time.sleep(8)
            with send_lock:
                conn.send_data(stream_id, b"held", end_stream=True)
        elif path.startswith("/slow"):
            time.sleep(0.5)
            with send_lock:
                conn.send_data(stream_id, b"slow", end_stream=True)
        else:
            with send_lock:
                conn.send_data(stream_id, b"?", end_stream=True)
        flush()

    try:
        while True:
            if closing:
                time.sleep(0.3)
                return
            sock.settimeout(0.2)
            try:
                data = sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                return
            with send_lock:
                events = conn.receive_data(data)
            for event in events:
                if isinstance(event, h2.events.ConnectionTerminated):
                    print("goaway %d" % int(event.error_code), flush=True)
                if isinstance(event, h2.events.RequestReceived):
                    path = dict(event.headers).get(":path", "/")
                    threading.Thread(target=answer, args=(event.stream_id, path), daemon=True).start()
            flush()
    except (OSError, h2.exceptions.ProtocolError):
        pass
    finally:
        try:
            sock.close()
        except OSError:
            pass


def main():
    global connections
    cert, key = sys.argv[1:3]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2"])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)

    def accept():
        global connections
        while True:
            raw, _ = listener.accept()
            try:
                s = ctx.wrap_socket(raw, server_side=True)
            except (OSError, ssl.SSLError):
                raw.close()
                continue
            with lock:
                connections += 1
                print("connection %d" % connections, flush=True)
            threading.Thread(target=serve, args=(s, connections), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()


if __name__ == "__main__":
    main()
