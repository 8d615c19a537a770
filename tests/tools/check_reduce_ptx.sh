#!/usr/bin/env bash
# tests/tools/check_reduce_ptx.sh -- ctest reduce_ptx_current: the checked-in
# device reduction PTX (src/backend/instrumentation/reduce.ptx) is what
# scripts/gen-reduce-ptx.sh makes from reduce.cu, and ptxas assembles it for
# sm_80 and sm_90. Exit 77 (skipped) without nvcc/ptxas.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v nvcc > /dev/null && command -v ptxas > /dev/null || { echo "no nvcc/ptxas: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/scripts/gen-reduce-ptx.sh" "$tmp/reduce.ptx"
if ! diff -u "$root/src/backend/instrumentation/reduce.ptx" "$tmp/reduce.ptx" > "$tmp/diff"; then
  head -40 "$tmp/diff"
  echo "FAIL: reduce.ptx is stale: run scripts/gen-reduce-ptx.sh and commit it"
  exit 1
fi
for arch in sm_80 sm_90; do
  ptxas -arch=$arch "$root/src/backend/instrumentation/reduce.ptx" -o "$tmp/reduce.$arch.cubin"
done
echo "reduce.ptx matches reduce.cu and assembles for sm_80 and sm_90"
