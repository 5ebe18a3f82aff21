#!/usr/bin/env python3
"""Writes the hand-written seed corpora (Fuzz/corpus/http1, json, msgpack, websocket, protobuf, grpc).
Re-run after editing; file names are the seed names, contents are exact bytes."""
import os

HERE = os.path.dirname(os.path.abspath(__file__))

HTTP1 = {
    "get": b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
    "get-http10": b"GET /index.html HTTP/1.0\r\n\r\n",
    "leading-crlf": b"\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
    "absolute-form": b"GET http://example.com:8080/a?b=c HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n\r\n",
    "connect": b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    "options-star": b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n",
    "post-cl": b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
    "post-cl-list": b"POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc",
    "post-chunked": b"POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n",
    "post-chunked-ext-trailer": b"POST /p HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n4;a=b;c=\"d\"\r\nWiki\r\nA \r\n0123456789\r\n0\r\nX-Sum: 1\r\nX-More: two\r\n\r\n",
    "pipelined": b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nPOST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nokGET /3 HTTP/1.1\r\nHost: h\r\n\r\n",
    "pipelined-chunked": b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
    "cl-and-te": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "dup-cl": b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde",
    "obs-fold": b"GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n  folded\r\n\r\n",
    "space-before-colon": b"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
    "bare-lf": b"GET / HTTP/1.1\nHost: h\n\n",
    "bare-cr": b"GET / HTTP/1.1\rHost: h\r\n\r\n",
    "nul-value": b"GET / HTTP/1.1\r\nHost: h\r\nX: a\x00b\r\n\r\n",
    "obs-text": b"GET / HTTP/1.1\r\nHost: h\r\nX: caf\xc3\xa9 \xff\r\n\r\n",
    "http2-version": b"GET / HTTP/2.0\r\nHost: h\r\n\r\n",
    "no-host": b"GET / HTTP/1.1\r\n\r\n",
    "two-hosts": b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "bad-chunk-size": b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0x10\r\n",
    "huge-chunk-size": b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n",
    "te-identity": b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n",
    "te-chunked-twice": b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
    "resp-200-cl": b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\nhello world!",
    "resp-chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nEtag: x\r\n\r\n",
    "resp-close": b"HTTP/1.0 200 OK\r\nServer: s\r\n\r\nuntil the connection closes",
    "resp-204": b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
    "resp-304": b"HTTP/1.1 304 Not Modified\r\nETag: \"a\"\r\n\r\n",
    "resp-100-then-200": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "resp-no-reason": b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
    "resp-gzip-te": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b",
    "resp-bad-status": b"HTTP/1.1 99 Low\r\n\r\n",
    "resp-pipelined": b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
}

JSON = {
    "object": b'{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
    "array": b'[1, -0, 0.5, -1.25e+10, 1E-7, 123456789012345678901234567890]',
    "scalar-string": b'"plain"',
    "scalar-number": b"  42  ",
    "literals": b"[true,false,null]",
    "escapes": b'"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\\u00e9\\u20ac"',
    "surrogates": b'"\\ud83d\\ude00 \\uD834\\uDD1E"',
    "lone-high": b'"\\ud800"',
    "lone-low": b'"\\udc00x"',
    "utf8": '"caf\u00e9 \u20ac \U0001f600 \u2028"'.encode(),
    "utf8-overlong": b'"\xc0\xaf"',
    "utf8-surrogate": b'"\xed\xa0\x80"',
    "utf8-too-big": b'"\xf4\x90\x80\x80"',
    "duplicate-keys": b'{"a":1,"a":2,"A":3}',
    "empty-containers": b'{"a":{},"b":[],"c":[{}],"d":[[]]}',
    "nested": b"[[[[[[[[[[[[[[[[[[[[{}]]]]]]]]]]]]]]]]]]]",
    "nested-object": b'{"a":{"a":{"a":{"a":{"a":{"a":null}}}}}}',
    "deep-unclosed": b"[" * 600,
    "whitespace": b' \t\r\n{ "a" :\t[ 1 , 2 ] }\n',
    "trailing-comma": b"[1,2,]",
    "leading-zero": b"[01]",
    "bare-dot": b"[1.]",
    "exp-no-digit": b"[1e]",
    "plus-number": b"[+1]",
    "bom": b"\xef\xbb\xbf{}",
    "control-in-string": b'"a\tb"',
    "single-quote": b"{'a':1}",
    "comment": b"[1 /* c */]",
    "nan": b"[NaN, Infinity]",
    "truncated-literal": b"[tru",
    "trailing-garbage": b'{"a":1} x',
    "two-values": b"1 2",
    "unterminated-string": b'"abc',
    "bad-escape": b'"\\x41"',
    "short-unicode": b'"\\u12"',
    "key-not-string": b"{1:2}",
    "long-string": b'"' + b"abcdefgh" * 40 + b'\\n"',
    "mixed": b'{"id":12,"name":"User","tags":["a","b"],"score":-3.5e-2,"ok":true,"next":null}',
}

