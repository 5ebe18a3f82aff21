#!/usr/bin/env python3
"""WebSocket echo of 1 KiB JSON messages through Tapwire with message records on, with
`capture.websocketMessages: false`, and through mitmproxy (when its venv has mitmdump), on
loopback: echoed messages per second, side by side in one run.

The origin and the load generator are WebSocketEcho/ws_echo.c (epoll, one process each),
so that the proxies, not the generator, set the figure: each round prints the CPU share of
the proxy, the origin and the generator, and what the rest of the machine took. The
generator reaches the proxy with CONNECT (as browsers do), keeps --window messages in
flight on each of --connections connections for --seconds, checks that every echo is
byte-identical to what it sent (it exits 1 otherwise, which fails the run), and waits for
every echo before closing. With records on, the wsMessage records written must be exactly
2x the messages echoed (each message is recorded once each way).

Goals (from the issue): records on >= 0.8x records off (median of the per-round pairs,
which run back to back), and >= 20x mitmproxy (fastest rounds). A benchmark, not a test:
exits 0 whatever the figures; --strict exits 1 when a goal fails or a record is missing.

    ws_bench.py --tapwire BIN --ws-echo BIN [--venv MITM_VENV] [--seconds 5] [--rounds 3]
"""
import argparse, gzip, urllib.request, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")
# Records on with `log.whenBehind: wait` (an 8 MiB decode queue, as proxy_bench.py's
# tapwire-wait): connections are held while decoding is behind, so every message is recorded
# and the rate is what recording costs. With the default (drop), a proxy-bound echo outruns
# decoding and the records past the queue become loss records: that rate says what
# forwarding costs, so the goals are judged on tapwire-wait; tapwire (the default) is shown.
WAIT_LOG = {"whenBehind": "wait", "decodeQueueBytes": 8 << 20}
RECORDING = ("tapwire-wait", "tapwire")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, seconds=20.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("port %d not ready" % port)


def start(argv, cwd, name):
    log = open(os.path.join(cwd, name + ".log"), "w")
    return subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def cpu(pid):
    """CPU seconds of a process, all threads (utime + stime from /proc/PID/stat)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def machine_busy():
    """CPU seconds the whole machine spent busy (user, nice, system, steal)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (v[0] + v[1] + v[2] + v[7]) / TICK


def settle(pid, seconds=20.0):
    """Waits until the process uses under 5% of a core: Tapwire's writer finishes a round's
    records after the generator stops, and that work must not land in the next round."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        before = cpu(pid)
        time.sleep(0.5)
        if cpu(pid) - before < 0.025:
            return


def mitmproxy_goal(best, median, label, venv, note=""):
    """Prints the >= 20x mitmproxy goal for `label` (fastest rounds, medians beside);
    True when it is missed. Without mitmproxy installed, says so and misses nothing."""
    if "mitmproxy" not in best:
        print("mitmproxy: not installed in %s (make bench-deps)" % venv)
        return False
    vs = best[label] / max(1.0, best["mitmproxy"])
    print("goal >= 20x mitmproxy%s: %.1fx %s (medians %.1fx)" % (
        note, vs, "ok" if vs >= 20 else "MISSED", median[label] / max(1.0, median["mitmproxy"])))
    return vs < 20


def stop_all(started, root):
    """Stops every process started and removes the temp dir (the run's `finally`)."""
    signal.alarm(0)
    for p in started.values():
        stop(p)
    shutil.rmtree(root, ignore_errors=True)


def run_round(args, label, proxy, origin):
    records = label in RECORDING
    written0 = records_metric(args.ports[label]) if records else 0
    wall0, busy0, p0, o0 = time.monotonic(), machine_busy(), cpu(proxy.pid), cpu(origin.pid)
    out = subprocess.run([args.ws_echo, "load", str(args.ports[label]), str(args.origin_port), str(args.connections),
                          str(args.window), str(args.seconds)], capture_output=True, text=True,
                         timeout=args.seconds + 90)
    wall = time.monotonic() - wall0
    if out.returncode != 0:
        raise RuntimeError("%s: the load generator failed: %s" % (label, out.stderr.strip() or out.returncode))
    r = json.loads(out.stdout.strip().splitlines()[-1])
    proxy_cpu, origin_cpu = cpu(proxy.pid) - p0, cpu(origin.pid) - o0
    other = max(0.0, machine_busy() - busy0 - proxy_cpu - origin_cpu - r["cpuSeconds"])
    # The share of this round's messages that got their two wsMessage records (the records
    # written, less one websocket record a connection): with `drop`, Tapwire stops parsing a
    # connection whose pieces the decode queue dropped (frameError) and relays the rest, and
    # a message relayed without its records must not count as one recorded; with `wait` the
    # connection is held instead, so the share is 1.
    recorded = 1.0
    if records:
        settle(proxy.pid)
        written = records_metric(args.ports[label]) - written0 - args.connections
        recorded = min(1.0, written / max(1, 2 * r["echoedTotal"]))
    return {
        "rate": r["echoed"] / r["seconds"], "echoed": r["echoedTotal"], "recorded": recorded,
        "recorded_rate": recorded * r["echoed"] / r["seconds"],
        # Shares of one core over the round (handshakes and draining included for the
        # proxy and the origin; the generator's is over its sending window).
        "proxy": proxy_cpu / wall, "origin": origin_cpu / wall, "generator": r["cpuSeconds"] / r["seconds"],
        "other": other / wall, "us_per_msg": 1e6 * proxy_cpu / max(1, r["echoedTotal"]),
    }


def records_metric(port):
    """tapwire_records_written_total from Tapwire's /metrics (its own listener answers it)."""
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in body.splitlines()
               if line.startswith("tapwire_records_written_total"))


