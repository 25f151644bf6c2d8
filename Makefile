# A thin front end to CMake for the README's commands and a few chores.
#
#   make demo      build, then examples/demo.sh: hinting returning memory on one recorded trace
#                  and returning almost none on another, with why (DEMO_TRACE=FILE compares
#                  on FILE instead); without the command, the traces or jq, examples/demo.c
#   make check     the release build and its quick tests (not the comparison stage and the
#                  slow ones), a couple of minutes: while working
#   make test      build and run every test twice: a RelWithDebInfo build in build/, then an
#                  AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/; then the
#                  threaded tests once more under ThreadSanitizer in build-tsan/
#
# Both install the Debian packages they need first (make deps).  Other targets: build, install
# (PREFIX=..., DESTDIR is honoured), bench (BENCH_ARGS=--quick), plots, fuzz (libFuzzer on the
# trace readers and the replay for FUZZ_SECONDS, default 300; needs clang), test-slurm
# (`buddyhint sweep` on a one-node Slurm cluster started here; root; installs slurm-wlm, munge
# and parallel for itself), test-guest (a real guest under QEMU against the replay's
# prediction: bench/exp_guest --quick; installs QEMU and the rest with apt-get;
# GUEST_RECALL_TARGET, GUEST_ROUND_RECALL_FLOOR), format, format-check, deps, clean.

SHELL          := /bin/bash
.SHELLFLAGS    := -o pipefail -c

BUILD          ?= build
ASAN_BUILD     ?= build-asan
TSAN_BUILD     ?= build-tsan
FUZZ_BUILD     ?= build-fuzz
FUZZ_SECONDS   ?= 300
BUILD_TYPE     ?= RelWithDebInfo
# Debug for the sanitizer build: assertions on, and -O0 sees other bugs than -O2 does.
ASAN_BUILD_TYPE ?= Debug
PREFIX         ?= /usr/local
JOBS           ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE          ?= cmake
CTEST          ?= ctest
CMAKE_FLAGS    ?=
CLANG_FORMAT   ?= clang-format
ASAN_OPTIONS   ?= detect_leaks=1
UBSAN_OPTIONS  ?= print_stacktrace=1

# The other tools' traces: libtracecmd reads trace-cmd's trace.dat, perf (linux-perf) reads
# perf.data for us, and the bpftrace example's test runs bpftrace for real.  `buddyhint record`
# reads the kernel's ring buffers with libtracefs.
TRACE_TOOL_PACKAGES ?= libtracecmd-dev libtraceevent-dev libtracefs-dev linux-perf bpftrace

DEB_PACKAGES := build-essential cmake pkg-config libcmocka-dev libjemalloc-dev libnuma-dev \
                zlib1g-dev libzstd-dev gnuplot-nox libyaml-dev libjansson-dev nettle-dev jq \
                groff-base man-db python3-pandas python3-pytest python3-setuptools python3-pip \
                python3-venv \
                $(TRACE_TOOL_PACKAGES)

# `make demo` runs examples/demo.sh: two recorded traces in the recorded machine's shape, sim
# backing, each table followed by one sentence of why (about 5 s after the build on an idle
# two-core machine).  DEMO_TRACE=FILE compares the strategies DEMO_STRATEGIES on that trace instead.
DEMO_TRACE ?=

SOURCES = $(shell find src include tests examples bench -name '*.[ch]' 2>/dev/null)

.PHONY: all deps configure build demo check test test-serial test-release test-asan test-tsan test-slurm \
        test-guest install bench plots fuzz format format-check clean

all: build

# Installs the missing packages only: apt-get runs when something is missing, and never as a
# matter of course.  Not on Debian (no dpkg-query), it says what is needed and goes on.
deps:
	@if ! command -v dpkg-query >/dev/null 2>&1; then \
	  echo "deps: not a Debian system; make sure these (or their equivalents) are installed:"; \
	  echo "      $(DEB_PACKAGES)"; \
	  exit 0; \
	fi; \
	missing=; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then echo "deps: all packages installed"; exit 0; fi; \
	echo "deps: installing$$missing"; \
	sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing

configure: deps
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: configure
	$(CMAKE) --build $(BUILD) -j $(JOBS)

DEMO_STRATEGIES ?= none,bitmap,bubble,bubble:order=3

