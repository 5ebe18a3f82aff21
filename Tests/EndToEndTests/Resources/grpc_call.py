"""A real gRPC server (grpcio, TLS, h2 only) and a client calling it through Tapwire.

usage: grpc_call.py PROXY_PORT CERT KEY TAPWIRE_CA [slow N]

The server serves /demo.Greeter/Hello (unary), Count (server-streaming), Total
(client-streaming), Echo (bidi) and Fail (NOT_FOUND, a trailers-only answer)
with hand-encoded protobuf messages (no generated stubs: the handlers take and give bytes).
The client goes through the proxy (grpc.http_proxy, a CONNECT) and trusts Tapwire's CA.
Prints one JSON object: what the client got. With `slow N`: one call of /demo.Greeter/Slow
(held one second), then N concurrent ones on the same channel, and the distinct TCP peers
the server saw them all from (how many connections the proxy spread them over).
"""
import json
import sys
import threading
import time
from concurrent import futures

import grpc


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_string(number, text):
    data = text.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def hello(request, context):
    # request: field 1 = name
    name = request[2:].decode()
    return field_string(1, "hello " + name) + field_varint(2, 7)


def count(request, context):
    for i in range(3):
        yield field_varint(1, i + 1) + field_string(2, "item")


peers = set()
peers_lock = threading.Lock()


def slow(request, context):
    with peers_lock:
        peers.add(context.peer())
    time.sleep(1)
    return request


def total(requests, context):
    # client-streaming: field 1 of every message summed
    return field_varint(1, sum(r[1] for r in requests))


def echo(requests, context):
    # bidi: each message answered as it comes
    for r in requests:
        yield field_varint(1, r[1] * 10)


def fail(request, context):
    context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")


def main():
    proxy_port, cert, key, ca = sys.argv[1:5]
    handler = grpc.method_handlers_generic_handler("demo.Greeter", {
        "Hello": grpc.unary_unary_rpc_method_handler(hello),
        "Count": grpc.unary_stream_rpc_method_handler(count),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
        "Slow": grpc.unary_unary_rpc_method_handler(slow),
        "Total": grpc.stream_unary_rpc_method_handler(total),
        "Echo": grpc.stream_stream_rpc_method_handler(echo),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((handler,))
    with open(cert, "rb") as c, open(key, "rb") as k:
        credentials = grpc.ssl_server_credentials([(k.read(), c.read())])
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()

    with open(ca, "rb") as f:
        roots = grpc.ssl_channel_credentials(root_certificates=f.read())
    options = [("grpc.http_proxy", "http://127.0.0.1:%s" % proxy_port),
               ("grpc.enable_http_proxy", 1)]
    result = {"port": port}
    with grpc.secure_channel("127.0.0.1:%d" % port, roots, options=options) as channel:
        if sys.argv[5:6] == ["slow"]:
            call = channel.unary_unary("/demo.Greeter/Slow")
            # One call first, so that the proxy's origin connection is up and pooled.
            call(field_varint(1, 99), timeout=20)
            pending = [call.future(field_varint(1, i), timeout=20) for i in range(int(sys.argv[6]))]
            result["answers"] = [f.result().hex() for f in pending]
            result["peers"] = len(peers)
            server.stop(0)
            print(json.dumps(result))
            return
        unary = channel.unary_unary("/demo.Greeter/Hello")
        result["unary"] = unary(field_string(1, "tapwire"), timeout=20).hex()
        stream = channel.unary_stream("/demo.Greeter/Count")
        result["stream"] = [m.hex() for m in stream(field_varint(1, 3), timeout=20)]
        client_stream = channel.stream_unary("/demo.Greeter/Total")
        result["total"] = client_stream(iter([field_varint(1, n) for n in (1, 2, 3)]), timeout=20).hex()
        bidi = channel.stream_stream("/demo.Greeter/Echo")
        result["bidi"] = [m.hex() for m in bidi(iter([field_varint(1, n) for n in (4, 5)]), timeout=20)]
        failing = channel.unary_unary("/demo.Greeter/Fail")
        try:
            failing(b"", timeout=20)
            result["fail"] = "no error"
        except grpc.RpcError as e:
            result["fail"] = [e.code().name, e.details()]
    server.stop(0)
    print(json.dumps(result))


main()
