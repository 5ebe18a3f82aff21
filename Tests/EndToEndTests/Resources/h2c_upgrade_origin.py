#!/usr/bin/env python3
"""A plaintext origin that honours `Upgrade: h2c` (RFC 7540 §3.2): such a request gets 101 and
its answer on HTTP/2 stream 1, {"via":"h2c-upgrade"}; any other request gets HTTP/1.1 200 with
{"via":"h1","upgrade":<the Upgrade field it saw, or null>}. One thread a connection.

    h2c_upgrade_origin.py PORT
"""
import json, socket, sys, threading

import h2.config, h2.connection, h2.exceptions


def serve(c):
    with c:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                return
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        fields = {}
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            fields[name.strip().lower()] = value.strip()
        upgrade = fields.get(b"upgrade")
        if upgrade != b"h2c":
            body = json.dumps({"via": "h1", "upgrade": upgrade.decode() if upgrade else None},
                              separators=(",", ":")).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                      % len(body) + body)
            return
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        conn.initiate_upgrade_connection(fields.get(b"http2-settings", b""))
        body = b'{"via":"h2c-upgrade"}'
        conn.send_headers(1, [(":status", "200"), ("content-length", str(len(body)))])
        conn.send_data(1, body, end_stream=True)
        try:
            c.sendall(conn.data_to_send())
            if rest:
                conn.receive_data(rest)
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    return
                conn.receive_data(chunk)
                c.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.H2Error):
            return


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(sys.argv[1])))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


if __name__ == "__main__":
    main()
