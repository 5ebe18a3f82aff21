#!/usr/bin/env python3
"""`make bench-query`: `tapwire query --count` against DuckDB and zcat | grep over one log.

Builds (once; reused while its parameters match) a log of realistic records: 1 GiB or more of
JSON Lines split into rotated .gz files and the active file, as the proxy leaves them. Then,
for each query, times Tapwire, DuckDB's read_json_auto over the same files and `zcat | grep -c`,
prints the counts (they must agree where the tools ask the same question) and the ratios, and
times `tapwire query --reverse --limit 50`.

A benchmark, not a test: it exits 0 whatever the figures (1 when the counts disagree or a tool
fails); `--strict` also exits 1 when a goal is missed.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
import zlib

GIB = 1 << 30
ROTATE = 64 << 20          # the default log.maxFileSize: one rotated file per 64 MiB
NEEDLE = "kestrelfinch"    # the word the body-text query looks for (~1 record in 1,000)


def record(i, rng, t0):
    """One http record shaped like the writer's (Sources/ExchangeLog/RecordEncoder.swift)."""
    r = rng.random()
    status = 200 if r < 0.90 else (404 if r < 0.95 else (503 if r < 0.97 else (500 if r < 0.98 else 201)))
    method = "POST" if rng.random() < 0.2 else "GET"
    host = rng.choice(["api.example.com", "shop.example.com", "auth.internal", "cdn.example.net"])
    path = rng.choice(["/v1/users/%d" % rng.randrange(100000), "/v1/orders", "/v2/search", "/health", "/v1/items/%d" % rng.randrange(5000)])
    start = t0 + i * 0.004
    stamp = lambda s: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%06dZ" % int((s % 1) * 1e6)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    note = " ".join(rng.choice(words) for _ in range(rng.randrange(5, 40)))
    if rng.random() < 0.001:
        note += " " + NEEDLE.upper()[:1] + NEEDLE[1:]
    role = "admin" if rng.random() < 0.01 else rng.choice(["member", "guest", "owner"])
    value = {"user": {"id": rng.randrange(10 ** 12), "login": "user%d" % rng.randrange(10 ** 6), "role": role,
                      "email": "u%d@example.com" % rng.randrange(10 ** 6)},
             "items": [{"id": rng.randrange(10 ** 6), "name": rng.choice(words), "price": round(rng.random() * 100, 2)}
                       for _ in range(rng.randrange(1, 12))],
             "note": note, "page": rng.randrange(50)}
    request = {"method": method, "url": "https://%s%s?page=%d" % (host, path, rng.randrange(10)), "httpVersion": "HTTP/1.1",
               "headers": [["Host", host], ["User-Agent", "bench/1.0"], ["Accept", "application/json"],
                           ["Authorization", "[redacted]"], ["X-Request-Id", "%032x" % rng.getrandbits(128)]],
               "bodySize": 0}
    if method == "POST":
        request["headers"].append(["Content-Type", "application/json"])
        request["body"] = {"query": rng.choice(words), "limit": rng.randrange(100)}
        request["bodySize"] = 40
    body_size = rng.randrange(300, 3000)
    rec = {"id": "0000018c2b1f4a1e-%06d" % i, "kind": "http", "client": "127.0.0.1:%d" % rng.randrange(30000, 60000),
           "request": request,
           "response": {"status": status, "reason": "OK", "httpVersion": "HTTP/1.1",
                        "headers": [["Content-Type", "application/json"], ["Content-Length", str(body_size)],
                                    ["Date", "Fri, 04 Dec 2026 10:00:00 GMT"], ["X-Trace", "%016x" % rng.getrandbits(64)]],
                        "bodySize": body_size, "mimeType": "application/json", "charset": None},
           "data": {"size": body_size, "captured": body_size, "truncated": False, "contentEncoding": None},
           "rule": "default", "serializer": "json", "result": {"success": value}, "error": None,
           "timeline": {"requestStartTime": stamp(start), "initialResponseTime": stamp(start + 0.001),
                        "requestCompletedTime": stamp(start + 0.002), "serializationCompletedTime": stamp(start + 0.0021),
                        "latency": 0.00121, "requestDuration": round(rng.random() * 0.5, 6),
                        "serializationDuration": 0.00003, "totalDuration": 0.00208},
           "metrics": {"dns": None, "connect": 0.00011, "tls": None, "send": 0.00001, "wait": 0.0011,
                       "receive": 0.00084, "connectionReused": True, "upstream": "10.0.0.%d:443" % rng.randrange(1, 9)}}
    return json.dumps(rec, separators=(",", ":"))


