#!/usr/bin/env python3
"""HTTP/2 small JSON through Tapwire, nghttpx and mitmproxy to one HTTP/2 origin, with
h2load (Debian nghttp2-client), on loopback: requests per second side by side in one run.

- Origin: nghttpd (Debian nghttp2-server) over TLS with a throw-away certificate, serving
  small.json (the same 113-byte document proxy_bench.py uses).
- Tapwire: a reverse listener with `"protocols": ["http/1.1", "h2c"]` whose upstream is
  the origin (HTTP/2 by ALPN), the default config otherwise (every exchange decoded and
  logged), 2 event loops; a forward listener beside it answers /metrics.
- nghttpx (Debian nghttp2-proxy, a C HTTP/2 proxy on the same library): a plaintext
  (h2c) frontend, the origin as an h2-over-TLS backend (`--insecure`: it does not verify
  an IP-address certificate), 2 workers, its access log on.
- mitmproxy (`mitmdump --mode reverse:https://ORIGIN`, from --venv): it refuses HTTP/2
  with prior knowledge ("not supported"), so h2load reaches it over TLS with ALPN h2; the
  TLS it terminates is extra work the others do not do, which the ratio does not hide.

h2load: 8 connections x 16 streams (-c 8 -m 16), one thread, a 1 s warm-up, --seconds a
round; rounds interleave the contenders, the order rotating. Per round: succeeded
requests per second (a failed request does not count), and the proxy's CPU per request (/proc/PID/stat, all threads). After the
run, Tapwire's records written must equal its exchanges, with none lost.

Goals (from the issue): Tapwire >= 1.0x nghttpx and >= 20x mitmproxy (fastest rounds).
A benchmark, not a test: exits 0 whatever the figures; --strict exits 1 when a goal fails.

    h2_bench.py --tapwire BIN [--venv MITM_VENV] [--seconds 4] [--rounds 3]
"""
import argparse, json, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time, urllib.request

from ws_bench import cpu, free_port, machine_busy, mitmproxy_goal, settle, start, stop_all, wait_port

HERE = os.path.dirname(os.path.abspath(__file__))
SMALL_JSON = b'{"id":12345,"name":"tapwire","tags":["proxy","json"],"price":19.99,"active":true,"owner":{"id":7,"login":"ada"}}\n'


def h2load(url, seconds, timeout):
    out = subprocess.run(["h2load", "-c", "8", "-m", "16", "-t", "1", "-D", "%g" % seconds, "--warm-up-time", "1", url],
                         capture_output=True, text=True, timeout=timeout)
    text = out.stdout + out.stderr
    rate = re.search(r"finished in [\d.]+s, ([\d.]+) req/s", text)
    done = re.search(r"requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored", text)
    if not rate or not done:
        raise RuntimeError("h2load %s: %s" % (url, text.strip()[-400:]))
    # h2load's req/s is over the measured window (the warm-up left out), counting every
    # request done: scaled to the succeeded ones, so a proxy answering errors fast does not look fast.
    total, ok = int(done.group(1)), int(done.group(2))
    return float(rate.group(1)) * ok / max(1, total), ok, int(done.group(3)) + int(done.group(4))


