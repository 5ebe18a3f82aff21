# Tapwire: `make run` and `make test` are the two commands a newcomer needs.
# Both first install the Debian packages the build links against (only those missing).

SWIFT        ?= swift
CONFIG       ?= config/tapwire.json
DEB_BUILD    := pkg-config libevent-dev zlib1g-dev libbrotli-dev libzstd-dev libssl-dev libisal-dev libnghttp2-dev
DEB_TEST     := curl python3 python3-venv systemd openssl protobuf-compiler libprotobuf-dev git squid microsocks openssh-server netcat-openbsd nghttp2-server nghttp2-client python3-protobuf
# The viewer's browser tests (ViewerEndToEndTests): headless Chromium driven by selenium, run
# by Debian's own /usr/bin/python3 (whatever python3 is first on PATH), with the HAR schema
# check's jsonschema from Debian too.
DEB_VIEWER_TEST := chromium chromium-driver python3-selenium python3-jsonschema
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
JOBS         ?= $(shell nproc)

.PHONY: run build release test deps test-deps clean install uninstall bench-json bench-record bench bench-ws bench-h2 bench-deps bench-ab bench-query bench-viewer

# `make install` (as root): binary, systemd units, and the sample config unless one exists.
# It never builds: under sudo, swift is usually not on PATH (/opt/swift is added by a
# login profile), and a build as root would leave root-owned files in your .build. So:
# `make release`, then `sudo make install`; BIN names another binary. DESTDIR stages into
# a directory (packaging, tests); SKIP_BUILD=1 installs everything but the binary. The
# config always goes to /etc/tapwire, where the unit's ConfigurationDirectory= points.
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
UNITDIR      ?= /etc/systemd/system
CONFIG_SAMPLE ?= config/tapwire.json
SKIP_BUILD   ?=
BIN          ?= .build/release/tapwire

# Installs only what dpkg does not already have; apt-get update runs only then.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(DEB_BUILD))

# Python modules only the tests use (HAR schema check, Prometheus text parser, MessagePack
# cases made by the reference packer, raw HTTP/2 frames from h2, gRPC calls from grpcio), for the
# python3 on PATH: Debian's own (prefix /usr, not a venv) takes them from apt (its pip
# refuses system installs, PEP 668); another (pyenv, a venv, even one made from Debian's
# python, whose python3 links to /usr/bin) from PyPI. Checked after: a test that cannot import
# them would skip, and a skip must not pass for a check.
PIP_TEST     := jsonschema prometheus_client msgpack h2 grpcio
DEB_PY_TEST  := python3-jsonschema python3-prometheus-client python3-msgpack python3-h2 python3-grpcio
# DuckDB and ClickHouse's engine (chdb) for the docs/analytics.md recipes, which
# AnalyticsEndToEndTests runs, and the `websockets` client and server WebSocketEndToEndTests
# run through the proxy; from PyPI into a venv of their own (TAPWIRE_ANALYTICS_PYTHON and
# TAPWIRE_WS_PYTHON name other interpreters).
TEST_VENV    := .venv-test
PIP_ANALYTICS := 'duckdb>=1.1' 'chdb>=3'
PIP_WS       := 'websockets>=15'

test-deps: deps
	$(call apt_install,$(DEB_TEST) $(DEB_VIEWER_TEST))
	@/usr/bin/python3 -c "import selenium, jsonschema" || \
	  { echo "the viewer's browser tests need python3-selenium and python3-jsonschema for /usr/bin/python3"; exit 1; }
	@python3 -c "import jsonschema, prometheus_client, msgpack, h2, grpc" 2>/dev/null || { \
	  if python3 -c 'import sys; sys.exit(0 if sys.prefix == sys.base_prefix == "/usr" else 1)'; then \
	    $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEB_PY_TEST); \
	  else \
	    python3 -m pip install --quiet --disable-pip-version-check $(PIP_TEST); \
	  fi; }
	@python3 -c "import jsonschema, prometheus_client, msgpack, h2, grpc" || \
	  { echo "the tests need the Python modules $(PIP_TEST) for $$(command -v python3)"; exit 1; }
	@$(TEST_VENV)/bin/python -c "import duckdb, chdb" 2>/dev/null || { \
	  echo "installing $(PIP_ANALYTICS) into $(TEST_VENV)"; \
	  python3 -m venv $(TEST_VENV) && $(TEST_VENV)/bin/pip install -q --disable-pip-version-check $(PIP_ANALYTICS); }
	@$(TEST_VENV)/bin/python -c "import websockets" 2>/dev/null || { \
	  echo "installing $(PIP_WS) into $(TEST_VENV)"; \
	  $(TEST_VENV)/bin/pip install -q --disable-pip-version-check $(PIP_WS); }

