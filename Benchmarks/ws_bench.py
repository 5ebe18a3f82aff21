#!/usr/bin/env python3
"""WebSocket echo of 1 KiB JSON messages through Tapwire with message records on, with
`capture.websocketMessages: false`, and through mitmproxy (when its venv has mitmdump), on
loopback: messages per second (each echoed message counts once).

The clients and the echo origin are the `websockets` package; clients reach the proxy with
CONNECT, as browsers do. Goals (from the issue): records on >= 0.8x records off, and
>= 20x mitmproxy. A benchmark, not a test: exits 0 whatever the figures; --strict exits 1
when a goal fails. Client-side CPU is part of every figure (Python clients): on a small
machine the ratio to records-off says more than the absolute rate.

    ws_bench.py --tapwire BIN --python PY [--venv MITM_VENV] [--seconds 5] [--clients 2] [--connections 8]
"""
import argparse, asyncio, gzip, json, os, shutil, signal, socket, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
def one_kib_json():
    """A JSON document of exactly 1024 bytes (valid: the records' JSON path is measured)."""
    doc = {"id": 1, "items": [{"name": "item-%d" % i, "price": i * 1.5, "tags": ["a", "b"]} for i in range(14)], "pad": ""}
    doc["pad"] = "x" * (1024 - len(json.dumps(doc, separators=(",", ":"))))
    text = json.dumps(doc, separators=(",", ":"))
    assert len(text) == 1024, len(text)
    return text


MESSAGE = one_kib_json()


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


# ---- child modes: the echo origin and one client process ----

async def serve(port):
    from websockets.asyncio.server import serve as ws_serve

    async def echo(ws):
        async for m in ws:
            await ws.send(m)
    async with ws_serve(echo, "127.0.0.1", port, compression=None, max_size=None):
        await asyncio.Future()


async def clients(proxy, uri, seconds, connections):
    from websockets.asyncio.client import connect
    counts = [0] * connections

    async def one(i):
        async with connect(uri, proxy=proxy, compression=None, max_size=None, open_timeout=20) as ws:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                await ws.send(MESSAGE)
                await ws.recv()
                counts[i] += 1
    await asyncio.gather(*(one(i) for i in range(connections)))
    print(sum(counts), flush=True)


# ---- the driver ----

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


def rate(args, proxy_port, origin_port):
    procs = [subprocess.Popen([args.python, __file__, "--client", "http://127.0.0.1:%d" % proxy_port,
                               "ws://127.0.0.1:%d/echo" % origin_port, str(args.seconds), str(args.connections)],
                              stdout=subprocess.PIPE, text=True) for _ in range(args.clients)]
    total = 0
    for p in procs:
        out, _ = p.communicate(timeout=args.seconds + 120)
        if p.returncode != 0:
            raise RuntimeError("a client failed")
        total += int(out.strip().splitlines()[-1])
    return total / args.seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tapwire", default=os.path.join(HERE, "..", ".build", "release", "tapwire"))
    ap.add_argument("--python", default=sys.executable, help="an interpreter with the websockets package")
    ap.add_argument("--venv", default=os.path.join(HERE, ".venv"), help="venv holding mitmdump")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--clients", type=int, default=2, help="client processes")
    ap.add_argument("--connections", type=int, default=8, help="connections per client process")
    ap.add_argument("--rounds", type=int, default=3, help="best of")
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--client", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return 0
    if args.client:
        proxy, uri, seconds, connections = args.client
        asyncio.run(clients(proxy, uri, float(seconds), int(connections)))
        return 0

    # The children run in the temp dir: relative paths are made absolute first.
    args.tapwire = os.path.abspath(args.tapwire)
    if os.sep in args.python:
        args.python = os.path.abspath(args.python)
    root = tempfile.mkdtemp(prefix="tapwire-ws-bench-")
    started = []
    try:
        origin_port = free_port()
        origin = start([args.python, __file__, "--serve", str(origin_port)], root, "origin")
        started.append(origin)
        wait_port(origin_port, origin)
        proxies = {}
        for label, on in (("tapwire", True), ("tapwire-nomsg", False)):
            d = os.path.join(root, label)
            os.makedirs(d)
            port = free_port()
            config = os.path.join(d, "tapwire.json")
            with open(config, "w") as f:
                json.dump({"listen": ["127.0.0.1:%d" % port], "log": {"directory": os.path.join(d, "logs"), "maxFiles": 1000},
                           "capture": {"websocketMessages": on}}, f)
            p = start([args.tapwire, "run", "--config", config], d, label)
            started.append(p)
            wait_port(port, p)
            proxies[label] = port
        mitmdump = os.path.join(args.venv, "bin", "mitmdump")
        if os.access(mitmdump, os.X_OK):
            d = os.path.join(root, "mitmproxy")
            os.makedirs(d)
            port = free_port()
            p = start([mitmdump, "--listen-host", "127.0.0.1", "--listen-port", str(port), "--set", "flow_detail=0",
                       "--set", "confdir=" + d + "/conf"], d, "mitmproxy")
            started.append(p)
            wait_port(port, p, 60)
            proxies["mitmproxy"] = port
        best, echoed = {}, {}
        for r in range(args.rounds):
            for label, port in proxies.items():
                measured = rate(args, port, origin_port)
                echoed[label] = echoed.get(label, 0) + round(measured * args.seconds)
                best[label] = max(best.get(label, 0), measured)
                print("round %d %-14s %10.0f msg/s" % (r + 1, label, best[label]), flush=True)
        # Counted once Tapwire stopped: it writes what it accepted before exiting.
        stop(started[1])
        records = problems = 0
        logs = os.path.join(root, "tapwire", "logs")
        for name in os.listdir(logs) if os.path.isdir(logs) else []:
            if name.endswith(".jsonl") or name.endswith(".jsonl.gz"):
                path = os.path.join(logs, name)
                with (gzip.open(path, "rb") if name.endswith(".gz") else open(path, "rb")) as f:
                    for line in f:
                        if b'"kind":"wsMessage"' in line:
                            records += 1
                        elif b'"kind":"loss"' in line or b'"frameError":"' in line:
                            problems += 1
        print("\nWebSocket echo, 1 KiB JSON, %d clients x %d connections, best of %d x %g s"
              % (args.clients, args.connections, args.rounds, args.seconds))
        for label, value in best.items():
            print("  %-14s %10.0f msg/s" % (label, value))
        print("  wsMessage records written: %d of %d messages echoed (loss records or frameErrors: %d)"
              % (records, 2 * echoed["tapwire"], problems))
        failed = False
        on, off = best["tapwire"], best["tapwire-nomsg"]
        ratio = on / off if off else 0
        ok = ratio >= 0.8
        failed |= not ok
        print("  goal records on >= 0.8x off: %.2fx %s" % (ratio, "ok" if ok else "MISSED"))
        if "mitmproxy" in best:
            vs = on / best["mitmproxy"] if best["mitmproxy"] else 0
            ok = vs >= 20
            failed |= not ok
            print("  goal >= 20x mitmproxy: %.1fx %s" % (vs, "ok" if ok else "MISSED"))
        else:
            print("  mitmproxy: not installed in %s (make bench-deps)" % args.venv)
        return 1 if failed and args.strict else 0
    finally:
        for p in started:
            stop(p)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