def build(directory, total, seed):
    marker = os.path.join(directory, ".bench-log")
    want = "%d %d %d\n" % (total, ROTATE, seed)
    if os.path.exists(marker) and open(marker).read() == want:
        return
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    rng = random.Random(seed)
    t0 = 1796378400.0   # 2026-12-04T10:00:00Z
    written, i, part = 0, 0, 0
    print("building %.2f GiB of records in %s ..." % (total / GIB, directory), flush=True)
    while written < total:
        lines = []
        size = 0
        while size < ROTATE and written + size < total:
            line = record(i, rng, t0) + "\n"
            lines.append(line)
            size += len(line)
            i += 1
        data = "".join(lines).encode()
        written += len(data)
        last = written >= total
        if last:
            with open(os.path.join(directory, "tapwire.jsonl"), "wb") as f:
                f.write(data)
        else:
            name = "tapwire-%s.jsonl.gz" % time.strftime("%Y%m%dT%H%M%S", time.gmtime(t0 + part * 60))
            with open(os.path.join(directory, name), "wb") as f:
                # Level 1, as the archiver writes (ISA-L's fastest level compresses about as much).
                c = zlib.compressobj(1, zlib.DEFLATED, 31)
                f.write(c.compress(data) + c.flush())
            part += 1
        print("  %d records, %.2f GiB" % (i, written / GIB), flush=True)
    open(marker, "w").write(want)


def timed(command, shell=False):
    start = time.perf_counter()
    out = subprocess.run(command, shell=shell, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (command, out.stderr.strip()[:400]))
    return elapsed, out.stdout.strip()


def best_of(runs, command, shell=False):
    results = [timed(command, shell) for _ in range(runs)]
    return min(r[0] for r in results), results[-1][1]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tapwire", required=True)
    p.add_argument("--python", default=sys.executable, help="a python with duckdb")
    p.add_argument("--dir", default=".build/bench-query-log")
    p.add_argument("--gib", type=float, default=1.0)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--strict", action="store_true")
    a = p.parse_args()

    build(a.dir, int(a.gib * GIB), 7)
    files = sorted(f for f in os.listdir(a.dir) if f.endswith(".gz")) + ["tapwire.jsonl"]
    paths = [os.path.join(a.dir, f) for f in files]
    print("log: %.2f GiB of records (uncompressed) in %d rotated .gz files (%d MiB on disk) and the active file (%d MiB), %s"
          % (a.gib, len(files) - 1, sum(os.path.getsize(p) for p in paths[:-1]) >> 20, os.path.getsize(paths[-1]) >> 20, a.dir))
    print("cores: %d, load average: %s (the machine is shared: figures vary)" % (os.cpu_count(), os.getloadavg()))

    file_list = "[" + ",".join("'%s'" % p for p in paths) + "]"
    duck = lambda where: [a.python, "-c",
                          "import duckdb,sys; c=duckdb.connect(); c.execute('SET enable_progress_bar=false'); print(c.execute(sys.argv[1]).fetchone()[0])",
                          "SELECT count(*) FROM read_json_auto(%s, format='newline_delimited', maximum_object_size=16777216) WHERE %s" % (file_list, where)]
    cat = "( zcat %s; cat %s )" % (" ".join(paths[:-1]), paths[-1])
    queries = [
        ("status>=500", ["status>=500"], "response.status >= 500",
         cat + " | grep -cE '\"response\":\\{\"status\":(5[0-9][0-9])'"),
        ("JSON pointer", ["json:/user/role=admin"], "result.success.user.role = 'admin'",
         cat + " | grep -c '\"role\":\"admin\"'"),
        ("body text", [NEEDLE], "lower(CAST(result AS VARCHAR)) LIKE '%%%s%%' OR lower(CAST(request AS VARCHAR)) LIKE '%%%s%%'" % (NEEDLE, NEEDLE),
         cat + " | grep -ci " + NEEDLE),
    ]
    ok = True
    goals = True
    print("\n%-14s %10s %10s %10s   %8s %8s   counts (tapwire / duckdb / grep)" % ("query", "tapwire s", "duckdb s", "grep s", "duck/tw", "grep/tw"))
    for name, expr, where, grep in queries:
        tw, tw_count = best_of(a.runs, [a.tapwire, "query", "--log-dir", a.dir, "--count"] + expr)
        try:
            dk, dk_count = best_of(a.runs, duck(where))
        except RuntimeError as e:
            dk, dk_count = float("nan"), "error: %s" % e
            ok = False
        gp, gp_count = best_of(a.runs, grep, shell=True)
        print("%-14s %10.2f %10.2f %10.2f   %8.2f %8.2f   %s / %s / %s" % (name, tw, dk, gp, dk / tw, gp / tw, tw_count, dk_count, gp_count))
        if tw_count != dk_count:
            ok = False
            print("  counts differ")
        if not dk >= tw:
            goals = False
    rv, out = best_of(max(3, a.runs), [a.tapwire, "query", "--log-dir", a.dir, "--reverse", "--limit", "50", "status>=500"])
    lines = out.count("\n") + 1 if out else 0
    print("\n--reverse --limit 50 status>=500: %.3f s (%d lines; goal < 0.3 s)" % (rv, lines))
    if rv >= 0.3:
        goals = False
    print("goals: %s" % ("PASS" if goals else "MISSED"))
    if not ok:
        sys.exit(1)
    if a.strict and not goals:
        sys.exit(1)


if __name__ == "__main__":
    main()