build: deps
	$(SWIFT) build -j $(JOBS)

release: deps
	$(SWIFT) build -c release -j $(JOBS)

run: release
	$$($(SWIFT) build -c release --show-bin-path)/tapwire run --config $(CONFIG)

# The whole suite. End-to-end tests start the release binary, so it is built first.
# The tests are XCTest only; without --disable-swift-testing the run would end on
# Swift Testing's "0 tests passed" line instead of XCTest's count.
test: test-deps release
	TAPWIRE_BIN=$$($(SWIFT) build -c release --show-bin-path)/tapwire \
	  $(SWIFT) test -j $(JOBS) --disable-swift-testing

# Unit and in-process engine tests under the address sanitizer, then the thread sanitizer,
# each in its own scratch directory so the normal .build stays. End-to-end tests are skipped:
# they drive the separately built binary, which no sanitizer instruments. No suppressions.
# Leak detection is off: at exit LSan reports XCTest's own retain cycles (every test case),
# Swift weak-reference side tables (their address is kept shifted in the object's refcount
# word, invisible to LSan) and the engine, which by design lives as long as its process.
.PHONY: test-sanitize
test-sanitize: test-deps
	ASAN_OPTIONS=detect_leaks=0 \
	  $(SWIFT) test -j $(JOBS) --sanitize=address --scratch-path .build-asan --skip EndToEndTests
	$(SWIFT) test -j $(JOBS) --sanitize=thread --scratch-path .build-tsan --skip EndToEndTests

# JSON parse/write and validate+compact throughput against Foundation and simdjson (a C++
# harness on Debian's libsimdjson, run on the same documents); exits non-zero when below the goals.
DEB_BENCH_JSON := g++ libsimdjson-dev
bench-json: deps
	$(call apt_install,$(DEB_BENCH_JSON))
	$(SWIFT) build -c release -j $(JOBS) --product JSONBenchmark
	mkdir -p .build
	g++ -O2 -std=c++17 -o .build/simdjson-bench Benchmarks/SimdjsonBenchmark/simdjson_bench.cpp -lsimdjson
	$$($(SWIFT) build -c release --show-bin-path)/JSONBenchmark --simdjson .build/simdjson-bench

# The serialization worker's share of each exchange (rule, decoding, serializer, record), µs per
# record for the small and the 64 KiB document; CALLGRIND=1 runs it under callgrind instead.
CALLGRIND    ?=
bench-record: deps
	$(SWIFT) build -c release -j $(JOBS) --product RecordBenchmark
	$(if $(CALLGRIND),valgrind --tool=callgrind --callgrind-out-file=.build/record.callgrind) \
	  $$($(SWIFT) build -c release --show-bin-path)/RecordBenchmark $(if $(CALLGRIND),0.02,)

# Tapwire against nginx, squid, tinyproxy, mitmproxy and itself with logging off, on loopback
# (Benchmarks/README.md); then WebSocket echo with message records on and off, and mitmproxy
# (Benchmarks/ws_bench.py, driving the C origin and load generator in Benchmarks/WebSocketEcho).
# A benchmark, not a test: exits 0 whatever the figures; `make bench BENCH_ARGS=--strict`
# exits 1 when a goal fails.
DEB_BENCH    := nginx-light squid tinyproxy wrk curl python3 python3-venv gcc nghttp2-client nghttp2-server nghttp2-proxy
BENCH_VENV   := Benchmarks/.venv
BENCH_ARGS   ?=

bench-deps: deps
	$(call apt_install,$(DEB_BENCH))
	@[ -x $(BENCH_VENV)/bin/mitmdump ] || { \
	  echo "installing mitmproxy into $(BENCH_VENV)"; \
	  python3 -m venv $(BENCH_VENV) && $(BENCH_VENV)/bin/pip install -q 'mitmproxy>=10'; }

