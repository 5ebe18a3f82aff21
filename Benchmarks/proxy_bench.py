#!/usr/bin/env python3
"""Tapwire against nginx, squid, tinyproxy and mitmproxy on loopback, and against
itself with logging off (`log.enabled: false`, the reference for the logging on/off goal).

Run through `make bench` (which installs the other proxies and builds Tapwire),
or directly: `python3 Benchmarks/proxy_bench.py --tapwire .build/release/tapwire`.

Everything listens on 127.0.0.1 only. Every process started here is in its own
process group and is killed on exit, on SIGINT/SIGTERM/SIGHUP and when the
overall time bound (--timeout) runs out. Exits 0 whatever the figures, unless
--strict is given and a goal fails (exit 1). Stdlib only.
"""

import argparse
import glob
import gzip
import http.client
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WRK_SCRIPT = os.path.join(HERE, "absolute_form.lua")
BIG_SIZE = 256 * 1024 * 1024
MEDIUM_SIZE = 64 * 1024

SMALL_JSON = (b'{"id":4711,"name":"tapwire","active":true,"score":0.97,'
              b'"tags":["proxy","bench"],"updated":"2026-12-02T10:11:12Z"}')


def log(msg):
    print(msg, flush=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---------------------------------------------------------------- documents

def medium_json():
    """A 64 KiB search-API response, the same bytes on every run.

    Realistic means the mix a decoder meets in practice: nested objects, nulls,
    booleans, integers and floats, ISO dates, URLs, escapes and non-ASCII text.
    """
    rng = random.Random(20261202)
    words = ["proxy", "json", "swift", "decoder", "stream", "cache", "fast", "tiny",
             "http", "server", "client", "tool", "log", "async", "event", "buffer"]
    langs = ["Swift", "Go", "Rust", "C", "Python", None]
    licences = [{"key": "mit", "name": "MIT License", "spdx_id": "MIT"},
                {"key": "apache-2.0", "name": "Apache License 2.0", "spdx_id": "Apache-2.0"},
                None]
    owners = ["octo", "zoë", "kōji", "marta", "li-wei", "dev\"ops"]
    items = []
    body = b""
    n = 0
    while True:
        n += 1
        owner = rng.choice(owners)
        name = "-".join(rng.sample(words, 2)) + str(n)
        repo_id = 100000 + n * 7919
        item = {
            "id": repo_id,
            "node_id": "MDEwOlJlcG9zaXRvcnk%d" % repo_id,
            "name": name,
            "full_name": "%s/%s" % (owner, name),
            "private": rng.random() < 0.1,
            "owner": {"login": owner, "id": 5000 + n, "type": "User",
                      "avatar_url": "https://avatars.example.com/u/%d?v=4" % (5000 + n),
                      "site_admin": False},
            "html_url": "https://example.com/%s/%s" % (owner, name),
            "description": "A %s %s for %s \u2014 \"%s\"\n" % tuple(rng.sample(words, 4)),
            "fork": rng.random() < 0.2,
            "created_at": "20%02d-%02d-%02dT%02d:%02d:%02dZ" % (
                rng.randint(12, 25), rng.randint(1, 12), rng.randint(1, 28),
                rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)),
            "pushed_at": "2026-%02d-%02dT%02d:%02d:00Z" % (
                rng.randint(1, 11), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59)),
            "size": rng.randint(10, 500000),
            "stargazers_count": rng.randint(0, 90000),
            "forks_count": rng.randint(0, 9000),
            "open_issues_count": rng.randint(0, 700),
            "language": rng.choice(langs),
            "license": rng.choice(licences),
            "topics": rng.sample(words, rng.randint(0, 4)),
            "archived": False,
            "default_branch": "main",
            "score": round(rng.random() * 100, 6),
        }
        candidate = items + [item]
        if len(encode_page(candidate, "")) > MEDIUM_SIZE - 64:
            break
        items = candidate
    body = encode_page(items, "")
    # A pagination cursor pads the page to exactly 64 KiB.
    cursor = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                     for _ in range(MEDIUM_SIZE - len(body)))
    body = encode_page(items, cursor)
    assert len(body) == MEDIUM_SIZE, len(body)
    return body


def encode_page(items, cursor):
    doc = {"total_count": len(items) * 37, "incomplete_results": False,
           "items": items, "next_cursor": cursor}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


# ---------------------------------------------------------------- processes

class Processes:
    """Every child, each in its own process group, so its workers die with it."""

    def __init__(self):
        self.children = []

    def start(self, name, argv, workdir, env=None):
        out = open(os.path.join(workdir, name + ".out"), "wb")
        p = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        out.close()
        self.children.append((name, p))
        p.out_path = out.name
        return p

    def stop(self, p, grace=5.0):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        # The group leader may be gone while its workers are not.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(2)
        except subprocess.TimeoutExpired:
            pass
        self.children = [(n, c) for (n, c) in self.children if c is not p]

    def stop_all(self):
        for _, p in list(reversed(self.children)):
            self.stop(p, grace=3.0)