# One of each MessagePack family, hand-packed (no msgpack module needed), and some bad ones.
MSGPACK = {
    "scalars": b"\x9a\xc0\xc2\xc3\x7f\xe0\xcc\xff\xcd\x01\x00\xd0\x80\xd1\x80\x00\xa3abc",
    "uint64-int64": b"\x92\xcf" + b"\xff" * 8 + b"\xd3\x80" + b"\x00" * 7,
    "uint32-int32": b"\x92\xce\xff\xff\xff\xff\xd2\x80\x00\x00\x00",
    "floats": b"\x95\xca\x3d\xcc\xcc\xcd\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a\xcb\x7f\xf8" + b"\x00" * 6
              + b"\xca\xff\x80\x00\x00\xcb\x00\x00\x00\x00\x00\x00\x00\x01",
    "str8-16-32": b"\x93\xd9\x03abc\xda\x00\x02\xc3\xa9\xdb\x00\x00\x00\x01z",
    "bin": b"\x93\xc4\x02\x01\x02\xc5\x00\x01\xff\xc6\x00\x00\x00\x00",
    "map-keys": b"\x85\xa1a\x01\x02\xa1b\xc0\xc3\xc4\x01\x00\x90\x91\x90\x80",
    "map16-array16": b"\xde\x00\x01\xa1k\xdc\x00\x02\x01\x02",
    "map32-array32": b"\xdf\x00\x00\x00\x01\xa1k\xdd\x00\x00\x00\x01\xc0",
    "fixext": b"\x95\xd4\x05\x00\xd5\x05\x00\x01\xd6\x05" + b"\x00" * 4 + b"\xd7\x05" + b"\x00" * 8 + b"\xd8\x05" + b"\x00" * 16,
    "ext8-16-32": b"\x93\xc7\x01\xf9\x00\xc8\x00\x01\x7f\x00\xc9\x00\x00\x00\x00\x80",
    "timestamps": b"\x93\xd6\xff\x6b\x13\x0a\x90\xd7\xff\x1d\x6f\x34\x54\x6b\x13\x0a\x90"
                  + b"\xc7\x0c\xff\x3b\x9a\xc9\xff" + b"\xff" * 8,
    "timestamp-bad": b"\x92\xc7\x05\xff" + b"\x00" * 5 + b"\xd7\xff\xee\x6b\x28" + b"\x00" * 5,
    "nested": b"\x91" * 40 + b"\x81\xa1x" + b"\x91" * 20 + b"\xc0",
    "never-used": b"\x92\x01\xc1",
    "truncated-str": b"\xa5ab",
    "huge-array-claim": b"\xdd\xff\xff\xff\xff\x01",
    "bad-utf8": b"\xa2\xc3\x28",
    "trailing": b"\x01\x02",
    # Maps as keys of maps as keys...: each level's key text escapes the one inside it again.
    "keys-in-keys": b'\xdf\x00\xcf\xff\xff\xff\xdf\xff\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\xff\xff\xff\xff\xff\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x00\x00\x00\x00SSSSSSSSSSSSSSSSSSSSSSSSSSSSSS\x00\x00\x00\x00\xff\xff\xfe\x01\xc0',
}