bench: bench-deps
	$(SWIFT) build -c release -j $(JOBS) --product tapwire
	python3 Benchmarks/proxy_bench.py \
	  --tapwire $$($(SWIFT) build -c release --show-bin-path)/tapwire --venv $(BENCH_VENV) $(BENCH_ARGS)
	$(MAKE) bench-ws WS_BENCH_ARGS="$(if $(findstring --strict,$(BENCH_ARGS)),--strict,)"
	$(MAKE) bench-h2 H2_BENCH_ARGS="$(if $(findstring --strict,$(BENCH_ARGS)),--strict,)"
	$(MAKE) bench-viewer VIEWER_BENCH_ARGS="--browser $(if $(findstring --strict,$(BENCH_ARGS)),--strict,)"

# The HTTP/2 part of `make bench` alone: h2load through Tapwire (h2c reverse listener),
# nghttpx and mitmproxy to one nghttpd origin (Benchmarks/h2_bench.py).
H2_BENCH_ARGS ?=
bench-h2: bench-deps
	$(SWIFT) build -c release -j $(JOBS) --product tapwire
	python3 Benchmarks/h2_bench.py --tapwire $$($(SWIFT) build -c release --show-bin-path)/tapwire \
	  --venv $(BENCH_VENV) $(H2_BENCH_ARGS)

# The WebSocket part of `make bench` alone; the C origin and load generator are built with gcc
# against libcrypto (libssl-dev, a build dependency already).
WS_BENCH_ARGS ?=
bench-ws: bench-deps
	$(SWIFT) build -c release -j $(JOBS) --product tapwire
	mkdir -p .build
	gcc -O2 -Wall -o .build/ws-echo Benchmarks/WebSocketEcho/ws_echo.c -lcrypto
	python3 Benchmarks/ws_bench.py --ws-echo .build/ws-echo \
	  --tapwire $$($(SWIFT) build -c release --show-bin-path)/tapwire --venv $(BENCH_VENV) $(WS_BENCH_ARGS)

# Two builds of Tapwire side by side, each with its own wrk, so that both see the same host:
# CPU per JSON request by thread group (Benchmarks/cpu_ab.py; DOCUMENT=64k for the 64 KiB page). For comparing a change;
# `make bench` is what the goals are measured with.
bench-ab: deps
	@test -n "$(A)" && test -n "$(B)" || { echo "usage: make bench-ab A=old-binary B=new-binary [ROUNDS=6] [LOGGING=off|on-off] [DOCUMENT=64k]" >&2; exit 2; }
	$(call apt_install,nginx-light wrk python3)
	python3 Benchmarks/cpu_ab.py "$(A)" "$(B)" --rounds $(or $(ROUNDS),6) --logging $(or $(LOGGING),on) --document $(or $(DOCUMENT),small)

# The viewer's goals (Benchmarks/viewer_bench.py): first rows with 100,000 records in history,
# and small-JSON throughput with and without a connected viewer (its live stream; add
# VIEWER_BENCH_ARGS=--browser for a real page), with how far its live rows trail the log.
# A benchmark, not a test: exits 0 whatever the figures (VIEWER_BENCH_ARGS=--strict: 1 on a miss).
VIEWER_BENCH_ARGS ?=

bench-viewer: deps
	$(call apt_install,nginx-light wrk $(DEB_VIEWER_TEST))
	$(SWIFT) build -c release -j $(JOBS) --product tapwire
	/usr/bin/python3 Benchmarks/viewer_bench.py \
	  --tapwire $$($(SWIFT) build -c release --show-bin-path)/tapwire $(VIEWER_BENCH_ARGS)

# `tapwire query --count` against DuckDB (read_json_auto) and zcat | grep -c over a 1 GiB log of
# rotated .gz files and the active file, built once under .build/bench-query-log; then
# `--reverse --limit 50`. A benchmark, not a test: exits 0 whatever the figures
# (QUERY_BENCH_ARGS=--strict: 1 when a goal is missed). DuckDB comes from PyPI into .venv-bench.
QUERY_VENV       := .venv-bench
QUERY_BENCH_ARGS ?=

