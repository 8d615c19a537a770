#!/usr/bin/env bash
# tests/gpu/instrument.sh OUT_DIR -- GPU test of intra-kernel instrumentation
# on a native CUDA kernel (examples/native_instrument). Needs nvcc, a GPU
# and a built tree (BUILD, default ./build). For each configuration it
# instruments kernels.cu's PTX, launches it, decodes the profile buffer and
# checks record counts and nesting (host.c prints CHECK OK / CHECK FAIL).
# Logs go to OUT_DIR; exit status is the number of failed configurations.
set -u
OUT=${1:-${OUT:-/tmp/cproton-gpu-instrument}}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
ARCH=${ARCH:-sm_90a}
mkdir -p "$OUT"
EX=$ROOT/examples/native_instrument
CUDA_INC=${CUDA_HOME:-/usr/local/cuda}/include

nvcc -ptx -arch="$ARCH" -I"$ROOT/include" "$EX/kernels.cu" -o "$OUT/kernels.ptx" || exit 100
"$BUILD/tools/instrument/cproton-instrument" "$OUT/kernels.ptx" -o "$OUT/kernels.instr.ptx" \
  > "$OUT/scope_table.txt" || exit 101
ptxas -arch="$ARCH" "$OUT/kernels.instr.ptx" -o "$OUT/kernels.instr.cubin" || exit 102
cc -std=c11 -O2 -D_GNU_SOURCE -I"$ROOT/include" -I"$CUDA_INC" "$EX/host.c" \
  "$BUILD/libcproton.a" -lz -lm -ldl -lpthread -o "$OUT/native_instrument" || exit 103

fails=0
run() {
  local name=$1; shift
  if "$OUT/native_instrument" "$OUT/kernels.ptx" "$@" > "$OUT/$name.log" 2>&1 &&
     grep -q "CHECK OK" "$OUT/$name.log"; then
    echo "PASS $name"
  else
    echo "FAIL $name (see $OUT/$name.log)"; tail -5 "$OUT/$name.log"
    fails=$((fails + 1))
  fi
}
run shared_clock64     --buffer shared --counter clock64
run global_clock64     --buffer global --counter clock64
run shared_clock       --buffer shared --counter clock
run global_globaltimer --buffer global --counter globaltimer
run sampled_warps_0_2  --buffer shared --sample-warps 0,2
run one_cta            --buffer global --ctas 1
run many_ctas          --buffer shared --ctas 4096
echo "instrument.sh: $fails failure(s); logs in $OUT"
exit $fails