def ws_frame(opcode, payload, fin=True, rsv1=False, mask=None):
    head = bytes([(0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode])
    bit = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head += bytes([bit | n])
    elif n <= 0xFFFF:
        head += bytes([bit | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([bit | 127]) + n.to_bytes(8, "big")
    if mask:
        return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + payload

def ws_deflate(*messages):
    import zlib
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    out = []
    for m in messages:
        data = c.compress(m) + c.flush(zlib.Z_SYNC_FLUSH)
        out.append(data[:-4])
    return out

# The first byte is the target's options: bit 0 client (masked), bit 1 permessage-deflate,
# bits 2-3 no context takeover (server, client), bits 4-7 the chunk size.
MASK = b"\x37\xfa\x21\x3d"
_c1, _c2 = ws_deflate(b'{"a":"hello hello hello"}', b'{"a":"hello hello hello","b":2}')
WEBSOCKET = {
    "server-text": b"\x00" + ws_frame(1, b'{"hello":"world"}'),
    "client-masked": b"\x11" + ws_frame(1, b"masked text", mask=MASK) + ws_frame(2, bytes(range(40)), mask=MASK),
    "fragments-and-ping": b"\x20" + ws_frame(1, b"Hel", fin=False) + ws_frame(9, b"p") + ws_frame(0, b"lo"),
    "close": b"\x00" + ws_frame(8, b"\x0f\xa1bye"),
    "len16": b"\x50" + ws_frame(2, b"z" * 300),
    "deflate-takeover": b"\x02" + ws_frame(1, _c1, rsv1=True) + ws_frame(1, _c2, rsv1=True),
    "deflate-client": b"\x0b" + ws_frame(1, ws_deflate(b"abcabcabc")[0], rsv1=True, mask=MASK),
    "reserved-opcode": b"\x00" + ws_frame(3, b""),
}

# Protobuf messages written from the encoding spec (no protobuf module needed).
PROTOBUF = {
    "varint": b"\x08\x96\x01",
    "string-nested": b"\x12\x07testing\x1a\x03\x08\x96\x01",
    "fixed": b"\x0d\x00\x00\x80\x3f\x09\x00\x00\x00\x00\x00\x00\xf8\x3f",
    "group": b"\x0b\x10\x01\x0c\x18\x02",
    "max-varint": b"\x08" + b"\xff" * 9 + b"\x01",
    "bytes": b"\x22\x02\xff\xfe",
    "packed": b"\x2a\x04\x01\x02\x03\x04",
    "deep": b"\x0b" * 30 + b"\x08\x01" + b"\x0c" * 30,
    "bad-wire-type": b"\x0f",
    "cut-length": b"\x12\x05ab",
}

# gRPC bodies: length-prefixed messages, one compressed, one cut short, one bad flag.
GRPC = {
    "two": b"\x00\x00\x00\x00\x03\x08\x96\x01\x01\x00\x00\x00\x02\xaa\xbb",
    "empty-message": b"\x00\x00\x00\x00\x00",
    "cut": b"\x00\x00\x00\x00\x09\x08\x01",
    "cut-prefix": b"\x00\x00\x00",
    "bad-flag": b"\x02\x00\x00\x00\x00",
}


def write(directory, seeds):
    path = os.path.join(HERE, directory)
    os.makedirs(path, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    write("http1", HTTP1)
    write("json", JSON)
    write("msgpack", MSGPACK)
    write("websocket", WEBSOCKET)
    write("protobuf", PROTOBUF)
    write("grpc", GRPC)
    print(f"http1: {len(HTTP1)} seeds, json: {len(JSON)} seeds, msgpack: {len(MSGPACK)} seeds, websocket: {len(WEBSOCKET)} seeds, "
          f"protobuf: {len(PROTOBUF)} seeds, grpc: {len(GRPC)} seeds")