demo: build
	@if [ -n "$(DEMO_TRACE)" ]; then \
	  echo "$(BUILD)/buddyhint compare $(DEMO_TRACE) --strategies $(DEMO_STRATEGIES)"; \
	  $(BUILD)/buddyhint compare $(DEMO_TRACE) --strategies $(DEMO_STRATEGIES); \
	elif [ -x $(BUILD)/buddyhint ] && [ -f traces/real-thp-256M.bht.zst ] && \
	     [ -f traces/real-memhog-300M.bht.zst ] && command -v jq >/dev/null; then \
	  examples/demo.sh $(BUILD) traces; \
	else \
	  echo "$(BUILD)/examples/demo"; \
	  $(BUILD)/examples/demo; \
	fi

# The quick check while working: the release build and its tests but for those labelled
# compare (the strategy comparison stage and the checks around it) or slow (the jemalloc
# baseline, the recorder, the output safety checks, sweeps, install, Python, bpftrace): 69 of
# the 89 tests, 17 s once built (26 s of CPU).  `make test` runs them all, in
# three builds.
CHECK_EXCLUDE ?= compare|slow

check: deps
	@echo "==== $(BUILD): $(BUILD_TYPE) build and its quick tests (not labelled $(CHECK_EXCLUDE))"
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DBH_BUILD_TESTS=ON $(CMAKE_FLAGS)
	$(CMAKE) --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && $(CTEST) --output-on-failure -j $(JOBS) -LE '$(CHECK_EXCLUDE)'

# Runs both builds' tests even if the first fails, then fails if either did, and closes with the
# count over both builds.
test: deps
	@rc=0; rm -f $(BUILD)/ctest.log $(ASAN_BUILD)/ctest.log $(TSAN_BUILD)/ctest.log; \
	$(MAKE) --no-print-directory test-release || rc=1; \
	$(MAKE) --no-print-directory test-asan || rc=1; \
	$(MAKE) --no-print-directory test-tsan || rc=1; \
	echo; passed=0; failed=0; \
	for d in $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD); do \
	  counts=$$(awk '/tests passed, [0-9]+ tests? failed out of/ { print $$NF - $$4, $$4 }' \
	            $$d/ctest.log 2>/dev/null | tail -n 1); \
	  if [ -z "$$counts" ]; then echo "$$d: no tests ran (see above)"; rc=1; continue; fi; \
	  read -r p f <<<"$$counts"; echo "$$d: $$p passed, $$f failed"; \
	  passed=$$((passed + p)); failed=$$((failed + f)); \
	done; \
	[ $$rc -eq 0 ] || echo "make test: FAILED"; \
	echo "summary: $$passed passed, $$failed failed"; \
	exit $$rc

# The release build's tests again, one at a time (make test runs them $(JOBS) at a time): a test
# that passes only beside others, or only alone, fails one of the two.  CI runs both.
test-serial: build
	@echo "==== $(BUILD): $(BUILD_TYPE) tests, one at a time"
	cd $(BUILD) && $(CTEST) --output-on-failure -j 1

test-release:
	@echo "==== $(BUILD): $(BUILD_TYPE) build and tests"
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DBH_BUILD_TESTS=ON $(CMAKE_FLAGS)
	$(CMAKE) --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && $(CTEST) -V -j $(JOBS) 2>&1 | tee ctest.log

test-asan:
	@echo "==== $(ASAN_BUILD): AddressSanitizer + UndefinedBehaviorSanitizer build and tests"
	$(CMAKE) -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=$(ASAN_BUILD_TYPE) -DBH_ASAN=ON \
	  -DBH_UBSAN=ON -DBH_BUILD_BENCH=OFF -DBH_BUILD_TESTS=ON $(CMAKE_FLAGS)
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=$(ASAN_OPTIONS) UBSAN_OPTIONS=$(UBSAN_OPTIONS) \
	  $(CTEST) -V -j $(JOBS) 2>&1 | tee ctest.log

# ThreadSanitizer over the tests that race threads against each other (names with "thread").
# Only their programs are built (each test is named after its target): a third of the time
# of building everything.
test-tsan:
	@echo "==== $(TSAN_BUILD): ThreadSanitizer build, threaded tests"
	$(CMAKE) -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBH_TSAN=ON \
	  -DBH_BUILD_BENCH=OFF -DBH_BUILD_TESTS=ON $(CMAKE_FLAGS)
	$(CMAKE) --build $(TSAN_BUILD) -j $(JOBS) --target \
	  $$(cd $(TSAN_BUILD) && $(CTEST) -N -R thread | awk '/Test +#[0-9]+:/ { print $$3 }')
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1 $(CTEST) -V -j $(JOBS) -R thread 2>&1 | tee ctest.log

