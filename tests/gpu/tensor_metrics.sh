#!/usr/bin/env bash
# Tensor metrics on the GPU (issue 13 item 5): device tensors as scope
# metrics and launch_metadata values, recorded by cproton's copy kernel with
# no host sync, eager and inside a replayed CUDA graph (tests/gpu/python/
# tensor_metrics.py). Needs torch with CUDA, triton, and cproton importable
# (tests/gpu/run.sh puts its build on PYTHONPATH). Under 60 s.
# Usage: tests/gpu/tensor_metrics.sh [OUT_DIR] [BUILD]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-out/gpu-tensor-metrics}}
build=${2:-${BUILD:-}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -n "$build" ] && export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
if (cd "$out" && PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 120 "$py" "$here/python/tensor_metrics.py") >"$out/tensor_metrics.log" 2>&1; then
  grep -E "^(PASS|FAIL|RESULT)" "$out/tensor_metrics.log"
  echo "PASS tensor_metrics"
else
  grep -E "^(PASS|FAIL|RESULT)" "$out/tensor_metrics.log"
  echo "FAIL tensor_metrics (see $out/tensor_metrics.log)"; tail -30 "$out/tensor_metrics.log"
  exit 1
fi
