#!/usr/bin/env bash
# tests/gpu/cupti.sh OUT_DIR -- GPU tests of the CUPTI backend (issue 3).
# Builds cproton (cmake) and tests/gpu/cupti_app.cu (nvcc) twice, then runs:
#   api     the C API, data=tree   (counts, nesting, graph, event timing, devices)
#   trace   the C API, data=trace  (valid JSON, lanes, flows, per-kernel time)
#   inject  the unmodified program under CUDA_INJECTION64_PATH=libcproton.so,
#           scopes from NVTX ranges, output name with {pid} and {rank};
#           a bad CPROTON_FORMAT refused once at start, nothing written
# Prints "PASS name" / "FAIL name: why" (also in OUT_DIR/results.txt) and
# exits non-zero when anything failed. NVCC_ARCH overrides -arch (native).
set -u
OUT=${1:-${OUT:-/tmp/cproton-gpu-cupti}}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$OUT/build}
ARCH=${NVCC_ARCH:-native}
mkdir -p "$OUT"
RESULTS=$OUT/results.txt
: > "$RESULTS"
status=0
say() { echo "$*" | tee -a "$RESULTS"; case "$*" in FAIL*) status=1;; esac; }

if [ -f "$BUILD/libcproton.so" ] || cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
     -DCPROTON_BUILD_TESTS=OFF -DCPROTON_WERROR=OFF > "$OUT/cmake.log" 2>&1 &&
   cmake --build "$BUILD" -j 8 >> "$OUT/cmake.log" 2>&1; then
  say "PASS build"
else
  say "FAIL build: see $OUT/cmake.log"; exit 1
fi
LIB=$BUILD/libcproton.so
if nvcc -O2 -arch="$ARCH" -DWITH_CPROTON -I"$ROOT/include" \
     "$ROOT/tests/gpu/cupti_app.cu" -L"$BUILD" -lcproton \
     -Xlinker -rpath,"$BUILD" -o "$OUT/cupti_app_api" > "$OUT/nvcc.log" 2>&1 &&
   nvcc -O2 -arch="$ARCH" "$ROOT/tests/gpu/cupti_app.cu" \
     -o "$OUT/cupti_app_plain" >> "$OUT/nvcc.log" 2>&1; then
  say "PASS nvcc"
else
  say "FAIL nvcc: see $OUT/nvcc.log"; exit 1
fi

check() { # kind profile prefix tag
  python3 "$ROOT/tests/gpu/cupti_check.py" "$1" "$2" "$3.expected.json" \
    "$3.events.json" "$4" | tee -a "$RESULTS" | grep -q '^FAIL' && status=1
  return 0
}
run() { # tag command...
  local tag=$1; shift
  if "$@" > "$OUT/$tag.log" 2>&1; then say "PASS $tag run"
  else say "FAIL $tag run: exit $?, see $OUT/$tag.log"; fi
}

run api "$OUT/cupti_app_api" "$OUT/api" tree
check tree "$OUT/api.hatchet" "$OUT/api" api
run trace "$OUT/cupti_app_api" "$OUT/trace" trace
check trace "$OUT/trace.chrome_trace" "$OUT/trace" trace

rm -f "$OUT"/inject_*.hatchet
run inject env CUDA_INJECTION64_PATH="$LIB" RANK=3 CPROTON_LOG=debug \
  CPROTON_NAME="$OUT/inject_{pid}_r{rank}" \
  "$OUT/cupti_app_plain" "$OUT/inject"
prof=$(ls "$OUT"/inject_*_r3.hatchet 2>/dev/null | head -1)
if [ -n "$prof" ]; then say "PASS inject output name ($(basename "$prof"))"
else say "FAIL inject output name: no $OUT/inject_<pid>_r3.hatchet"; fi
check tree "${prof:-$OUT/missing.hatchet}" "$OUT/inject" inject
if grep -qi "warn\|error" "$OUT/inject.log"; then
  say "FAIL inject clean exit: $(head -c 300 "$OUT/inject.log")"
else say "PASS inject clean exit"; fi

# A bad setting is refused when the program starts (issue 24.16): one
# warning naming it, the program runs to its end unprofiled, no file written.
rm -f "$OUT"/inject_bad*
run inject_bad_format env CUDA_INJECTION64_PATH="$LIB" CPROTON_FORMAT=bogus \
  CPROTON_NAME="$OUT/inject_bad" "$OUT/cupti_app_plain" "$OUT/inject_bad_app"
if [ "$(grep -c "not profiling this process: CPROTON_FORMAT: unknown output format 'bogus'" \
        "$OUT/inject_bad_format.log")" = 1 ] && ! ls "$OUT"/inject_bad.* > /dev/null 2>&1; then
  say "PASS inject bad setting refused at start"
else
  say "FAIL inject bad setting refused at start: $(head -c 300 "$OUT/inject_bad_format.log")"
fi

echo "results: $RESULTS"
exit $status