def tree_cpu(pid):
    """CPU seconds of a process and its children (nghttpx's workers are a child process)."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return cpu(pid) + sum(cpu(int(c)) for c in children)


def metric(port, name):
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in body.splitlines() if line.startswith(name))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tapwire", default=os.path.join(HERE, "..", ".build", "release", "tapwire"))
    ap.add_argument("--venv", default=os.path.join(HERE, ".venv"), help="venv holding mitmdump")
    ap.add_argument("--seconds", type=float, default=4, help="measured length of a round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600, help="bound on the whole run, seconds")
    ap.add_argument("--strict", action="store_true")
    args = ap.parse_args()
    args.venv, args.tapwire = os.path.abspath(args.venv), os.path.abspath(args.tapwire)  # children run in the temp dir
    for tool in ("h2load", "nghttpd", "nghttpx", "openssl"):
        if not shutil.which(tool):
            print("h2_bench: no %s (make bench-deps installs nghttp2-client, nghttp2-server, nghttp2-proxy)" % tool, file=sys.stderr)
            return 2
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("--timeout %g s ran out" % args.timeout)))
    signal.alarm(int(args.timeout))
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda *_: sys.exit(1))
    root = tempfile.mkdtemp(prefix="tapwire-h2-bench-")
    started, ports = {}, {}
    try:
        key, cert = os.path.join(root, "key.pem"), os.path.join(root, "cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        docs = os.path.join(root, "docs")
        os.makedirs(docs)
        with open(os.path.join(docs, "small.json"), "wb") as f:
            f.write(SMALL_JSON)
        origin_port = free_port()
        started["origin"] = start(["nghttpd", "-a", "127.0.0.1", "-d", docs, str(origin_port), key, cert], root, "origin")
        wait_port(origin_port, started["origin"])
        origin = "https://127.0.0.1:%d" % origin_port

        d = os.path.join(root, "tapwire")
        os.makedirs(d)
        admin, ports["tapwire"] = free_port(), free_port()
        with open(os.path.join(d, "tapwire.json"), "w") as f:
            json.dump({"listen": ["127.0.0.1:%d" % admin,
                                  {"address": "127.0.0.1:%d" % ports["tapwire"], "mode": "reverse", "upstream": origin,
                                   "protocols": ["http/1.1", "h2c"]}],
                       "log": {"directory": os.path.join(d, "logs"), "maxFiles": 1000},
                       "tls": {"upstreamCAFile": cert}}, f)
        started["tapwire"] = start([args.tapwire, "run", "--config", os.path.join(d, "tapwire.json")], d, "tapwire")
        wait_port(ports["tapwire"], started["tapwire"])

        ports["nghttpx"] = free_port()
        started["nghttpx"] = start(["nghttpx", "--conf=/dev/null", "--frontend=127.0.0.1,%d;no-tls" % ports["nghttpx"],
                                    "--backend=127.0.0.1,%d;;proto=h2;tls" % origin_port, "--insecure",
                                    "--workers=2", "--accesslog-file=" + os.path.join(root, "nghttpx-access.log"),
                                    "--no-ocsp", "--pid-file=" + os.path.join(root, "nghttpx.pid")], root, "nghttpx")
        wait_port(ports["nghttpx"], started["nghttpx"])

        urls = {label: "http://127.0.0.1:%d/small.json" % port for label, port in ports.items()}
        mitmdump = os.path.join(args.venv, "bin", "mitmdump")
        if os.access(mitmdump, os.X_OK):
            d = os.path.join(root, "mitmproxy")
            os.makedirs(d)
            ports["mitmproxy"] = free_port()
            started["mitmproxy"] = start([mitmdump, "--mode", "reverse:" + origin, "--listen-host", "127.0.0.1",
                                          "--listen-port", str(ports["mitmproxy"]), "--ssl-insecure",
                                          "--set", "flow_detail=0", "--set", "confdir=" + d + "/conf"], d, "mitmproxy")
            wait_port(ports["mitmproxy"], started["mitmproxy"], 60)
            urls["mitmproxy"] = "https://127.0.0.1:%d/small.json" % ports["mitmproxy"]

        print("HTTP/2 small JSON (%d bytes), h2load -c 8 -m 16, %g s a round, %d rounds" % (len(SMALL_JSON), args.seconds, args.rounds),
              flush=True)
        labels = list(urls)
        results = {label: [] for label in labels}
        for r in range(args.rounds):
            for label in labels[r % len(labels):] + labels[:r % len(labels)]:
                proxy = started[label]
                wall0, busy0, p0 = time.monotonic(), machine_busy(), tree_cpu(proxy.pid)
                rate, ok, failed = h2load(urls[label], args.seconds, args.seconds + 60)
                wall = time.monotonic() - wall0
                proxy_cpu = tree_cpu(proxy.pid) - p0
                m = {"rate": rate, "ok": ok, "failed": failed, "cores": proxy_cpu / wall,
                     "us": 1e6 * proxy_cpu / max(1, ok), "other": max(0.0, machine_busy() - busy0 - proxy_cpu) / wall}
                results[label].append(m)
                print("round %d %-10s %9.0f req/s  %8d ok %5d failed  proxy %.2f cores, %s us/req (warm-up included); rest of the machine %.2f cores"
                      % (r + 1, label, rate, ok, failed, m["cores"], "%.1f" % m["us"], m["other"]),
                      flush=True)
                if label == "tapwire":
                    settle(proxy.pid)

        exchanges = metric(admin, "tapwire_exchanges_total")
        written = metric(admin, "tapwire_records_written_total")
        lost = metric(admin, "tapwire_records_lost_total")
        best = {label: max(m["rate"] for m in ms) for label, ms in results.items()}
        median = {label: statistics.median(m["rate"] for m in ms) for label, ms in results.items()}
        print("\n| proxy | best req/s | median req/s | proxy CPU us/req (median) | failed |")
        print("|---|---:|---:|---:|---:|")
        for label, ms in results.items():
            print("| %s | %.0f | %.0f | %.1f | %d |" % (label, best[label], median[label], statistics.median(m["us"] for m in ms),
                                                   sum(m["failed"] for m in ms)))
        failed = False
        print("\ntapwire: %d records written for %d exchanges, %d lost: %s" % (
            written, exchanges, lost, "ok" if written == exchanges and lost == 0 else "MISSED"))
        failed |= not (written == exchanges and lost == 0)
        vs = best["tapwire"] / max(1.0, best["nghttpx"])
        failed |= vs < 1.0
        print("goal >= 1.0x nghttpx: %.2fx %s (medians %.2fx)" % (vs, "ok" if vs >= 1.0 else "MISSED",
                                                                 median["tapwire"] / max(1.0, median["nghttpx"])))
        failed |= mitmproxy_goal(best, median, "tapwire", args.venv, " (h2 over TLS to it)")
        return 1 if failed and args.strict else 0
    finally:
        stop_all(started, root)


if __name__ == "__main__":
    sys.exit(main())
