#!/usr/bin/env bash
# The advisor's validation benchmark (bench/advise_validate.py, issue 26 item
# 4): planted and well-tuned kernels profiled in fresh processes, advised by
# the build's cproton-viewer --advise --json, the top suggestion applied and
# measured without a profiler. Prints PASS/FAIL fix_faster per planted case,
# FAIL for a case that could not be profiled or advised, the table and
# RESULT lines for the targets (a missed target is a RESULT, not a FAIL: the
# bench judges the advisor, the part checks the bench ran). The profiles,
# the advice and advise_validate.json are kept under OUT_DIR.
# usage: tests/gpu/advise_bench.sh OUT_DIR [BUILD_DIR]   (ADVISE_ARGS replaces
# the default flags "--quick", e.g. "--quick --cases cu_strided,tr_spills"; the
# Triton cache goes to TRITON_CACHE_DIR, /tmp/cproton-advise-triton by default,
# to keep it out of the packed logs)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-advise}}; mkdir -p "$out"; out=$(cd "$out" && pwd)
build=${2:-${BUILD:-$root/build}}
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/cproton-advise-triton}
viewer=$build/tools/viewer/cproton-viewer
[ -x "$viewer" ] || viewer=$(find "$build" -name cproton-viewer -type f -perm -u+x | head -1)
if [ -z "$viewer" ]; then echo "FAIL advise_bench: no cproton-viewer under $build"; exit 1; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/device: /'
"$py" "$root/bench/advise_validate.py" --out "$out" --viewer "$viewer" ${ADVISE_ARGS:---quick}
rc=$?
if [ $rc = 0 ]; then echo "PASS advise_bench ran every case"; else echo "FAIL advise_bench (exit $rc)"; fi
exit $rc