# `buddyhint sweep --engine slurm` on a real one-node Slurm cluster (munged, slurmctld, slurmd
# started from a temporary folder, as root) and `--engine parallel` with GNU parallel: the
# tables must equal the local engine's, and a cancelled array task must be resumed alone
# (tests/cli/sweep/slurm.sh).  Its packages are installed here only: `make test` needs none of
# them.
SLURM_PACKAGES := slurm-wlm munge parallel

test-slurm: build
	@$(MAKE) --no-print-directory deps DEB_PACKAGES="$(SLURM_PACKAGES)"
	bash tests/cli/sweep/slurm.sh $(BUILD)/buddyhint traces

# libFuzzer (clang) with ASan+UBSan on tests/fuzz/fuzz_trace.c: every trace format, then a
# replay with the checker.  The corpus grows in $(FUZZ_BUILD)/corpus; crashes are written to
# the current directory as crash-*.  `make test` runs the same target as a seeded mutation
# test (fuzz_trace_smoke).
fuzz: deps
	$(CMAKE) -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DBH_ASAN=ON -DBH_UBSAN=ON -DBH_FUZZ=ON -DBH_BUILD_BENCH=OFF -DBH_BUILD_TESTS=ON \
	  $(CMAKE_FLAGS)
	$(CMAKE) --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_trace
	mkdir -p $(FUZZ_BUILD)/corpus
	@# the leaks inside libtracecmd and libtraceevent that the trace.dat tests suppress too
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/trace/lsan-libtracecmd.supp \
	$(FUZZ_BUILD)/tests/fuzz/fuzz_trace -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	  -timeout=20 $(FUZZ_BUILD)/corpus tests/fuzz/seeds tests/trace/data tests/cli/data

# PYTHON=/path/to/python: the Python package goes into that interpreter's site-packages (a
# pyenv, conda or venv python); by default Debian's python3 finds it under PREFIX.
PYTHON ?=

install: build
	@if [ -n "$(PYTHON)" ]; then \
	  $(CMAKE) -S . -B $(BUILD) -DBH_PYTHON=$(PYTHON) $(CMAKE_FLAGS) >/dev/null; \
	  $(CMAKE) --build $(BUILD) -j $(JOBS) >/dev/null; \
	fi
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)
	@# the dynamic linker's cache learns the new library (ctypes in python/ finds it so)
	@if [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

# One 1 GiB guest, one 100 MiB memhog round, reporting on, under QEMU (KVM where it works, else
# TCG): fails if QEMU cannot be installed, the guest does not boot, the host sees no report,
# the replay's recall or precision of the blocks the guest had reported at the end falls under
# GUEST_RECALL_TARGET %, its recall of the blocks reported in the round under
# GUEST_ROUND_RECALL_FLOOR % (bench/exp_guest says why the round is checked more loosely), or
# the memory it predicts the round reported is further than max(GUEST_ROUND_AMOUNT_TOLERANCE %,
# 4 MiB) from what the host discarded (for the replay with the pcp events; the one without them
# is checked on blocks only).  The guest runs Debian's 6.12 kernel and records the pcp events.
GUEST_RECALL_TARGET ?= 95
GUEST_ROUND_RECALL_FLOOR ?= 50
GUEST_ROUND_AMOUNT_TOLERANCE ?= 10
test-guest: build
	bench/exp_guest --quick --install-deps --build-dir $(BUILD) --out $(BUILD)/guest-results \
	  --recall-target $(GUEST_RECALL_TARGET) --round-recall-floor $(GUEST_ROUND_RECALL_FLOOR) \
	  --round-amount-tolerance $(GUEST_ROUND_AMOUNT_TOLERANCE)

bench: build
	@if [ -x bench/run-all ]; then BH_BUILD_DIR=$(BUILD) bench/run-all $(BENCH_ARGS); \
	else echo "bench: no bench/run-all yet"; fi

plots:
	@if [ -x plots/run-all ]; then BH_BUILD_DIR=$(BUILD) plots/run-all $(PLOTS_ARGS); \
	else echo "plots: no plots/run-all yet"; fi

format:
	$(CLANG_FORMAT) -i $(SOURCES)

format-check:
	$(CLANG_FORMAT) --dry-run -Werror $(SOURCES)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
