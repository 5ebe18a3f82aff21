#!/usr/bin/env python3
"""MessagePack cases for MsgPackDecoderTests: one JSON object a line,
{"name", "hex": the bytes the Python `msgpack` package packed, "json": the record
value MsgPackDecoder's documented mapping gives, worked out here from the Python value}.

Run by the test itself (python3 with the msgpack module: Debian's python3-msgpack,
installed by `make test-deps`), so the two sides are independent implementations.
"""
import base64
import datetime
import json
import math
import struct
import sys

import msgpack


def b64(data):
    return base64.b64encode(data).decode("ascii")


def float32_text(x):
    """Shortest decimal that reads back as the same float 32."""
    bits = struct.pack(">f", x)
    for digits in range(1, 10):
        text = "%.*g" % (digits, x)
        try:
            if struct.pack(">f", float(text)) == bits:
                return text if ("." in text or "e" in text) else text + ".0"
        except OverflowError:  # rounded past the largest float 32
            pass
    raise AssertionError(x)


def timestamp_text(ts):
    if not (1 <= ts.seconds // 86400 + 719163 <= 3652059):  # years 0001..9999 for datetime
        return None
    when = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=ts.seconds)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    text = "%04d%s" % (when.year, text[text.index("-"):])
    if ts.nanoseconds:
        text += ("." + "%09d" % ts.nanoseconds).rstrip("0")
    return text + "Z"


class F32:
    """A float packed as float 32."""
    def __init__(self, value):
        self.value = value


