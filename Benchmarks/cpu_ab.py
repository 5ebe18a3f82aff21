#!/usr/bin/env python3
"""Two Tapwire binaries, A and B, side by side: CPU per small-JSON request by thread group.

`make bench-ab A=old-binary B=new-binary` (ROUNDS=6, LOGGING=off for `log.enabled: false`).

Why side by side: on this shared VM the host's speed drifts within a minute (nginx did
38-52k req/s on the same day), so a change worth 0.3 µs per exchange hid in back-to-back
rounds whose CPU per request moved by 20%. Here A and B run at the same time, each
with its own wrk (16 connections, 1 thread) against one origin, so both see the same
host; the ports swap every round. CPU comes from each thread's /proc stat, grouped by
the names Tapwire gives its threads (tapwire-loop-N, tapwire-ser-N, tapwire-writer,
tapwire-deflate, tapwire-archive), per request that process served.

It answers "does B cost less CPU per exchange than A", not "how fast is Tapwire": the
two compete for the same two cores, so their req/s are halves of a shared machine.
A benchmark, not a test: it prints and exits 0.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proxy_bench import (SMALL_JSON, WRK_SCRIPT, Processes, free_port, start_origin,  # noqa: E402
                         wait_port, write)


def thread_cpu(pid):
    """CPU seconds by thread group of process `pid`."""
    groups = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in glob.glob("/proc/%d/task/*" % pid):
        try:
            with open(task + "/stat") as f:
                stat = f.read()
        except OSError:
            continue  # a thread that ended
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        group = ("loops" if "loop" in name else "workers" if "ser-" in name
                 else name.replace("tapwire-", "") if name.startswith("tapwire-") else "other")
        groups[group] = groups.get(group, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return groups


def wrk(port, origin_port, seconds):
    return subprocess.Popen(
        ["wrk", "-c16", "-t1", "-d%ds" % seconds, "--timeout", "5s", "-s", WRK_SCRIPT,
         "http://127.0.0.1:%d/" % port, "--", "http://127.0.0.1:%d/small.json" % origin_port],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def requests_of(out):
    """Requests wrk completed; 0 when it gave no result or any answer was not a 200 (a
    403 from an unreadable document measured the `string` serializer instead)."""
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
    ap.add_argument("--logging", choices=("on", "off"), default="on")
    args = ap.parse_args()
    binaries = [os.path.abspath(args.a), os.path.abspath(args.b)]
    for b in binaries:
        if not os.access(b, os.X_OK):
            raise SystemExit("not an executable: %s" % b)

    root = tempfile.mkdtemp(prefix="tapwire-ab-")
    os.chmod(root, 0o755)  # nginx workers run as nobody and must read the document
    procs = Processes()
    rows = ([], [])
    try:
        www = os.path.join(root, "www")
        os.makedirs(www)
        os.chmod(www, 0o755)
        write(os.path.join(www, "small.json"), SMALL_JSON.decode())
        origin_port, _ = start_origin(procs, root, www)
        print("A: %s\nB: %s\nlogging %s; %d rounds of %d s, both at once, wrk -c16 -t1 each\n" % (
            binaries[0], binaries[1], args.logging, args.rounds, args.duration), flush=True)
        for rnd in range(args.rounds):
            order = (0, 1) if rnd % 2 == 0 else (1, 0)  # which one gets the first port
            ports = {}
            running = {}
            for slot, i in enumerate(order):
                d = os.path.join(root, "r%d-%s" % (rnd, "AB"[i]))
                os.makedirs(d)
                port = free_port()
                log = {"directory": os.path.join(d, "logs")}
                if args.logging == "off":
                    log["enabled"] = False
                config = os.path.join(d, "tapwire.json")
                write(config, json.dumps({"listen": ["127.0.0.1:%d" % port], "log": log}))
                p = procs.start("tapwire-%s" % "AB"[i], [binaries[i], "run", "--config", config], d)
                if not wait_port(port, p):
                    raise SystemExit("%s did not start; see %s" % (binaries[i], p.out_path))
                ports[i], running[i] = port, p
            # Warm up (allocator, connections, the first rotation's files), then measure.
            for w in [wrk(ports[i], origin_port, 2) for i in (0, 1)]:
                w.communicate()
            time.sleep(1)
            before = {i: thread_cpu(running[i].pid) for i in (0, 1)}
            loads = {i: wrk(ports[i], origin_port, args.duration) for i in (0, 1)}
            outs = {i: loads[i].communicate()[0] for i in (0, 1)}
            time.sleep(1.5)  # what the workers and the writer still had queued
            after = {i: thread_cpu(running[i].pid) for i in (0, 1)}
            for i in (0, 1):
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
            print(line, flush=True)

        groups = sorted({g for r in rows[0] + rows[1] for g in r} - {"req/s", "total"}) + ["total"]
        print("\nCPU µs per request, medians of the rounds (B - A: median of the rounds' differences)")
        print("%-10s %8s %8s %8s" % ("", "A", "B", "B - A"))
        for g in groups:
            a = [r.get(g, 0.0) for r in rows[0]]
            b = [r.get(g, 0.0) for r in rows[1]]
            print("%-10s %8.2f %8.2f %+8.2f" % (g, statistics.median(a), statistics.median(b),
                                                 statistics.median(y - x for x, y in zip(a, b))))
        diffs = [rb["total"] - ra["total"] for ra, rb in zip(rows[0], rows[1])]
        print("\ntotal B - A by round: " + " ".join("%+.2f" % d for d in diffs) +
              "  (%d of %d rounds favour B)" % (sum(d < 0 for d in diffs), len(diffs)))
    finally:
        procs.stop_all()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
