# Thin wrapper around CMake. `make` builds, `make demo` runs the main job,
# `make test` runs every test (C units, fuzz corpora, tools, Python), and
# `make asan` runs the C suite under ASan + UBSan. Missing Debian packages are
# installed by scripts/deps.sh when run as root.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps build test test-c test-python asan demo valgrind bench clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: test-c test-python

test-c: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-python: build
	@scripts/test-python.sh $(BUILD)

asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCPROTON_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

valgrind: build
	@scripts/valgrind.sh $(BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

bench: build
	@scripts/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
