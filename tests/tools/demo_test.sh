#!/usr/bin/env bash
# `make demo` shows results, not a build (issue 24, item 12):
#  - its recipe builds only the demo's targets, with the build's output in a
#    log file (checked on `make -n demo`, which runs nothing);
#  - the demo's trees have a header naming their columns, C++ kernel names
#    are demangled, and no line runs past 160 characters.
# Skipped (77) on a GPU machine, where the demo profiles real GPU work.
# usage: demo_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
src=$1 build=$2
fail() { echo "FAIL: $*"; exit 1; }
plan=$(make -n -C "$src" demo BUILD="$build" JOBS=2 2>&1) || fail "make -n demo: $plan"
grep -qE -- "--target cproton cproton-viewer example_basic cproton_python > $build/demo-build.log" <<< "$plan" ||
  fail "make demo does not build only the demo's targets into a log:"$'\n'"$plan"
if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L > /dev/null 2>&1; then
  echo "skipped: a GPU is present (the demo would profile GPU work)"; exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(CPROTON_DEMO_OUT=$tmp "$src/scripts/demo.sh" "$build" 2>&1) || fail "demo.sh failed:"$'\n'"$out"
grep -A1 -E '^flops +items +frame$' <<< "$out" | grep -qE '^4500000000\.000 3\.000 ROOT$' ||
  fail "no column header over the CPU-scopes tree:"$'\n'"$(head -12 <<< "$out")"
grep -qE '^time/us +count +frame$' <<< "$out" || fail "no column header over the bundled trees"
grep -q '_ZN' <<< "$out" && fail "mangled names shown: $(grep -m1 _ZN <<< "$out")"
grep -qF 'void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>' <<< "$out" ||
  fail "the bundled PyTorch kernel is not shown demangled"
long=$(awk 'length($0) > 200' <<< "$out" | head -1) # awk counts bytes: the tree's box characters take 3
[ -z "$long" ] || fail "a line longer than 160 characters: ${long:0:80}..."
echo "PASS demo: targets and log, column headers, demangled names, short lines"
