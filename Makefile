# Tapwire: `make run` and `make test` are the two commands a newcomer needs.
# Both first install the Debian packages the build links against (only those missing).

SWIFT        ?= swift
CONFIG       ?= config/tapwire.json
DEB_BUILD    := pkg-config libevent-dev zlib1g-dev libbrotli-dev libzstd-dev libssl-dev
DEB_TEST     := curl python3
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
JOBS         ?= $(shell nproc)

.PHONY: run build release test deps test-deps clean bench-json bench bench-deps

# Installs only what dpkg does not already have; apt-get update runs only then.
define apt_install
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(DEB_BUILD))

test-deps: deps
	$(call apt_install,$(DEB_TEST))

build: deps
	$(SWIFT) build -j $(JOBS)

release: deps
	$(SWIFT) build -c release -j $(JOBS)

run: release
	$$($(SWIFT) build -c release --show-bin-path)/tapwire run --config $(CONFIG)

# The whole suite. End-to-end tests start the release binary, so it is built first.
test: test-deps release
	TAPWIRE_BIN=$$($(SWIFT) build -c release --show-bin-path)/tapwire \
	  $(SWIFT) test -j $(JOBS)

# JSON parse/write throughput against Foundation; exits non-zero when below the goals.
bench-json: deps
	$(SWIFT) build -c release -j $(JOBS) --product JSONBenchmark
	$$($(SWIFT) build -c release --show-bin-path)/JSONBenchmark

# Tapwire against nginx, squid, tinyproxy and mitmproxy on loopback (Benchmarks/README.md).
# A benchmark, not a test: exits 0 whatever the figures; `make bench BENCH_ARGS=--strict`
# exits 1 when a goal fails.
DEB_BENCH    := nginx-light squid tinyproxy wrk curl python3 python3-venv
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

clean:
	rm -rf .build