def tail_of(path, lines=8):
    try:
        with open(path, "rb") as f:
            text = f.read()[-4000:].decode(errors="replace")
    except OSError:
        return "    (no output file)"
    return "\n".join("    | " + l for l in text.splitlines()[-lines:]) or "    (no output)"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, seconds=20.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def http_get(port, target, timeout=10.0):
    """One GET through the proxy at port; absolute-form when target is a URL."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", target)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def rss_kib(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def cpu_seconds(pids):
    """User + system time of the processes (all their threads), in seconds."""
    ticks = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


# Thread names Tapwire sets (tapwire_name_current_thread); every other thread (main,
# Dispatch's) keeps the executable's name, which differs between A and B, so it is "other".
NAMED_THREADS = {"tapwire-writer": "writer", "tapwire-deflate": "deflate", "tapwire-archive": "archive"}


def thread_cpu(pid):
    """CPU seconds by thread group of process `pid`. "other" is the process's total (which
    keeps the time of threads that ended) less the named groups."""
    groups = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in glob.glob("/proc/%d/task/*" % pid):
        try:
            with open(task + "/stat") as f:
                stat = f.read()
        except OSError:
            continue  # a thread that ended: counted in the process total
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        group = ("loops" if name.startswith("tapwire-loop-") else
                 "workers" if name.startswith("tapwire-ser-") else NAMED_THREADS.get(name))
        if group:
            groups[group] = groups.get(group, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    groups["other"] = max(0.0, cpu_seconds([pid]) - sum(groups.values()))
    return groups



def machine_busy_seconds():
    """CPU time all cores spent running processes since boot, from /proc/stat.

    irq and softirq time are left out: loopback traffic is mostly softirq
    work charged to no process, so it is the benchmark's own. steal stays in:
    it is other guests on the host."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, _irq, _softirq, steal = v
    return (user + nice + system + steal) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def process_tree(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


# ---------------------------------------------------------------- the contenders

class Proxy:
    def __init__(self, name, port, proc, forward=True):
        self.name = name
        self.port = port
        self.proc = proc
        self.out_path = proc.out_path
        self.forward = forward  # False: a reverse proxy, driven with origin-form

    def target(self, origin_port, path):
        if self.forward:
            return "http://127.0.0.1:%d%s" % (origin_port, path)
        return path


def write(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def nginx_conf(d, port, workers, http_body):
    temp = "".join("    %s_temp_path %s/%s;\n" % (k, d, k)
                   for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return """worker_processes %s;
daemon off;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 8192; }
http {
%s    keepalive_requests 1000000;
    keepalive_timeout 120s;
%s
}
""" % (workers, d, d, temp, http_body.replace("PORT", str(port)))


def start_origin(procs, root, www):
    d = os.path.join(root, "origin")
    os.makedirs(d)
    port = free_port()
    body = """    access_log off;
    types { application/json json; application/octet-stream bin; }
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    server { listen 127.0.0.1:PORT; root %s; }""" % www
    write(os.path.join(d, "nginx.conf"), nginx_conf(d, port, 1, body))
    p = procs.start("origin-nginx", ["nginx", "-p", d, "-e", d + "/error.log",
                                     "-c", d + "/nginx.conf"], d)
    if not wait_port(port, p):
        raise SystemExit("origin nginx did not start; see %s/origin-nginx.out" % d)
    return port, p


# `log.whenBehind: wait` with an 8 MiB decode queue: the option that logs every exchange by
# holding clients while decoding is behind (docs/configuration.md, log.whenBehind). The smaller queue
# keeps each hold short and the captures in cache.
WAIT_LOG_CONFIG = {"whenBehind": "wait", "decodeQueueBytes": 8 << 20}


def start_tapwire(procs, root, binary, label="tapwire", logging=True, extra_log=None, extra=None):
    """Tapwire with its default config, but for `log.maxFiles` (see below); `logging=False`
    sets only `log.enabled: false`
    (forwarding without decoding or logging: the logging on/off reference); `extra_log` adds
    keys to the `log` object (tapwire-wait); `extra`, other top-level keys."""
    d = os.path.join(root, label)
    os.makedirs(d)
    port = free_port()
    logs = os.path.join(d, "logs")
    config = os.path.join(d, "tapwire.json")
    # log.maxFiles raised from 20: on a fast host the small-JSON rounds write more than 20
    # rotated files (64 MiB each), and retention deleting the oldest would make the record
    # count miss records that were written. The 64 KiB phase then writes some GB more into
    # the temp dir.
    log_config = ({"directory": logs, "maxFiles": 1000} if logging
                  else {"directory": logs, "enabled": False})
    log_config.update(extra_log or {})
    write(config, json.dumps(dict({"listen": ["127.0.0.1:%d" % port], "log": log_config}, **(extra or {}))))
    p = procs.start(label, [binary, "run", "--listen", "127.0.0.1:%d" % port, "--config", config], d)
    name = label if label in ("tapwire-nolog", "tapwire-wait") else ("tapwire" if logging else "tapwire-nolog")
    proxy = Proxy(name, port, p)
    proxy.log_dir = logs
    proxy.logging = logging
    return proxy


def start_nginx_proxy(procs, root, origin_port, label="nginx"):
    d = os.path.join(root, label)
    os.makedirs(d)
    port = free_port()
    # proxy_max_temp_file_size 0: stream large bodies instead of spooling them
    # to disk, the way Tapwire does; otherwise nginx's defaults.
    body = """    access_log %s/access.log;
    upstream origin { server 127.0.0.1:%d; keepalive 64; }
    server {
        listen 127.0.0.1:PORT;
        location / {
            proxy_pass http://origin;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_max_temp_file_size 0;
        }
    }""" % (d, origin_port)
    write(os.path.join(d, "nginx.conf"), nginx_conf(d, port, "auto", body))
    p = procs.start(label, ["nginx", "-p", d, "-e", d + "/error.log", "-c", d + "/nginx.conf"], d)
    return Proxy("nginx", port, p, forward=False)


def start_squid(procs, root):
    d = os.path.join(root, "squid")
    os.makedirs(d)
    # Squid drops root for its cache_effective_user, which must write here.
    os.chmod(d, 0o777)
    port = free_port()
    write(os.path.join(d, "squid.conf"), """http_port 127.0.0.1:%d
http_access allow localhost
http_access deny all
cache deny all
pid_filename %s/squid.pid
cache_log %s/cache.log
access_log stdio:%s/access.log
cache_store_log none
coredump_dir %s
netdb_filename none
pinger_enable off
max_filedescriptors 8192
shutdown_lifetime 1 seconds
visible_hostname tapwire-bench
""" % (port, d, d, d, d))
    p = procs.start("squid", ["squid", "-N", "-f", d + "/squid.conf"], d)
    return Proxy("squid", port, p)


def start_tinyproxy(procs, root):
    d = os.path.join(root, "tinyproxy")
    os.makedirs(d)
    port = free_port()
    write(os.path.join(d, "tinyproxy.conf"), """Port %d
Listen 127.0.0.1
Timeout 600
MaxClients 1024
Allow 127.0.0.1
LogLevel Warning
LogFile "%s/tinyproxy.log"
PidFile "%s/tinyproxy.pid"
""" % (port, d, d))
    p = procs.start("tinyproxy", ["tinyproxy", "-d", "-c", d + "/tinyproxy.conf"], d)
    return Proxy("tinyproxy", port, p)


def start_mitmproxy(procs, root, venv):
    d = os.path.join(root, "mitmproxy")
    os.makedirs(d)
    port = free_port()
    mitmdump = os.path.join(venv, "bin", "mitmdump")
    p = procs.start("mitmproxy", [mitmdump, "--listen-host", "127.0.0.1", "--listen-port", str(port),
                                  "-w", d + "/flows.mitm", "--set", "flow_detail=0",
                                  "--set", "confdir=" + d + "/conf"], d)
    return Proxy("mitmproxy", port, p)


def ready(proxy, origin_port, seconds=30.0):
    """Listening and answering a real exchange with the origin's bytes."""
    if not wait_port(proxy.port, proxy.proc, seconds):
        return False
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            status, body = http_get(proxy.port, proxy.target(origin_port, "/small.json"))
            if status == 200 and body == SMALL_JSON:
                return True
        except OSError:
            pass
        if proxy.proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


# ---------------------------------------------------------------- wrk

def settle(pids, seconds=20.0):
    """Waits until `pids` use under 5% of one core over 200 ms (at most `seconds`)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        before = cpu_seconds(pids)
        time.sleep(0.2)
        if cpu_seconds(pids) - before < 0.01:
            return


def run_wrk(proxy, origin_port, path, args, duration):
    argv = ["wrk", "-c", str(args.connections), "-t", str(args.threads), "-d", "%ds" % duration,
            "--timeout", "5s", "-s", WRK_SCRIPT, "http://127.0.0.1:%d/" % proxy.port, "--",
            proxy.target(origin_port, path)]
    if proxy.forward:
        argv.append("127.0.0.1:%d" % origin_port)
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=duration + 30).stdout
    except subprocess.TimeoutExpired:
        return None
    m = re.search(r"^RESULT (.*)$", out, re.M)
    if not m:
        return None
    r = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6) if r["duration_us"] else 0.0
    for k in ERROR_KINDS:
        r[k] = r.get(k, 0)
    r["errors"] = sum(r[k] for k in ERROR_KINDS)
    return r


ERROR_KINDS = ("connect_errors", "read_errors", "write_errors", "status_errors", "timeouts")


def error_text(r):
    """wrk's error counts by kind. A read error is usually a server closing
    the connection after a response without saying `Connection: close`; the
    response itself was complete and counted."""
    return ", ".join("%d %s" % (r[k], k.replace("_errors", "").replace("_", " "))
                     for k in ERROR_KINDS if r.get(k))


def throughput(proxies, origin_port, path, args, label, wrk_served):
    """Interleaved rounds: each round visits every proxy, the order rotating."""
    results = {p.name: [] for p in proxies}
    for p in proxies:  # warm-up (connections, pools, JIT-free but cache-warm)
        r = run_wrk(p, origin_port, path, args, 1)
        if p.name == "tapwire" and r:
            wrk_served.append(r["requests"])
    # Tapwire with and without logging run back to back in every round, in alternating
    # order: the logging on/off ratio is between the two, and rounds of other proxies in
    # between would let the machine's speed drift between them (a shared host's steal time
    # changes within a minute) and the ratio would measure the drift.
    units = []
    for p in proxies:
        if p.name == "tapwire-nolog" and any(u[0].name == "tapwire" for u in units):
            next(u for u in units if u[0].name == "tapwire").append(p)
        elif p.name == "tapwire" and any(u[0].name == "tapwire-nolog" for u in units):
            next(u for u in units if u[0].name == "tapwire-nolog").append(p)
        else:
            units.append([p])
    for rnd in range(args.rounds):
        turned = units[rnd % len(units):] + units[:rnd % len(units)]
        order = [p for u in turned for p in (u if rnd % 2 == 0 else list(reversed(u)))]
        for p in order:
            if p.proc.poll() is not None:
                if not getattr(p, "exit_reported", False):
                    p.exit_reported = True
                    log("  %s has exited (code %s) after %d rounds; no more rounds for it. Its last output:\n%s" % (
                        p.name, p.proc.returncode, rnd, tail_of(p.out_path)))
                continue
            pids = process_tree(p.proc.pid)
            ours = pids + args.origin_pids
            # Tapwire's CPU by thread group too: which group a slow round's time went to.
            groups0 = thread_cpu(p.proc.pid) if p.name.startswith("tapwire") else None
            cpu0, own0, wrk0, busy0, t0 = (cpu_seconds(pids), cpu_seconds(ours), children_cpu_seconds(),
                                           machine_busy_seconds(), time.monotonic())
            r = run_wrk(p, origin_port, path, args, args.duration)
            if r is not None:
                # CPU spent per request is steadier than req/s on a shared machine.
                r["cpu_us"] = (cpu_seconds(pids) - cpu0) * 1e6 / max(1, r["requests"])
                # Whatever else ran meanwhile (other people's builds) took this
                # share of the machine from the round.
                others = ((machine_busy_seconds() - busy0) - (cpu_seconds(ours) - own0)
                          - (children_cpu_seconds() - wrk0))
                r["foreign_pct"] = max(0.0, 100 * others / ((time.monotonic() - t0) * (os.cpu_count() or 1)))
                args.foreign.append(r["foreign_pct"])
            if r is None:
                log("  %-9s %s round %d: wrk gave no result" % (p.name, label, rnd + 1))
                continue
            if p.name == "tapwire":
                wrk_served.append(r["requests"])
            r["round"] = rnd
            if getattr(p, "logging", False):
                # Its log writer and archiver finish the round's records after wrk stops;
                # that work must not land in the next proxy's round.
                settle(pids)
            groups = ""
            if groups0 is not None:
                # After the settle: the round's queued records count too.
                after = thread_cpu(p.proc.pid)
                r["cpu_groups_us"] = {g: (after[g] - groups0.get(g, 0.0)) * 1e6 / max(1, r["requests"])
                                      for g in after}
                groups = "  (" + " ".join("%s %.1f" % (g, v) for g, v in sorted(r["cpu_groups_us"].items())
                                          if v >= 0.05) + ")"
            results[p.name].append(r)
            log("  %-9s %s round %d: %7.0f req/s  p50 %6.2f ms  p99 %6.2f ms  %5.1f CPU µs/req  "
                "others %2.0f%%  %s%s" % (
                    p.name, label, rnd + 1, r["rps"], r["p50_us"] / 1000, r["p99_us"] / 1000,
                    r["cpu_us"], r["foreign_pct"], error_text(r) or "no errors", groups))
    summary = {}
    for name, rs in results.items():
        if rs:
            if args.stat == "best":
                # Other work on the machine only ever slows a round down, so the
                # fastest round is the closest to what the proxy can do.
                best = max(rs, key=lambda r: r["rps"])
                rps, p50, p99 = best["rps"], best["p50_us"], best["p99_us"]
            else:
                rps = statistics.median(r["rps"] for r in rs)
                p50 = statistics.median(r["p50_us"] for r in rs)
                p99 = statistics.median(r["p99_us"] for r in rs)
            summary[name] = {
                "rps": rps, "p50_ms": p50 / 1000, "p99_ms": p99 / 1000,
                "rps_rounds": [round(r["rps"]) for r in rs],
                "rps_by_round": {r["round"]: r["rps"] for r in rs},
                "cpu_us": statistics.median(r["cpu_us"] for r in rs),
                "errors": sum(r["errors"] for r in rs),
                **{k: sum(r[k] for r in rs) for k in ERROR_KINDS},
                "requests": sum(r["requests"] for r in rs),
                "rounds": len(rs),
            }
    return summary


# ---------------------------------------------------------------- records

def metrics_sums(port, names):
    """Each metric in `names` summed over its label sets, from /metrics; None when
    /metrics cannot be read."""
    try:
        status, body = http_get(port, "/metrics")
    except OSError:
        return None
    if status != 200:
        return None
    values = dict.fromkeys(names, 0.0)
    for line in body.decode(errors="replace").splitlines():
        for name in names:
            if line.startswith(name + "{") or line.startswith(name + " "):
                values[name] += float(line.rsplit(" ", 1)[1])
    return tuple(int(values[n]) for n in names)


def metrics_exchanges(port):
    """tapwire_exchanges_total summed over status classes, from /metrics."""
    sums = metrics_sums(port, ("tapwire_exchanges_total",))
    return None if sums is None else sums[0]


def metrics_records(port, seconds=60.0):
    """(exchanges, records written, records lost) from /metrics once the pipeline has
    caught up: written + lost reaches exchanges, or two readings a second apart agree."""
    def sample():
        return metrics_sums(port, ("tapwire_exchanges_total", "tapwire_records_written_total",
                                   "tapwire_records_lost_total"))
    deadline = time.monotonic() + seconds
    last = sample()
    while last is not None and time.monotonic() < deadline:
        if last[1] + last[2] >= last[0]:
            return last
        time.sleep(1)
        now = sample()
        if now == last:
            return now
        last = now
    return last


def count_records_once(log_dir):
    records = lost = files = 0
    if not os.path.isdir(log_dir):
        return 0, 0, 0
    for name in sorted(os.listdir(log_dir)):
        if not (name.endswith(".jsonl") or name.endswith(".jsonl.gz")):
            continue
        files += 1
        path = os.path.join(log_dir, name)
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    continue  # the live end of the active file
                if b'"kind":"loss"' in line:
                    try:
                        lost += int(json.loads(line).get("lost", 0))
                    except ValueError:
                        pass
                else:
                    records += 1
    return records, lost, files


def count_records(log_dir, seconds=30.0):
    """Counts once the writer has settled: two equal counts a second apart."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            now = count_records_once(log_dir)
        except (OSError, EOFError, gzip.BadGzipFile):
            now = None  # a file mid-rotation or mid-compression
        if now is not None and now == last:
            return now
        last = now
        time.sleep(1.0)
    return last if last is not None else (0, 0, 0)


# ---------------------------------------------------------------- streaming

class RSSSampler(threading.Thread):
    def __init__(self, pids, interval=0.01):
        super().__init__(daemon=True)
        self.pids, self.interval = pids, interval
        self.peak = 0
        self.stop_flag = threading.Event()

    def run(self):
        while not self.stop_flag.is_set():
            self.peak = max(self.peak, rss_kib(self.pids))
            time.sleep(self.interval)

    def stop(self):
        self.stop_flag.set()
        self.join()
        return self.peak


def stream_big(proxy, origin_port, base):
    url = "http://127.0.0.1:%d/big.bin" % origin_port
    if proxy.forward:
        argv = ["curl", "-sS", "-o", "/dev/null", "-x", "http://127.0.0.1:%d" % proxy.port, url]
    else:
        argv = ["curl", "-sS", "-o", "/dev/null", "http://127.0.0.1:%d/big.bin" % proxy.port]
    argv += ["--max-time", "120", "-w", "%{http_code} %{size_download}"]
    pids = process_tree(proxy.proc.pid)
    sampler = RSSSampler(pids)
    sampler.start()
    t0 = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=150)
    elapsed = time.monotonic() - t0
    peak = sampler.stop()
    parts = out.stdout.split()
    ok = len(parts) == 2 and parts[0] == "200" and int(parts[1]) == BIG_SIZE
    return {"seconds": elapsed, "growth_mib": max(0, peak - base) / 1024, "ok": ok,
            "base_mib": base / 1024, "peak_mib": peak / 1024}


# ---------------------------------------------------------------- idle clients

def idle_clients(proxy, origin_port, count):
    target = proxy.target(origin_port, "/small.json")
    # Warm the process first: pools, buffers and the first-exchange allocations
    # are not a per-client cost.
    for _ in range(50):
        http_get(proxy.port, target)
    time.sleep(1.0)
    base = rss_kib([proxy.proc.pid])
    conns, served = [], 0
    try:
        for _ in range(count):
            c = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            c.request("GET", target)  # HTTP/1.1: keep-alive unless told otherwise
            r = c.getresponse()
            if r.status == 200 and r.read() == SMALL_JSON:
                served += 1
            conns.append(c)
        time.sleep(2.0)
        after = rss_kib([proxy.proc.pid])
        still_open = 0
        for c in conns:
            if c.sock is None:
                continue  # http.client closed it: the proxy asked to close
            c.sock.setblocking(False)
            try:
                if c.sock.recv(1, socket.MSG_PEEK) == b"":
                    continue  # closed by the proxy
            except BlockingIOError:
                pass  # nothing to read and not closed: idle and open
            except OSError:
                continue
            still_open += 1
    finally:
        for c in conns:
            c.close()
    return {"clients": count, "served": served, "still_open": still_open,
            "base_mib": base / 1024, "after_mib": after / 1024,
            "kib_per_client": (after - base) / count}


# ---------------------------------------------------------------- main

def fmt_ratio(a, b):
    return "%.2f×" % (a / b) if a and b else "n/a"


def paired_ratios(a, b):
    """a's req/s over b's in each round both finished (they ran back to back)."""
    if not a or not b:
        return []
    ra, rb = a.get("rps_by_round", {}), b.get("rps_by_round", {})
    return [ra[k] / rb[k] for k in sorted(ra) if k in rb and rb[k]]


def median_ratio(a, b):
    """The ratio of the two proxies' median rounds: what the goal would say without the
    benefit of each one's luckiest round (the verdict uses the fastest rounds)."""
    if not a or not b or not a.get("rps_rounds") or not b.get("rps_rounds"):
        return "n/a"
    return fmt_ratio(statistics.median(a["rps_rounds"]), statistics.median(b["rps_rounds"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tapwire", default=os.path.join(HERE, "..", ".build", "release", "tapwire"))
    ap.add_argument("--venv", default=os.path.join(HERE, ".venv"), help="venv holding mitmdump")
    ap.add_argument("--duration", type=int, default=4, help="seconds per wrk round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--stat", choices=("best", "median"), default="best",
                    help="which round stands for a proxy: the fastest (default; a shared machine "
                         "only slows rounds down) or the median")
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--stream-runs", type=int, default=3)
    ap.add_argument("--idle-clients", type=int, default=1000)
    ap.add_argument("--only", default="tapwire,tapwire-nolog,tapwire-wait,nginx,squid,tinyproxy,mitmproxy",
                    help="comma-separated subset of the proxies")
    ap.add_argument("--settle", type=int, default=60,
                    help="wait up to this many seconds for the load average to fall below nproc/2")
    ap.add_argument("--timeout", type=int, default=1200, help="overall bound, seconds")
    ap.add_argument("--json-out", help="also write the figures as JSON here")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (configs, logs)")
    ap.add_argument("--strict", action="store_true", help="exit 1 if any goal fails")
    args = ap.parse_args()
    args.venv = os.path.abspath(args.venv)  # children run in the temp dir

    procs = Processes()
    root = tempfile.mkdtemp(prefix="tapwire-bench-")
    os.chmod(root, 0o755)  # nginx workers run as nobody and must read the documents

    def on_signal(signum, _frame):
        raise SystemExit("stopped by signal %d" % signum)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)

    def on_alarm(_signum, _frame):
        raise SystemExit("overall time bound (--timeout %d s) reached" % args.timeout)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.timeout)

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    if soft < want:  # children inherit it: 1,000 idle clients need the descriptors
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    try:
        failed = run(args, procs, root)
    finally:
        signal.alarm(0)
        # A second Ctrl-C must not cut the cleanup short; it is bounded anyway.
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)
        procs.stop_all()
        if args.keep:
            log("kept %s" % root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    if args.strict and failed:
        sys.exit(1)


def run(args, procs, root):
    binary = os.path.abspath(args.tapwire)
    if not os.access(binary, os.X_OK):
        raise SystemExit("no Tapwire binary at %s (swift build -c release --product tapwire)" % binary)
    wanted = [n.strip() for n in args.only.split(",") if n.strip()]
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    log("Tapwire proxy benchmark  %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    log("machine: nproc %d, %s; load average at start %s" % (os.cpu_count(), cpu, loadavg()))
    if args.settle > 0 and os.getloadavg()[0] > (os.cpu_count() or 1) / 2:
        # Other people build on this machine; give their burst a chance to end.
        deadline = time.monotonic() + args.settle
        while os.getloadavg()[0] > (os.cpu_count() or 1) / 2 and time.monotonic() < deadline:
            time.sleep(5)
        log("load average after waiting up to %d s for a quieter machine: %s" % (args.settle, loadavg()))
    log("wrk: %d connections, %d threads, %d s x %d interleaved rounds (%s round reported)" % (
        args.connections, args.threads, args.duration, args.rounds,
        "fastest" if args.stat == "best" else "median"))

    www = os.path.join(root, "www")
    os.makedirs(www)
    os.chmod(www, 0o755)
    medium = medium_json()
    with open(os.path.join(www, "small.json"), "wb") as f:
        f.write(SMALL_JSON)
    with open(os.path.join(www, "64k.json"), "wb") as f:
        f.write(medium)
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.truncate(BIG_SIZE)  # sparse: no disk, and the page cache serves zeros
    for n in os.listdir(www):
        os.chmod(os.path.join(www, n), 0o644)
    log("documents: small.json %d B, 64k.json %d B, big.bin %d MiB (sparse)" % (
        len(SMALL_JSON), len(medium), BIG_SIZE >> 20))

    origin_port, origin = start_origin(procs, root, www)
    args.origin_pids = process_tree(origin.pid)
    args.foreign = []
    starters = {
        "tapwire": lambda: start_tapwire(procs, root, binary),
        "tapwire-nolog": lambda: start_tapwire(procs, root, binary, "tapwire-nolog", logging=False),
        "tapwire-wait": lambda: start_tapwire(procs, root, binary, "tapwire-wait", extra_log=WAIT_LOG_CONFIG),
        "nginx": lambda: start_nginx_proxy(procs, root, origin_port),
        "squid": lambda: start_squid(procs, root),
        "tinyproxy": lambda: start_tinyproxy(procs, root),
        "mitmproxy": lambda: start_mitmproxy(procs, root, args.venv),
    }
    proxies = []
    for name in wanted:
        if name not in starters:
            raise SystemExit("unknown proxy %r" % name)
        try:
            p = starters[name]()
        except OSError as e:
            log("  %s: could not start (%s); skipped" % (name, e))
            continue
        if ready(p, origin_port):
            proxies.append(p)
            log("  %-9s ready on 127.0.0.1:%d" % (name, p.port))
        else:
            log("  %-9s did not come up; skipped (see %s/%s)" % (name, root, name))
            procs.stop(p.proc)
    tapwire = next((p for p in proxies if p.name == "tapwire"), None)
    waiting = next((p for p in proxies if p.name == "tapwire-wait"), None)

    # Requests Tapwire completed as wrk saw them (+1 for the readiness probe).
    wrk_served = [1] if tapwire else []
    log("\nsmall JSON (%d B):" % len(SMALL_JSON))
    small = throughput(proxies, origin_port, "/small.json", args, "small", wrk_served)

    records = None
    if tapwire:
        served = metrics_exchanges(tapwire.port)
        n, lost, files = count_records(tapwire.log_dir)
        records = {"served_metrics": served, "served_wrk": sum(wrk_served),
                   "logged": n, "lost": lost, "files": files}

    wait_before = metrics_records(waiting.port) if waiting else None

    log("\n64 KiB JSON:")
    medium_r = throughput(proxies, origin_port, "/64k.json", args, "64KiB", [])
    # Every 64 KiB body must be parsed and logged too: counted by the writer (the files
    # of this phase run to gigabytes; the small-JSON phase checks files against /metrics).
    medium_records = None
    if tapwire:
        totals = metrics_records(tapwire.port)
        if totals and records and records["served_metrics"] is not None:
            exchanges, written, lost = totals
            medium_records = {"served": exchanges - records["served_metrics"],
                              "written": written - records["logged"], "lost": lost - records["lost"]}
            log("  Tapwire records in this phase: %d served, %d written, %d lost" % (
                medium_records["served"], medium_records["written"], medium_records["lost"]))
    if waiting and wait_before:
        after = metrics_records(waiting.port)
        if after:
            wait_records = {"served": after[0] - wait_before[0], "written": after[1] - wait_before[1],
                            "lost": after[2] - wait_before[2]}
            medium_records = dict(medium_records or {}, wait=wait_records)
            log("  tapwire-wait records in this phase: %d served, %d written, %d lost" % (
                wait_records["served"], wait_records["written"], wait_records["lost"]))
    log("load average after throughput: %s" % loadavg())

    for p in proxies:
        procs.stop(p.proc)

    # Fresh processes for memory figures, so earlier load does not blur them.
    stream = {}
    runs = {"tapwire": [], "nginx": []}
    if "tapwire" in wanted and "nginx" in wanted:
        log("\nstreaming %d MiB:" % (BIG_SIZE >> 20))
        tw = start_tapwire(procs, root, binary, "tapwire-stream")
        ng = start_nginx_proxy(procs, root, origin_port, "nginx-stream")
        if ready(tw, origin_port) and ready(ng, origin_port):
            # Growth counts from the fresh process (after one small exchange),
            # so memory kept from an earlier run still counts against it.
            base = {p.name: rss_kib(process_tree(p.proc.pid)) for p in (tw, ng)}
            for i in range(args.stream_runs):
                for p in ([tw, ng] if i % 2 == 0 else [ng, tw]):
                    r = stream_big(p, origin_port, base[p.name])
                    runs[p.name].append(r)
                    log("  %-9s run %d: %.2f s  RSS %.1f -> %.1f MiB (+%.1f)%s" % (
                        p.name, i + 1, r["seconds"], r["base_mib"], r["peak_mib"], r["growth_mib"],
                        "" if r["ok"] else "  INCOMPLETE"))
            for name, rs in runs.items():
                good = [r for r in rs if r["ok"]]
                if good:
                    pick = min if args.stat == "best" else statistics.median
                    stream[name] = {"seconds": pick(r["seconds"] for r in good),
                                    "growth_mib": max(r["growth_mib"] for r in good),
                                    "complete": len(good), "runs": len(rs)}
        else:
            log("  a proxy did not come up; skipped")
        procs.stop(tw.proc)
        procs.stop(ng.proc)

    idle = None
    if "tapwire" in wanted:
        log("\n%d idle keep-alive clients on Tapwire:" % args.idle_clients)
        tw = start_tapwire(procs, root, binary, "tapwire-idle")
        if ready(tw, origin_port):
            try:
                idle = idle_clients(tw, origin_port, args.idle_clients)
                log("  served %d, still open %d, RSS %.1f -> %.1f MiB: %.2f KiB per client" % (
                    idle["served"], idle["still_open"], idle["base_mib"], idle["after_mib"],
                    idle["kib_per_client"]))
            except OSError as e:
                log("  failed: %s" % e)
        procs.stop(tw.proc)

    return report(args, small, medium_r, records, stream, idle, medium_records)


def report(args, small, medium, records, stream, idle, medium_records=None):
    log("\nResults (%s; CPU µs/req: median of rounds; load average now %s)\n" % (
        "the fastest of %d rounds" % args.rounds if args.stat == "best" else "median of %d rounds" % args.rounds,
        loadavg()))
    tw_s, tw_m = small.get("tapwire"), medium.get("tapwire")
    log("| proxy | small req/s | small p50 / p99 ms | small CPU µs/req | 64 KiB req/s "
        "| 64 KiB p50 / p99 ms | 64 KiB CPU µs/req | Tapwire ÷ it, small | Tapwire ÷ it, 64 KiB |")
    log("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in ("tapwire", "tapwire-nolog", "tapwire-wait", "nginx", "squid", "tinyproxy", "mitmproxy"):
        s, m = small.get(name), medium.get(name)
        if not s and not m:
            continue
        cells = [name]
        for r in (s, m):
            if r:
                flag = " (%s)" % error_text(r) if r["errors"] else ""
                cells += ["%.0f%s" % (r["rps"], flag), "%.2f / %.2f" % (r["p50_ms"], r["p99_ms"]),
                          "%.0f" % r["cpu_us"]]
            else:
                cells += ["n/a", "n/a", "n/a"]
        cells.append(fmt_ratio(tw_s and tw_s["rps"], s and s["rps"]) if name != "tapwire" else "1")
        cells.append(fmt_ratio(tw_m and tw_m["rps"], m and m["rps"]) if name != "tapwire" else "1")
        log("| " + " | ".join(cells) + " |")

    if tw_s or tw_m:
        # Requests per CPU-second, Tapwire's over each: what req/s would say on
        # an idle machine if every proxy were CPU-bound.
        parts = []
        for name in ("nginx", "squid", "tinyproxy", "mitmproxy"):
            s, m = small.get(name), medium.get(name)
            if s or m:
                parts.append("%s %s / %s" % (
                    name, fmt_ratio(s and s["cpu_us"], tw_s and tw_s["cpu_us"]),
                    fmt_ratio(m and m["cpu_us"], tw_m and tw_m["cpu_us"])))
        if parts:
            log("\nTapwire ÷ it in requests per CPU-second (small / 64 KiB): " + ", ".join(parts))

    if stream:
        log("\n| 256 MiB through | time s (%s of %d) | RSS growth MiB (max) |" % (
            "best" if args.stat == "best" else "median", args.stream_runs))
        log("|---|---:|---:|")
        for name, r in stream.items():
            log("| %s | %.2f | %.1f |" % (name, r["seconds"], r["growth_mib"]))
    if idle:
        log("\nidle keep-alive clients on Tapwire: %d connected (%d served, %d still open), "
            "%.2f KiB RSS each" % (idle["clients"], idle["served"], idle["still_open"],
                                   idle["kib_per_client"]))
    if records:
        log("records logged vs requests served (Tapwire, after the small-JSON rounds): "
            "logged %d, served %s per /metrics (%d completed as wrk saw them), "
            "loss reported %d, log files %d" % (
                records["logged"], records["served_metrics"], records["served_wrk"],
                records["lost"], records["files"]))

    goals = []

    def goal(text, ok, detail):
        goals.append((text, ok, detail))

    ng_s, sq_s, sq_m = small.get("nginx"), small.get("squid"), medium.get("squid")
    off_s = small.get("tapwire-nolog")
    pairs = paired_ratios(tw_s, off_s)
    if tw_s and off_s and pairs:
        # The two ran back to back in each round: the median of those paired ratios is
        # what the verdict uses; the fastest rounds' ratio is printed next to it.
        paired = statistics.median(pairs)
        goal("logging on >= 0.85x logging off", paired >= 0.85,
             "%.2f× (median of %d back-to-back pairs: %s; fastest rounds %s, median rounds %s; "
             "small JSON, log.enabled false as the reference)" % (
                 paired, len(pairs), ", ".join("%.2f" % x for x in pairs),
                 fmt_ratio(tw_s["rps"], off_s["rps"]), median_ratio(tw_s, off_s)))
    else:
        goal("logging on vs off", None, "not measured")
    if tw_s and ng_s:
        goal("small JSON req/s >= 0.8x nginx", tw_s["rps"] >= 0.8 * ng_s["rps"],
             "%s (median rounds %s)" % (fmt_ratio(tw_s["rps"], ng_s["rps"]), median_ratio(tw_s, ng_s)))
        goal("small JSON p99 <= 2x nginx", tw_s["p99_ms"] <= 2 * ng_s["p99_ms"],
             "%.2f ms vs %.2f ms" % (tw_s["p99_ms"], ng_s["p99_ms"]))
    else:
        goal("small JSON vs nginx", None, "not measured")
    if tw_s and sq_s:
        goal("small JSON req/s >= 2.5x squid", tw_s["rps"] >= 2.5 * sq_s["rps"],
             "%s (median rounds %s)" % (fmt_ratio(tw_s["rps"], sq_s["rps"]), median_ratio(tw_s, sq_s)))
    else:
        goal("small JSON vs squid", None, "not measured")
    if tw_m and sq_m:
        goal("64 KiB JSON req/s >= 1.0x squid", tw_m["rps"] >= sq_m["rps"],
             "%s (median rounds %s)" % (fmt_ratio(tw_m["rps"], sq_m["rps"]), median_ratio(tw_m, sq_m)))
    if medium_records and "served" in medium_records:
        goal("64 KiB: every body parsed and logged", medium_records["lost"] == 0
             and medium_records["written"] == medium_records["served"],
             "%d served, %d written, %d lost" % (medium_records["served"], medium_records["written"],
                                                medium_records["lost"]))
    else:
        goal("64 KiB JSON vs squid", None, "not measured")
    # The option, not the default: log.whenBehind wait holds clients instead of dropping
    # records (the default, drop, never lets traffic wait).
    wt_m, wait_records = medium.get("tapwire-wait"), (medium_records or {}).get("wait")
    if wt_m and sq_m:
        goal("(whenBehind wait) 64 KiB >= 1.0x squid", wt_m["rps"] >= sq_m["rps"],
             "%s (median rounds %s)" % (fmt_ratio(wt_m["rps"], sq_m["rps"]), median_ratio(wt_m, sq_m)))
    if wait_records:
        goal("(whenBehind wait) 64 KiB all logged", wait_records["lost"] == 0
             and wait_records["written"] == wait_records["served"],
             "%d served, %d written, %d lost" % (wait_records["served"], wait_records["written"],
                                                wait_records["lost"]))
    st, sn = stream.get("tapwire"), stream.get("nginx")
    if st and sn:
        goal("256 MiB time <= 1.3x nginx", st["seconds"] <= 1.3 * sn["seconds"],
             "%.2f s vs %.2f s (%s)" % (st["seconds"], sn["seconds"], fmt_ratio(st["seconds"], sn["seconds"])))
    else:
        goal("256 MiB time vs nginx", None, "not measured")
    if st:
        goal("256 MiB RSS growth <= 32 MiB", st["growth_mib"] <= 32, "%.1f MiB" % st["growth_mib"])
    else:
        goal("256 MiB RSS growth", None, "not measured")
    if idle and idle["still_open"] == idle["clients"] and idle["served"] == idle["clients"]:
        goal("idle client <= 8 KiB each", idle["kib_per_client"] <= 8, "%.2f KiB" % idle["kib_per_client"])
    elif idle:
        goal("idle client <= 8 KiB each", False, "only %d of %d served and %d still open" % (
            idle["served"], idle["clients"], idle["still_open"]))
    else:
        goal("idle client", None, "not measured")
    if records and records["served_metrics"] is not None:
        goal("records logged == requests served", records["logged"] == records["served_metrics"]
             and records["lost"] == 0,
             "%d logged, %d served, %d lost" % (records["logged"], records["served_metrics"], records["lost"]))
    else:
        goal("records logged == requests served", None, "not measured")

    log("\nGoals:")
    failed = False
    for text, ok, detail in goals:
        verdict = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
        failed = failed or ok is False
        log("  %-4s  %-40s %s" % (verdict, text, detail))
    log("load average at end: %s" % loadavg())
    if args.foreign:
        log("CPU taken by other processes during the wrk rounds: median %.0f%%, max %.0f%% of the machine%s" % (
            statistics.median(args.foreign), max(args.foreign),
            "; req/s and latency are unreliable, CPU µs/req less so" if max(args.foreign) > 10 else ""))

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "loadavg_end": loadavg(), "foreign_cpu_pct": args.foreign, "small": small, "medium": medium,
                       "records": records, "medium_records": medium_records, "stream": stream, "idle": idle,
                       "goals": [{"goal": t, "pass": ok, "detail": d} for t, ok, d in goals]},
                      f, indent=2)
    return failed


if __name__ == "__main__":
    main()
