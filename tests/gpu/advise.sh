#!/usr/bin/env bash
# The performance advisor on a GPU (issue 26, docs/advisor.md): compile and
# launch facts in real profiles, findings on planted kernels, a pcsampling
# profile joined with a time profile, cproton.advise
# (tests/gpu/python/advise_gpu.py). Needs torch with CUDA, triton, and
# cproton importable (tests/gpu/run.sh puts its build on PYTHONPATH). Under
# two minutes. Usage: tests/gpu/advise.sh [OUT_DIR] [BUILD]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-out/gpu-advise}}
build=${2:-${BUILD:-}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -n "$build" ] && export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
if (cd "$out" && PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH} \
    timeout -k 5 240 "$py" "$here/python/advise_gpu.py") >"$out/advise.log" 2>&1; then
  grep -E "^(PASS|FAIL|RESULT)" "$out/advise.log"
  echo "PASS advise"
else
  grep -E "^(PASS|FAIL|RESULT)" "$out/advise.log"
  echo "FAIL advise (see $out/advise.log)"; tail -30 "$out/advise.log"
  exit 1
fi
