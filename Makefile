# Tapwire: `make run` and `make test` are the two commands a newcomer needs.
# Both first install the Debian packages the build links against (only those missing).

SWIFT        ?= swift
CONFIG       ?= config/tapwire.json
DEB_BUILD    := pkg-config libevent-dev zlib1g-dev libbrotli-dev libzstd-dev libssl-dev
DEB_TEST     := curl python3
SUDO         := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
JOBS         ?= $(shell nproc)

.PHONY: run build release test deps test-deps clean bench-json

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

clean:
	rm -rf .build

# Fuzzing (Fuzz/): libFuzzer targets for the HTTP/1 parsers and the JSON parser/writer.
# Each runs FUZZ_SECONDS (default 60); FUZZ_RUNS=N runs N inputs each instead.
# Crashing inputs land in Fuzz/.build/crashes/. A single process per target, no -jobs.
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?=
FUZZ_LIMIT   := $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))

.PHONY: fuzz fuzz-deps

fuzz:
	Fuzz/build.sh http1 json
	Fuzz/run.sh http1 $(FUZZ_LIMIT) -rss_limit_mb=2048
	Fuzz/run.sh json $(FUZZ_LIMIT) -rss_limit_mb=2048

# h11 for Fuzz/h11/generate_corpus.py, which rewrites the differential corpus
# (Tests/HTTP1Tests/Resources/h11-corpus) that DifferentialH11Tests replays.
fuzz-deps:
	$(call apt_install,python3 python3-venv)
	test -x Fuzz/.venv/bin/python || python3 -m venv Fuzz/.venv
	Fuzz/.venv/bin/pip install -q 'h11==0.16.0'
