#!/usr/bin/env bash
# The three context benchmarks through their shared fresh-process helper
# (bench/kernels/fresh_worker.py, issue 25): every variant must give a
# RESULT in every round. context_python_cpu.py and context_layers_cpu.py
# drive the fake backend, which a product build lacks, so a test-backend
# build of the extension is made beside BUILD_DIR first (about a minute);
# context_layers.py runs on the GPU with the product build. Not in the
# default set: `PART_TIMEOUT=540 bash tests/gpu/run.sh build context_bench`.
# usage: tests/gpu/context_bench.sh OUT_DIR [BUILD_DIR]. Prints PASS/FAIL/RESULT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-context-bench}}; mkdir -p "$out"; out=$(cd "$out" && pwd)
build=${2:-${BUILD:-$root/build}}
testbuild=$build-testbackends
py=${PYTHON:-python3}
rounds=${CONTEXT_ROUNDS:-2}
fail=0
# name want pythonpath cmd...: PASS when the command succeeds and prints
# `want` RESULT lines (one per variant), else FAIL with the log's tail.
check() {
  local name=$1 want=$2 pp=$3; shift 3
  PYTHONPATH=$pp "$@" >"$out/$name.log" 2>&1
  local rc=$? got
  got=$(grep -c '^RESULT' "$out/$name.log")
  grep -E '^(RESULT|PASS|FAIL)' "$out/$name.log"
  if [ $rc -le 1 ] && [ "$got" -eq "$want" ] && ! grep -q '^FAIL .* round' "$out/$name.log"; then
    echo "PASS $name: $got variants, $rounds rounds"
  else
    echo "FAIL $name: rc=$rc, $got of $want RESULT lines (see $name.log)"; tail -5 "$out/$name.log"; fail=1
  fi
}
if cmake -S "$root" -B "$testbuild" -DCMAKE_BUILD_TYPE=Release -DCPROTON_BUILD_TESTS=OFF \
     -DCPROTON_TEST_BACKENDS=ON -DCPROTON_WERROR=OFF >"$out/testbuild.log" 2>&1 &&
   cmake --build "$testbuild" -j 16 --target cproton_python >>"$out/testbuild.log" 2>&1; then
  check context_python_cpu 3 "$testbuild/python" "$py" "$root/bench/context_python_cpu.py" "$rounds" 30
  check context_layers_cpu 5 "$testbuild/python" "$py" "$root/bench/context_layers_cpu.py" "$rounds" lines
else
  echo "FAIL testbuild: the test-backend build failed (see testbuild.log)"; tail -5 "$out/testbuild.log"; fail=1
fi
# context_layers.py (8 variants, and a line of link counts for each of the
# two with the link) exits 1 when a target is missed: that is a FAIL line of
# its own, not a failure of the helper, so rc 1 is accepted by check.
check context_layers 10 "$build/python" "$py" "$root/bench/context_layers.py" eager "$rounds" "$out/layers"
exit $fail
