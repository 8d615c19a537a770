# Thin wrapper around CMake. `make` builds the library and tools, `make demo`
# builds only what the demo runs (log: build/demo-build.log) and runs it,
# `make test` runs every test (C units, fuzz corpora, tools, Python, Triton
# 3.6-3.9; venvs and wheels in ~/.cache/cproton, scripts/cache.sh) and ends
# with one line "N passed, N failed[, N skipped]", `make asan` runs the C
# suite under ASan + UBSan and `make tsan` the threaded tests under
# ThreadSanitizer; with clang, `make asan-clang` runs the C suite under
# clang's ASan + UBSan, `make msan` the fuzz corpora and the threaded
# programs under MemorySanitizer and `make fuzz` each parser's libFuzzer
# target for FUZZ_SECONDS (docs/testing.md).
# Each target first checks the Debian packages it needs (scripts/deps.sh
# build|test|valgrind): as root it installs the missing ones, as anyone else
# it prints the exact apt-get line. `make` needs only the build packages.
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
ASAN_CLANG_BUILD ?= build-asan-clang
MSAN_BUILD ?= build-msan
FUZZ_BUILD ?= build-fuzz
# The parsers fuzzed by `make fuzz`: PTX, profiles (Hatchet JSON, MessagePack),
# Perfetto merge, the instrumentation buffer decoder and the advisor's input;
# each for FUZZ_SECONDS.
FUZZ_TARGETS ?= ptx_fuzz hatchet_read_fuzz hatchet_msgpack_fuzz perfetto_merge_fuzz decode_fuzz advise_fuzz
FUZZ_SECONDS ?= 60
# What MemorySanitizer can check (every linked library must be instrumented;
# Criterion, jansson and Python are not): the fuzz-corpus replays and the
# threaded programs, which link only our library, zlib and libc.
MSAN_TESTS ?= .*_fuzz_corpus|concurrency_.*
# The tests that race threads; `make tsan` runs them under ThreadSanitizer.
TSAN_TESTS ?= concurrency_.*
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo
# What `make demo` runs: the library (also the CUDA injection library), the
# viewer, the C example and the Python extension (the GPU part's scripts).
DEMO_TARGETS ?= cproton cproton-viewer example_basic cproton_python

.PHONY: all deps deps-test deps-valgrind deps-clang configure-test build test test-c \
	test-python test-triton asan tsan asan-clang msan fuzz demo valgrind bench clean

all: build

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

deps-valgrind:
	@scripts/deps.sh valgrind

deps-clang:
	@scripts/deps.sh clang

$(BUILD)/CMakeCache.txt: | deps
	@mkdir -p $(BUILD)
	@echo "cmake: configuring $(BUILD) (log: $(BUILD)/configure.log)"
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) > $(BUILD)/configure.log 2>&1 || \
	  { cat $(BUILD)/configure.log; exit 1; }

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# Re-configures first: test packages installed after the first `make` (e.g.
# Criterion) are found only by a new cmake run.
configure-test: deps-test $(BUILD)/CMakeCache.txt
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) > $(BUILD)/configure.log || \
	  { cat $(BUILD)/configure.log; exit 1; }

# The three parts below in one run, closing with their summed counts.
test: configure-test build
	@scripts/test-all.sh $(BUILD) $(JOBS)

test-c: configure-test build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python: configure-test build
	@scripts/test-python.sh $(BUILD)

# The Python package and the instrumentation front end under each Triton
# release from 3.6 to 3.9 (kernels compiled ahead of time, no GPU).
test-triton: build
	@scripts/triton-compat.sh

asan: deps-test
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCPROTON_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp ctest --output-on-failure -j $(JOBS)

# halt_on_error: a report fails the test, so CI sees it.
tsan: deps-test
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCPROTON_TSAN=ON
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target concurrency_tests
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS))$$'

# clang's UBSan checks what gcc's does not (null + 0 pointer arithmetic).
asan-clang: deps-clang
	CC=clang cmake -S . -B $(ASAN_CLANG_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCPROTON_SANITIZE=ON
	cmake --build $(ASAN_CLANG_BUILD) -j $(JOBS)
	cd $(ASAN_CLANG_BUILD) && ASAN_OPTIONS=detect_leaks=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS)

msan: deps-clang
	CC=clang cmake -S . -B $(MSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCPROTON_MSAN=ON
	cmake --build $(MSAN_BUILD) -j $(JOBS) --target fuzz_replays concurrency_tests
	cd $(MSAN_BUILD) && MSAN_OPTIONS=halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -R '^($(MSAN_TESTS))$$'

fuzz: deps-clang
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCPROTON_SANITIZE=ON -DCPROTON_FUZZ=ON
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

valgrind: deps-valgrind build
	@scripts/valgrind.sh $(BUILD)

demo: deps $(BUILD)/CMakeCache.txt
	@echo "cproton: building $(DEMO_TARGETS) (log: $(BUILD)/demo-build.log)"
	@cmake --build $(BUILD) -j $(JOBS) --target $(DEMO_TARGETS) > $(BUILD)/demo-build.log 2>&1 || \
	  { tail -40 $(BUILD)/demo-build.log; echo "demo: the build failed (log: $(BUILD)/demo-build.log)"; exit 1; }
	@scripts/demo.sh $(BUILD)

bench: build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(ASAN_CLANG_BUILD) $(MSAN_BUILD) $(FUZZ_BUILD)
