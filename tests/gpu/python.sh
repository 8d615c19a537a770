#!/usr/bin/env bash
# GPU tests of the cproton Python package (run by the lead on an H100/H200).
# usage: tests/gpu/python.sh [OUT_DIR]   (default: $OUT or ./out/gpu-python)
# Needs: cproton importable (tests/gpu/run.sh puts the CMake build's
# python/ folder on PYTHONPATH; or `pip install --no-build-isolation .`,
# which needs scikit-build-core), triton 3.6 and torch with CUDA. Writes one
# log and the profiles per case under OUT_DIR; exits non-zero if any case
# fails. GPU_PY_TESTS="triton_instrument instrument_sums ..." runs a subset.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-out/gpu-python}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}
fail=0
# GPU_PY_TESTS="name ..." runs only those cases (all by default).
only=${GPU_PY_TESTS:-}
run() {
  local name=$1; shift
  if [ -n "$only" ] && [[ " $only " != *" $name "* ]]; then return; fi
  if (cd "$out" && "$@") >"$out/$name.log" 2>&1; then
    echo "PASS $name"
  else
    echo "FAIL $name (see $out/$name.log)"; tail -20 "$out/$name.log"; fail=1
  fi
  grep -E "^(PASS|FAIL|RESULT)" "$out/$name.log" | sed "s/^/  /"
}
run triton_hook     "$py" "$here/python/triton_hook.py"
run probe_modes     "$py" "$here/python/probe_modes.py"
run torch_kernels   "$py" "$here/python/torch_kernels.py"
run autograd_thread "$py" "$here/python/autograd_thread.py" cproton
run autograd_thread_proton "$py" "$here/python/autograd_thread.py" triton.profiler
run python_context  "$py" "$here/python/python_context.py"
run torch_layers_eager "$py" "$here/python/torch_layers.py" eager
run torch_layers_train "$py" "$here/python/torch_layers.py" train
run triton_instrument "$py" "$here/python/triton_instrument.py"
run instrument_reduce "$py" "$here/python/instrument_reduce.py"
run instrument_sums "$py" "$here/python/instrument_sums.py"
run ws_events       "$py" "$here/python/ws_events.py"
run proton_example  "$py" "$here/python/proton_example_check.py"
run cli             "$py" -m cproton -n cli_profile -k triton "$here/python/cli_example.py"
run cli_check       "$py" "$here/python/cli_check.py"
if [ -n "$only" ] && [[ " $only " != *" cli_native "* ]]; then
  :
elif nvcc -O2 -arch=native "$here/cupti_app.cu" -o "$out/native_app" > "$out/nvcc.log" 2>&1; then
  run cli_native    "$py" -m cproton -n cli_native -- "$out/native_app" "$out/native_expected"
  run cli_native_check "$py" "$here/python/cli_native_check.py"
else
  echo "FAIL cli_native: nvcc failed (see $out/nvcc.log)"; fail=1
fi
run bench_scope     "$py" "$here/../../bench/python_scope_bench.py" "$out"
exit $fail
