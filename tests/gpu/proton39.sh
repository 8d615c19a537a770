#!/usr/bin/env bash
# tests/gpu/run.sh part "proton39": Proton's 3.9-window test suite (imports
# rewritten) against cproton behaving like Proton 3.9
# (CPROTON_PROTON_VERSION=3.9), on a machine whose Triton may be older
# (tests/gpu/proton_suite.sh adds Triton 3.9's cuda_graph_without_gc). The
# suite is not in the repository: fetch it into .proton-tests-39/ (git-
# ignored) or point PROTON_TESTS_39 at it.
# Files: PROTON_SUITE_FILES (default below). On Triton 3.6, test_lib.py needs
# Proton 3.9's own libproton, so it runs on the CPU against the Triton 3.9
# venv instead (docs/compatibility.md); test_viewer.py needs llnl-hatchet,
# absent on the GPU machine, and runs on the CPU too. test_instrumentation.py
# collects on Triton 3.6 through the shim's stand-in for Gluon's Blackwell
# `clc` module; it is left out of the default to keep one run under ten
# minutes: PROTON_SUITE_FILES=test_instrumentation.py runs it alone.
# Prints RESULT and FAILED lines; fails when any test that ran failed.
# usage: tests/gpu/proton39.sh OUT_DIR [BUILD_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-proton39}}
tests=${PROTON_TESTS_39:-$root/.proton-tests-39}
[ -f "$tests/test/test_profile.py" ] && tests=$tests/test
if [ ! -f "$tests/test_profile.py" ]; then
  echo "FAIL proton39: no Proton 3.9-window tests in $tests (see tests/gpu/proton_suite.sh)"; exit 1
fi
mkdir -p "$out"
export PROTON_SUITE_VERSION=3.9
# On a Triton older than 3.9, tests that need 3.9's Gluon are not run
# (listed as NOTRUN): test_gluon_event uses async_copy.async_load.
if ! python3 -c 'import sys, triton; sys.exit(tuple(map(int, triton.__version__.split(".")[:2])) < (3, 9))' 2>/dev/null; then
  export PROTON_SUITE_DESELECT=${PROTON_SUITE_DESELECT-"test_instrumentation.py::test_gluon_event"}
fi
export PROTON_SUITE_FILES=${PROTON_SUITE_FILES:-"test_profile.py test_api.py test_cmd.py test_override.py"}
"$here/proton_suite.sh" "$tests" "$out/suite" | tee "$out/summary.txt"
n=$(grep -c '^FAILED cproton' "$out/summary.txt")
if ! grep -q '^RESULT' "$out/summary.txt"; then
  echo "FAIL proton39: the suite did not run"; exit 1
elif [ "$n" -gt 0 ]; then
  echo "FAIL proton39: $n tests failed (FAILED lines above; logs in $out/suite)"; exit 1
fi
echo "PASS proton39: every test that ran passed"