def expected(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, F32):
        x = struct.unpack(">f", struct.pack(">f", value.value))[0]
        return special(x) or Raw(float32_text(x))
    if isinstance(value, float):
        return special(value) or Raw(repr(value))
    if isinstance(value, bytes):
        return {"base64": b64(value)}
    # Before tuples: ExtType is a named tuple.
    if isinstance(value, msgpack.ExtType):
        return {"ext": value.code, "base64": b64(value.data)}
    if isinstance(value, msgpack.Timestamp):
        text = timestamp_text(value)
        return text if text is not None else {"ext": -1, "base64": b64(value.to_bytes())}
    if isinstance(value, (list, tuple)):
        return [expected(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = k if isinstance(k, str) else dumps(expected(k))
            out[key] = expected(v)
        return out
    raise TypeError(type(value))


def special(x):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return None


class Raw:
    """Number text to write as it is (a float's shortest form)."""
    def __init__(self, text):
        self.text = text


def dumps(value):
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dumps(v) for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def pack(value):
    if isinstance(value, F32):
        return msgpack.packb(value.value, use_single_float=True)
    if isinstance(value, (list, tuple)) and any(isinstance(v, F32) for v in value):
        return msgpack.packb(list(value), default=None, use_single_float=True)
    return msgpack.packb(value, use_bin_type=True)


CASES = [
    ("nil", None), ("true", True), ("false", False),
    # Every integer encoding's edges: fixint, uint 8/16/32/64, negative fixint, int 8/16/32/64.
    *[("int %d" % n, n) for n in [
        0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1,
        -1, -32, -33, -128, -129, -32768, -32769, -2**31, -2**31 - 1, -2**53 - 1, -2**63]],
    *[("float64 %r" % x, x) for x in [
        0.0, -0.0, 1.0, 0.1, -2.5, 1e-5, 1e16, 1e22, 123456789012345678.0, 5e-324, 2.2250738585072014e-308,
        1.7976931348623157e308, math.pi, float("nan"), float("inf"), float("-inf")]],
    *[("float32 %r" % x, F32(x)) for x in [
        0.0, -0.0, 1.0, 0.1, -2.5, 1e-5, 3.4028234663852886e38, 1.401298464324817e-45, 16777217.0,
        math.pi, float("nan"), float("inf"), float("-inf")]],
    ("fixstr empty", ""), ("fixstr", "hello"), ("str 8", "x" * 40), ("str 16", "é" * 300),
    ("str 32", "long " * 14000), ("str unicode", "snow ☃, emoji 😀, quote \" backslash \\ nl \n"),
    ("bin 8 empty", b""), ("bin 8", bytes(range(200))), ("bin 16", bytes(range(256)) * 4),
    ("bin 32", b"\x00\xff" * 40000),
    ("fixarray", [1, "two", None, True]), ("array 16", list(range(20))), ("array 32", list(range(70000))),
    ("nested", [[[], {}], {"a": [1, {"b": [2.5, None]}]}]),
    ("fixmap", {"a": 1, "b": [1, 2]}), ("map 16", {"k%d" % i: i for i in range(20)}),
    ("map 32", {"k%d" % i: i for i in range(70000)}),
    ("map int keys", {1: "one", -5: "minus five", 2**64 - 1: "max"}),
    ("map other keys", {None: 0, True: 1, False: 2, b"\x01\x02": 3, (1, "x"): 4, "s": 5}),
    *[("fixext %d" % n, msgpack.ExtType(5, bytes(range(n)))) for n in (1, 2, 4, 8, 16)],
    *[("ext %d bytes" % n, msgpack.ExtType(7, bytes(n))) for n in (0, 3, 300, 70000)],
    ("ext 127", msgpack.ExtType(127, b"z")),
    # Timestamps: 32-bit (seconds only), 64-bit (nanoseconds, seconds < 2^34), 96-bit (negative or large).
    ("timestamp 32 epoch", msgpack.Timestamp(0, 0)),
    ("timestamp 32", msgpack.Timestamp(1_796_410_000, 0)),
    ("timestamp 32 max", msgpack.Timestamp(2**32 - 1, 0)),
    ("timestamp 64", msgpack.Timestamp(1_796_410_000, 123_456_789)),
    ("timestamp 64 ms", msgpack.Timestamp(951_782_400, 500_000_000)),
    ("timestamp 64 large", msgpack.Timestamp(2**34 - 1, 999_999_999)),
    ("timestamp 96 negative", msgpack.Timestamp(-1, 999_999_999)),
    ("timestamp 96 1900", msgpack.Timestamp(-2_208_988_800, 1)),
    ("timestamp 96 year 1", msgpack.Timestamp(-62_135_596_800, 0)),
    ("timestamp 96 year 9999", msgpack.Timestamp(253_402_300_799, 999_999_999)),
    ("timestamp 96 year 10000", msgpack.Timestamp(253_402_300_800, 0)),
    ("timestamp in a map", {"at": msgpack.Timestamp(86_400 * 59, 0), "leap": msgpack.Timestamp(86_400 * 790, 0)}),
]

# Encodings Python never chooses for these values (it packs minimally), which other packers do send.
HAND_MADE = [
    ("uint 64 small", "cf0000000000000005", "5"),
    ("uint 32 small", "ce00000005", "5"),
    ("int 64 positive", "d30000000000000005", "5"),
    ("int 8 positive", "d005", "5"),
    ("int 16 negative", "d1ffff", "-1"),
    ("str 32 short", "db00000002" + "6869", '"hi"'),
    ("array 32 short", "dd00000001c0", "[null]"),
    ("map 16 short", "de0001a16101", '{"a":1}'),
    ("float 64 of a float 32 value", "cb3fb99999a0000000", "0.10000000149011612"),
    # Negative extension types are reserved for the spec, which the packer refuses to make.
    ("ext 8 type -7", "c701f900", '{"ext":-7,"base64":"AA=="}'),
    ("fixext 1 type -128", "d4807a", '{"ext":-128,"base64":"eg=="}'),
    # Timestamps with no RFC 3339 text keep the extension form.
    ("timestamp of 5 bytes", "c705ff0000000000", '{"ext":-1,"base64":"AAAAAAA="}'),
    ("timestamp 64 nanoseconds too large", "d7ff" + struct.pack(">Q", 1_000_000_000 << 34).hex(),
     '{"ext":-1,"base64":"%s"}' % b64(struct.pack(">Q", 1_000_000_000 << 34))),
    ("timestamp 96 nanoseconds too large", "c70cff" + struct.pack(">Iq", 1_000_000_000, 0).hex(),
     '{"ext":-1,"base64":"%s"}' % b64(struct.pack(">Iq", 1_000_000_000, 0))),
    ("timestamp 96 year 0", "c70cff" + struct.pack(">Iq", 0, -62_167_219_200).hex(), '"0000-01-01T00:00:00Z"'),
    ("timestamp 96 before year 0", "c70cff" + struct.pack(">Iq", 0, -62_167_219_201).hex(),
     '{"ext":-1,"base64":"%s"}' % b64(struct.pack(">Iq", 0, -62_167_219_201))),
    ("timestamp 96 most negative", "c70cff" + struct.pack(">Iq", 5, -2**63).hex(),
     '{"ext":-1,"base64":"%s"}' % b64(struct.pack(">Iq", 5, -2**63))),
]

for name, value in CASES:
    print(json.dumps({"name": name, "hex": pack(value).hex(), "json": dumps(expected(value))}))
for name, hexed, text in HAND_MADE:
    print(json.dumps({"name": name, "hex": hexed, "json": text}))
sys.stdout.flush()
