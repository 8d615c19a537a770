#!/usr/bin/env bash
# scripts/gen-reduce-ptx.sh [OUT] -- regenerates the device reduction's PTX
# (src/backend/instrumentation/reduce.ptx, or OUT) from reduce.cu with nvcc.
# The PTX is checked in and embedded in the library at build time, so users
# need no nvcc; ctest reduce_ptx_current runs this into a temporary file and
# diffs it against the checked-in copy (and assembles it with ptxas).
#
# Target: PTX for compute_80, JIT-compiled by the driver for the GPU at hand
# (sm_80 and later). The ISA version line is lowered to 7.0 (CUDA 11.0), the
# oldest that has every instruction the kernel uses, so drivers older than
# the toolkit that generated it still load it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/src/backend/instrumentation/reduce.ptx}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
nvcc -ptx -arch=compute_80 -O3 -I"$root/src" "$root/src/backend/instrumentation/reduce.cu" -o "$tmp"
# The banner names the toolkit: another toolkit may generate other code, so
# the check fails until the PTX is regenerated and committed.
sed 's/^\.version [0-9.]*$/.version 7.0/' "$tmp" > "$out"