bench-query: deps
	$(call apt_install,python3 python3-venv gzip grep)
	@[ -x $(QUERY_VENV)/bin/python ] && $(QUERY_VENV)/bin/python -c "import duckdb" 2>/dev/null || { \
	  echo "installing duckdb into $(QUERY_VENV)"; \
	  python3 -m venv $(QUERY_VENV) && $(QUERY_VENV)/bin/pip install -q duckdb; }
	$(SWIFT) build -c release -j $(JOBS) --product tapwire
	$(QUERY_VENV)/bin/python Benchmarks/query_bench.py \
	  --tapwire $$($(SWIFT) build -c release --show-bin-path)/tapwire --python $(QUERY_VENV)/bin/python $(QUERY_BENCH_ARGS)

clean:
	rm -rf .build

# The unit names /usr/local/bin/tapwire; it is rewritten for another BINDIR.
# An existing tapwire.json is never replaced: it is the administrator's.
install:
	@test -f $(CONFIG_SAMPLE) || { echo "install: $(CONFIG_SAMPLE): sample config missing" >&2; exit 1; }
ifeq ($(SKIP_BUILD),)
	@test -x "$(BIN)" || { echo "install: no $(BIN): run \`make release\` as yourself first, then \`sudo make install\`" >&2; exit 1; }
	install -D -m 0755 "$(BIN)" "$(DESTDIR)$(BINDIR)/tapwire"
endif
	install -d -m 0755 "$(DESTDIR)$(UNITDIR)"
	sed 's|/usr/local/bin/tapwire|$(BINDIR)/tapwire|g' systemd/tapwire.service > "$(DESTDIR)$(UNITDIR)/tapwire.service"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/tapwire.service"
	install -m 0644 systemd/tapwire.socket "$(DESTDIR)$(UNITDIR)/tapwire.socket"
	@if [ -e "$(DESTDIR)/etc/tapwire/tapwire.json" ]; then \
	  echo "keeping existing $(DESTDIR)/etc/tapwire/tapwire.json"; \
	else \
	  echo "install -D -m 0644 $(CONFIG_SAMPLE) $(DESTDIR)/etc/tapwire/tapwire.json"; \
	  install -D -m 0644 "$(CONFIG_SAMPLE)" "$(DESTDIR)/etc/tapwire/tapwire.json"; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
	  echo "systemctl daemon-reload"; systemctl daemon-reload; \
	  echo "start with: systemctl enable --now tapwire.service"; \
	fi

# Leaves the config (/etc/tapwire), state (/var/lib/tapwire) and logs (/var/log/tapwire).
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
	  systemctl disable --now tapwire.socket tapwire.service 2>/dev/null || true; \
	fi
	rm -f "$(DESTDIR)$(BINDIR)/tapwire" "$(DESTDIR)$(UNITDIR)/tapwire.service" "$(DESTDIR)$(UNITDIR)/tapwire.socket"
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
	  echo "systemctl daemon-reload"; systemctl daemon-reload; \
	fi

# Fuzzing (Fuzz/): libFuzzer targets for the HTTP/1 parsers, the JSON parser/writer, the
# MessagePack decoder and the WebSocket frame parser.
# Each runs FUZZ_SECONDS (default 60); FUZZ_RUNS=N runs N inputs each instead.
# Crashing inputs land in Fuzz/.build/crashes/. A single process per target, no -jobs.
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?=
FUZZ_LIMIT   := $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))

.PHONY: fuzz fuzz-deps

fuzz:
	Fuzz/build.sh http1 json msgpack websocket protobuf grpc
	Fuzz/run.sh http1 $(FUZZ_LIMIT) -rss_limit_mb=2048
	Fuzz/run.sh json $(FUZZ_LIMIT) -rss_limit_mb=2048
	Fuzz/run.sh msgpack $(FUZZ_LIMIT) -rss_limit_mb=2048
	Fuzz/run.sh websocket $(FUZZ_LIMIT) -rss_limit_mb=2048
	Fuzz/run.sh protobuf $(FUZZ_LIMIT) -rss_limit_mb=2048
	Fuzz/run.sh grpc $(FUZZ_LIMIT) -rss_limit_mb=2048

# h11 for Fuzz/h11/generate_corpus.py, which rewrites the differential corpus
# (Tests/HTTP1Tests/Resources/h11-corpus) that DifferentialH11Tests replays.
fuzz-deps:
	$(call apt_install,python3 python3-venv)
	test -x Fuzz/.venv/bin/python || python3 -m venv Fuzz/.venv
	Fuzz/.venv/bin/pip install -q 'h11==0.16.0'
