#!/usr/bin/env bash
# tests/gpu/native.sh OUT_DIR [BUILD] -- native call stacks on a GPU (issue 28
# item 3). Builds tests/gpu/native_app.cu (nvcc -g, shared CUDA runtime so
# its frames are dropped like the driver's) and profiles it unmodified:
#   inject   CUDA_INJECTION64_PATH=libcproton.so CPROTON_CONTEXT=native
#   command  cproton --context native -- ./native_app (the Python command)
# then checks the frames and counts (tests/gpu/native_check.py), and runs
# the overhead benchmark (bench/native_stacks.sh). Prints "PASS name" /
# "FAIL name: why" and RESULT lines; exits non-zero when anything failed.
# Run: bash tests/gpu/run.sh build native
set -u
OUT=${1:-${OUT:-/tmp/cproton-gpu-native}}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${2:-${BUILD:-$OUT/build}}
ARCH=${NVCC_ARCH:-native}
REPS=${NATIVE_REPS:-200}
mkdir -p "$OUT"
status=0
say() { echo "$*"; case "$*" in FAIL*) status=1;; esac; }

if [ -f "$BUILD/libcproton.so" ] || { cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
     -DCPROTON_BUILD_TESTS=OFF -DCPROTON_WERROR=OFF > "$OUT/cmake.log" 2>&1 &&
   cmake --build "$BUILD" -j 8 >> "$OUT/cmake.log" 2>&1; }; then
  say "PASS build"
else
  say "FAIL build: see $OUT/cmake.log"; exit 1
fi
grep -h "native stacks\|libdw" "$BUILD/CMakeCache.txt" 2>/dev/null | head -2
APP=$OUT/native_app
if nvcc -O2 -g -Xcompiler -fno-optimize-sibling-calls -arch="$ARCH" -cudart shared "$ROOT/tests/gpu/native_app.cu" \
     -o "$APP" > "$OUT/nvcc.log" 2>&1; then
  say "PASS nvcc"
else
  say "FAIL nvcc: see $OUT/nvcc.log"; cat "$OUT/nvcc.log"; exit 1
fi

rm -f "$OUT"/inject.hatchet "$OUT"/command.hatchet
if env CUDA_INJECTION64_PATH="$BUILD/libcproton.so" CPROTON_CONTEXT=native \
     CPROTON_LOG=info CPROTON_NAME="$OUT/inject" "$APP" "$REPS" > "$OUT/inject.log" 2>&1; then
  say "PASS inject run"
else
  say "FAIL inject run: see $OUT/inject.log"
fi
grep "native stacks" "$OUT/inject.log"
python3 "$ROOT/tests/gpu/native_check.py" "$OUT/inject.hatchet" "$REPS" | sed 's/^PASS /PASS inject: /; s/^FAIL /FAIL inject: /' | tee "$OUT/inject.check"
grep -q '^FAIL' "$OUT/inject.check" && status=1

if python3 -m cproton --context native -n "$OUT/command" -- "$APP" "$REPS" > "$OUT/command.log" 2>&1; then
  say "PASS command run"
else
  say "FAIL command run: see $OUT/command.log"
fi
python3 "$ROOT/tests/gpu/native_check.py" "$OUT/command.hatchet" "$REPS" | grep -E "^(PASS|FAIL)" | sed 's/^PASS /PASS command: /; s/^FAIL /FAIL command: /' | tee "$OUT/command.check"
grep -q '^FAIL' "$OUT/command.check" && status=1

bash "$ROOT/bench/native_stacks.sh" "$APP" "$BUILD/libcproton.so" "${NATIVE_BENCH_ROUNDS:-7}" \
  "${NATIVE_BENCH_REPS:-5000}" | tee "$OUT/bench.txt"
grep -q '^FAIL' "$OUT/bench.txt" && status=1
exit $status