def count_records(logs):
    records = lost = frame_errors = 0
    for name in os.listdir(logs) if os.path.isdir(logs) else []:
        if name.endswith(".jsonl") or name.endswith(".jsonl.gz"):
            path = os.path.join(logs, name)
            with (gzip.open(path, "rb") if name.endswith(".gz") else open(path, "rb")) as f:
                for line in f:
                    if b'"kind":"wsMessage"' in line:
                        records += 1
                    elif b'"kind":"loss"' in line:
                        lost += int(json.loads(line).get("lost", 0))
                    elif b'"frameError":"' in line:
                        frame_errors += 1
    return records, lost, frame_errors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tapwire", default=os.path.join(HERE, "..", ".build", "release", "tapwire"))
    ap.add_argument("--ws-echo", default=os.path.join(HERE, "..", ".build", "ws-echo"),
                    help="WebSocketEcho/ws_echo.c, built (make bench builds it)")
    ap.add_argument("--venv", default=os.path.join(HERE, ".venv"), help="venv holding mitmdump")
    ap.add_argument("--seconds", type=float, default=5, help="sending window of a round")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--window", type=int, default=32, help="messages in flight per connection")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600, help="bound on the whole run, seconds")
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args()
    args.venv = os.path.abspath(args.venv)  # children run in the temp dir
    args.tapwire, args.ws_echo = os.path.abspath(args.tapwire), os.path.abspath(args.ws_echo)
    if not os.access(args.ws_echo, os.X_OK):
        print("ws_bench: no %s (gcc -O2 -o %s Benchmarks/WebSocketEcho/ws_echo.c -lcrypto)" % (args.ws_echo, args.ws_echo),
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("--timeout %g s ran out" % args.timeout)))
    signal.alarm(int(args.timeout))
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda *_: sys.exit(1))
    root = tempfile.mkdtemp(prefix="tapwire-ws-bench-")
    started = {}
    try:
        args.origin_port = free_port()
        origin = start([args.ws_echo, "serve", str(args.origin_port), str(int(args.timeout) + 60)], root, "origin")
        wait_port(args.origin_port, origin)
        started["origin"] = origin
        args.ports = {}
        for label, on, log in (("tapwire-wait", True, WAIT_LOG), ("tapwire-nomsg", False, {}), ("tapwire", True, {})):
            d = os.path.join(root, label)
            os.makedirs(d)
            port = free_port()
            config = os.path.join(d, "tapwire.json")
            with open(config, "w") as f:
                json.dump({"listen": ["127.0.0.1:%d" % port], "log": dict(directory=os.path.join(d, "logs"), maxFiles=1000, **log),
                           "capture": {"websocketMessages": on}}, f)
            started[label] = start([args.tapwire, "run", "--config", config], d, label)
            wait_port(port, started[label])
            args.ports[label] = port
        mitmdump = os.path.join(args.venv, "bin", "mitmdump")
        if os.access(mitmdump, os.X_OK):
            d = os.path.join(root, "mitmproxy")
            os.makedirs(d)
            port = free_port()
            started["mitmproxy"] = start([mitmdump, "--listen-host", "127.0.0.1", "--listen-port", str(port),
                                          "--set", "flow_detail=0", "--set", "confdir=" + d + "/conf"], d, "mitmproxy")
            wait_port(port, started["mitmproxy"], 60)
            args.ports["mitmproxy"] = port
        print("WebSocket echo, 1 KiB JSON text, %d connections x %d in flight, %g s a round, %d rounds"
              % (args.connections, args.window, args.seconds, args.rounds), flush=True)
        results = {label: [] for label in args.ports}
        pairs = []
        for r in range(args.rounds):
            # records on and off back to back, their order alternating; mitmproxy after them.
            order = ["tapwire-wait", "tapwire-nomsg"] if r % 2 == 0 else ["tapwire-nomsg", "tapwire-wait"]
            order += [label for label in args.ports if label not in order]
            for label in order:
                m = run_round(args, label, started[label], origin)
                results[label].append(m)
                print("round %d %-14s %9.0f msg/s, recorded %6s  CPU (cores): proxy %.2f, origin %.2f, generator %.2f, others %.2f;"
                      " proxy %.1f us/msg" % (r + 1, label, m["rate"], "%.1f%%" % (100 * m["recorded"]) if label in RECORDING else "-", m["proxy"], m["origin"], m["generator"],
                                             m["other"], m["us_per_msg"]), flush=True)
                if label.startswith("tapwire"):
                    settle(started[label].pid)
            pairs.append(results["tapwire-wait"][-1]["recorded_rate"] / max(1.0, results["tapwire-nomsg"][-1]["rate"]))

        # Counted once Tapwire has stopped: it writes what it accepted before exiting.
        counts = {}
        for label in ("tapwire-wait", "tapwire"):
            stop(started[label])
            counts[label] = count_records(os.path.join(root, label, "logs")) + (sum(m["echoed"] for m in results[label]),)
        # Records on are credited with the messages recorded only (see run_round).
        best = {label: max(m["recorded_rate"] for m in ms) for label, ms in results.items()}
        median = {label: statistics.median(m["recorded_rate"] for m in ms) for label, ms in results.items()}
        print("\n| proxy | best msg/s | median msg/s | recorded (median) | proxy CPU us/msg (median) | proxy cores | generator cores |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for label, ms in results.items():
            print("| %s | %.0f | %.0f | %s | %.1f | %.2f | %.2f |" % (
                label, max(m["rate"] for m in ms), statistics.median(m["rate"] for m in ms),
                "%.1f%%" % (100 * statistics.median(m["recorded"] for m in ms)) if label in RECORDING else "", statistics.median(m["us_per_msg"] for m in ms),
                statistics.median(m["proxy"] for m in ms), statistics.median(m["generator"] for m in ms)))
        failed = False
        print()
        for label, (records, lost, frame_errors, echoed) in counts.items():
            lossless = records == 2 * echoed and lost == 0 and frame_errors == 0
            if label == "tapwire-wait":
                failed |= not lossless
            print("%s: wsMessage records written %d for %d messages echoed (2x = %d): %s; lost %d, frameErrors %d" % (
                label, records, echoed, 2 * echoed, "ok" if lossless else
                ("MISSED" if label == "tapwire-wait" else "records dropped (log.whenBehind: drop)"), lost, frame_errors))
        ratio = statistics.median(pairs)
        ok = ratio >= 0.8
        failed |= not ok
        print("goal records on (whenBehind wait, recorded messages only) >= 0.8x off: %.2fx %s (pairs %s; fastest rounds %.2fx)" % (
            ratio, "ok" if ok else "MISSED", ", ".join("%.2f" % p for p in pairs),
            best["tapwire-wait"] / max(1.0, best["tapwire-nomsg"])))
        print("records on, default whenBehind drop: %.2fx off (medians)" % (
            median["tapwire"] / max(1.0, median["tapwire-nomsg"])))
        failed |= mitmproxy_goal(best, median, "tapwire-wait", args.venv)
        return 1 if failed and args.strict else 0
    finally:
        stop_all(started, root)


if __name__ == "__main__":
    sys.exit(main())
