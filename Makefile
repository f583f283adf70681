# PolyMage-JIT — the two commands a fresh machine needs:
#   make run    builds, then runs the Harris sample on the bundled (generated) photo
#   make test   builds and runs the whole ctest suite
# Both install missing Debian packages first (scripts/install-deps.sh).
#
# Also: make test-asan (the suite under ASan + UBSan), make test-tsan (the serving tests
# under TSan), make soak (the serving soak test,
# SOAK_SECONDS, default 300), make serve (the HTTP image service on 127.0.0.1, PORT
# default 8080), make loadgen (its load generator), make loadtest (warm-up, one client,
# 4 clients and an open-loop soak of LOADTEST_SOAK_SECONDS, default 600, against the service
# as a child process: build/loadtest.json, .svg), make bench (Halide comparison at
# paper sizes), make bench-quick (small sizes, seconds), make bench-python (the Python
# package against OpenCV, and a call's cost; bench-python-quick: small sizes), make install
# (PREFIX, default /usr/local: the header, libpolymage, polymage.pc and the CMake package,
# polymage_io, the polymage command and polymage-serve; no tests built, no packages
# installed), make python
# (the Python package in place: PYTHONPATH=build/python; Debian's /usr/bin/python3 unless
# PYTHON=... at the first configure), make clean.

BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
BENCH_BUILD ?= build-bench
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
APP        ?= harris
OUT        ?= out
RUN_ARGS   ?=
BENCH_ARGS ?=

N          ?= 1000
SEED       ?= 1000000

SOAK_SECONDS ?= 300
PREFIX     ?= /usr/local

PYTHON     ?=

.PHONY: all deps build install python run serve loadgen loadtest test test-asan test-tsan soak fuzz fuzz-asan bench bench-quick bench-python bench-python-quick clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(if $(PYTHON),-DPython3_EXECUTABLE=$(PYTHON))

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# The Python package polymage in place (build/python/polymage; docs/python.md).
python: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target pm_python

# cmake --install: include/polymage.h, libpolymage.so.0 (libpolymage.a with
# -DPM_STATIC=ON), lib/pkgconfig/polymage.pc, lib/cmake/PolyMage, and polymage_io, the
# polymage command and polymage-serve when they are built (README "Install"). Builds only
# what it installs (pm_installed: no tests) and never runs apt: only the build needs the
# packages, so a machine without them runs `make deps` (or `make build`) first.
install:
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS) --target pm_installed
	cmake --install $(BUILD) --prefix $(PREFIX)

# The polymage command's `sample`: the app on the generated photo, PNGs into $(OUT) (made
# if missing); `build/polymage run APP in.png out.png` does the same on a picture of yours.
run: build
	$(BUILD)/polymage sample $(APP) --out $(OUT) --check $(RUN_ARGS)

# The HTTP image service (samples/serve) on 127.0.0.1:$PORT (8080 unless PORT is set).
serve: build
	$(BUILD)/serve $(if $(PORT),--port $(PORT))

# The service's load generator (samples/serve/loadgen.c) against an in-process service on
# a free loopback port; LOADGEN_ARGS adds options (--app, --sizes, --requests, ...).
LOADGEN_ARGS ?=
loadgen: build
	$(BUILD)/pm_loadgen --spawn $(LOADGEN_ARGS)

# The load test (docs/loadtest.md): pm_loadgen --loadtest starts $(BUILD)/serve as a child
# process with --memory-budget 1G, samples its RSS, and runs warm-up, one client, 4 clients
# (1080x1920 PNGs to harris, unsharp_mask, bilateral_grid) and an open-loop soak of
# LOADTEST_SOAK_SECONDS (default 600) at drifting sizes; a table on stdout,
# $(BUILD)/loadtest.json and $(BUILD)/loadtest.svg. LOADTEST_ARGS adds options after these
# (the last of an option wins: --serve-args "..." replaces the service's arguments).
LOADTEST_SOAK_SECONDS ?= 600
LOADTEST_ARGS ?=
loadtest: build
	$(BUILD)/pm_loadgen --loadtest --child --serve-args "--memory-budget 1G" --budget-mb 1024 \
	  --soak-seconds $(LOADTEST_SOAK_SECONDS) --json $(BUILD)/loadtest.json \
	  --svg $(BUILD)/loadtest.svg $(LOADTEST_ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPM_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS)

# The serving runtime's tests (the cache, the soak, the disk cache, the API contract, the
# HTTP service) and the parallel code generation's under ThreadSanitizer; test/tsan.supp
# names the only suppressions: the uninstrumented insides of libgomp and LLVM.
TSAN_TESTS ?= test_kernel_cache|test_server_soak|test_disk_cache|test_disk_trust|test_isolate|test_api_contract|test_serve$$|test_parallel_codegen
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPM_SANITIZE=thread
	cmake --build $(TSAN_BUILD) -j$(JOBS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS="suppressions=$(CURDIR)/test/tsan.supp halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -j$(JOBS) -R "$(TSAN_TESTS)"

# The serving runtime's soak test beyond the suite's 20 s (make soak SOAK_SECONDS=600).
soak: build
	PM_SOAK_SECONDS=$(SOAK_SECONDS) $(BUILD)/test/test_server_soak

# The random-pipeline fuzzer beyond the suite's bounded set (seeds 1..320): N cases from
# seed SEED (make fuzz N=5000 SEED=42); a failure prints its seed and C builder code.
fuzz: build
	$(BUILD)/test/pm_fuzz --seed $(SEED) --cases $(N)

fuzz-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPM_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j$(JOBS) --target pm_fuzz
	$(ASAN_BUILD)/test/pm_fuzz --seed $(SEED) --cases $(N)

$(BENCH_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DPM_BUILD_BENCH=ON

bench: deps $(BENCH_BUILD)/CMakeCache.txt
	cmake --build $(BENCH_BUILD) -j$(JOBS) --target pm_bench
	$(BENCH_BUILD)/bench/pm_bench $(BENCH_ARGS)

# bench-quick also checks that the Halide filters docs/jit.md counts (bench/lines) compute
# what the examples compute (pm_halide_lines).
bench-quick: deps $(BENCH_BUILD)/CMakeCache.txt
	cmake --build $(BENCH_BUILD) -j$(JOBS) --target pm_bench pm_halide_lines
	$(BENCH_BUILD)/bench/pm_halide_lines
	$(BENCH_BUILD)/bench/pm_bench --quick $(BENCH_ARGS)

# The Python bench (python/bench/bench.py, docs/benchmarks.md "Python"): polymage's filters
# and apps against OpenCV on the same arrays at 1 and 2 threads, rounds interleaved in one
# process, each OpenCV result checked against the pipeline's; and a call from Python against
# the same kernel's pm_kernel_run from C. BENCH_PY_ARGS adds options (--cases, --rounds, ...).
# Uses the $(BUILD) tree's package (the kernels are the JIT's code whatever the build type).
BENCH_PY_ARGS ?=
PY_BENCH = cmake --build $(BUILD) -j$(JOBS) --target pm_python pm_py_canon_text pm_call_cost && \
	PYTHONPATH=$(BUILD)/python $(or $(PYTHON),/usr/bin/python3) python/bench/bench.py --build $(BUILD)
bench-python: deps $(BUILD)/CMakeCache.txt
	$(PY_BENCH) $(BENCH_PY_ARGS)

bench-python-quick: deps $(BUILD)/CMakeCache.txt
	$(PY_BENCH) --quick $(BENCH_PY_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(BENCH_BUILD)
