#!/usr/bin/env python3
"""Two Tapwire binaries, A and B, side by side: CPU per JSON request by thread group.

`make bench-ab A=old-binary B=new-binary` (ROUNDS=6, LOGGING=off for `log.enabled: false`;
LOGGING=on-off runs A with logging on and B with it off: with A=B, what logging costs by thread;
DOCUMENT=64k for the 64 KiB page instead of the 113-byte document).

Why side by side: on a shared machine the host's speed drifts within a minute, and a
change worth a few tenths of a µs per exchange hides in back-to-back rounds whose CPU per
request moves by a fifth. Here A and B run at the same time, each
with its own wrk (16 connections, 1 thread) against one origin, so both see the same
host. CPU comes from each thread's /proc stat, grouped by
the names Tapwire gives its threads (tapwire-loop-N, tapwire-ser-N, tapwire-writer,
tapwire-deflate, tapwire-archive), per request that process served.

It answers "does B cost less CPU per exchange than A", not "how fast is Tapwire": the
two compete for the same two cores, so their req/s are halves of a shared machine. Which one is
started, loaded and sampled first alternates every round. A round in which either
build dropped records (`log.whenBehind: drop`, the default, when decoding falls behind)
is marked: a build that drops does less work per request and looks cheaper.
A benchmark, not a test: it prints and exits 0.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_bench import (SMALL_JSON, WRK_SCRIPT, medium_json, Processes, free_port, metrics_records,  # noqa: E402
                         settle, start_origin, thread_cpu, wait_port, write)

LOADS = []  # wrk processes running, stopped on the way out


def wrk(port, origin_port, seconds, document):
    p = subprocess.Popen(
        ["wrk", "-c16", "-t1", "-d%ds" % seconds, "--timeout", "5s", "-s", WRK_SCRIPT,
         "http://127.0.0.1:%d/" % port, "--", "http://127.0.0.1:%d/%s" % (origin_port, document)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    p.seconds = seconds
    LOADS.append(p)
    return p


def output_of(p):
    try:
        return p.communicate(timeout=p.seconds + 30)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        return p.communicate()[0]
    finally:
        LOADS.remove(p)


def requests_of(out):
    """Requests wrk completed; 0 when it gave no result or any answer was not a 200 (a
    403 from an unreadable document would measure the `string` serializer instead)."""
    m = re.search(r"^RESULT (.*)$", out or "", re.M)
    if not m:
        return 0
    r = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    errors = sum(v for k, v in r.items() if k.endswith("errors") or k == "timeouts")
    return 0 if errors else r.get("requests", 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="binary A (the reference)")
    ap.add_argument("b", help="binary B")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--duration", type=int, default=8, help="seconds measured per round")
    ap.add_argument("--logging", choices=("on", "off", "on-off"), default="on",
                    help="on-off: A with logging on, B with it off (what logging costs, by thread)")
    ap.add_argument("--document", choices=("small", "64k"), default="small",
                    help="the 113-byte JSON document or the 64 KiB page of proxy_bench")
    args = ap.parse_args()
    binaries = [os.path.abspath(args.a), os.path.abspath(args.b)]
    for b in binaries:
        if not os.access(b, os.X_OK):
            raise SystemExit("not an executable: %s" % b)

    root = tempfile.mkdtemp(prefix="tapwire-ab-")
    os.chmod(root, 0o755)  # nginx workers run as nobody and must read the document
    procs = Processes()
    rows = ([], [])

    def on_signal(signum, _frame):
        raise SystemExit("stopped by signal %d" % signum)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        www = os.path.join(root, "www")
        os.makedirs(www)
        os.chmod(www, 0o755)
        write(os.path.join(www, "small.json"), SMALL_JSON.decode())
        with open(os.path.join(www, "64k.json"), "wb") as f:
            f.write(medium_json())
        os.chmod(os.path.join(www, "64k.json"), 0o644)
        document = "small.json" if args.document == "small" else "64k.json"
        origin_port, _ = start_origin(procs, root, www)
        print("A: %s\nB: %s\n%s, logging %s; %d rounds of %d s, both at once, wrk -c16 -t1 each\n" % (
            binaries[0], binaries[1], document, args.logging, args.rounds, args.duration), flush=True)
        for rnd in range(args.rounds):
            order = (0, 1) if rnd % 2 == 0 else (1, 0)  # which one starts first
            ports = {}
            running = {}
            for slot, i in enumerate(order):
                d = os.path.join(root, "r%d-%s" % (rnd, "AB"[i]))
                os.makedirs(d)
                port = free_port()
                log = {"directory": os.path.join(d, "logs")}
                if args.logging == "off" or (args.logging == "on-off" and i == 1):
                    log["enabled"] = False
                config = os.path.join(d, "tapwire.json")
                write(config, json.dumps({"listen": ["127.0.0.1:%d" % port], "log": log}))
                p = procs.start("tapwire-%s" % "AB"[i], [binaries[i], "run", "--config", config], d)
                if not wait_port(port, p):
                    raise SystemExit("%s did not start; see %s" % (binaries[i], p.out_path))
                ports[i], running[i] = port, p
            # Warm up (allocator, connections, the first rotation's files), then measure.
            for i, w in [(i, wrk(ports[i], origin_port, 2, document)) for i in (0, 1)]:
                out = output_of(w)
                if requests_of(out) == 0:
                    raise SystemExit("warm-up: wrk gave no result, or errors, for %s:\n%s" % ("AB"[i], out))
            settle([running[i].pid for i in (0, 1)])
            # Sampled and loaded in this round's order too, so neither always goes first.
            before = {i: thread_cpu(running[i].pid) for i in order}
            loads = {i: wrk(ports[i], origin_port, args.duration, document) for i in order}
            outs = {i: output_of(loads[i]) for i in order}
            # What the workers, the writer and the archiver still had queued counts too.
            settle([running[i].pid for i in (0, 1)])
            after = {i: thread_cpu(running[i].pid) for i in order}
            lost = {}
            for i in (0, 1):
                sums = metrics_records(ports[i], seconds=10)
                lost[i] = sums[2] if sums else None
                procs.stop(running[i])
            line = "round %d" % (rnd + 1)
            for i in (0, 1):
                n = requests_of(outs[i])
                if n == 0:
                    raise SystemExit("round %d: wrk gave no result, or errors, for %s:\n%s" % (rnd + 1, "AB"[i], outs[i]))
                row = {g: (after[i][g] - before[i].get(g, 0.0)) * 1e6 / n for g in after[i]}
                row["total"] = sum(row.values())
                row["req/s"] = n / args.duration
                rows[i].append(row)
                line += "   %s %6.0f req/s  total %5.2f  loops %5.2f  workers %4.2f" % (
                    "AB"[i], row["req/s"], row["total"], row.get("loops", 0), row.get("workers", 0))
                if (args.logging == "on" or (args.logging == "on-off" and i == 0)) and lost[i] != 0:
                    line += "  (%s records lost)" % ("?" if lost[i] is None else lost[i])
            print(line, flush=True)

        groups = sorted({g for r in rows[0] + rows[1] for g in r} - {"req/s", "total"}) + ["total"]
        # on-off: A logs and B does not, so A - B is what logging costs.
        sign, label = (-1, "A - B") if args.logging == "on-off" else (1, "B - A")
        print("\nCPU µs per request, medians of the rounds (%s: median of the rounds' differences%s)" % (
            label, "; logging's cost" if args.logging == "on-off" else ""))
        print("%-10s %8s %8s %8s" % ("", "A", "B", label))
        for g in groups:
            a = [r.get(g, 0.0) for r in rows[0]]
            b = [r.get(g, 0.0) for r in rows[1]]
            print("%-10s %8.2f %8.2f %+8.2f" % (g, statistics.median(a), statistics.median(b),
                                                 statistics.median(sign * (y - x) for x, y in zip(a, b))))
        diffs = [sign * (rb["total"] - ra["total"]) for ra, rb in zip(rows[0], rows[1])]
        line = "\ntotal %s by round: " % label + " ".join("%+.2f" % d for d in diffs)
        if args.logging != "on-off":
            line += "  (%d of %d rounds favour B)" % (sum(d < 0 for d in diffs), len(diffs))
        print(line)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        for p in LOADS:
            p.kill()
        procs.stop_all()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
