#!/usr/bin/env bash
# Many ranks, nothing lost (issue 13): a 2-GPU torchrun job with NCCL
# all-reduces inside scopes, profiled through the Python API and through
# injection (CUDA_INJECTION64_PATH, CPROTON_NAME=.../inject_{rank}); every
# rank's profile must be its own, complete, and alone (the torchrun agent,
# which initialises CUDA without RANK and runs no kernel, writes nothing).
# Then the ranks are shown merged by cproton-viewer.
# Needs 2 GPUs (kind nvidia-h200-x2), torch with NCCL, and the build of
# tests/gpu/run.sh. Usage: tests/gpu/ranks.sh [OUT_DIR] [BUILD]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-out/gpu-ranks}}
build=${2:-${BUILD:-/tmp/cproton-build}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
fail=0
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$ngpu" -lt 2 ]; then
  echo "FAIL ranks: needs 2 GPUs, found $ngpu"; exit 1
fi
torchrun=("$py" -m torch.distributed.run --standalone --nproc_per_node=2)
run() {
  local name=$1; shift
  if (cd "$out" && "$@") >"$out/$name.log" 2>&1; then
    echo "PASS $name"
  else
    echo "FAIL $name (see $out/$name.log)"; tail -20 "$out/$name.log"; fail=1
  fi
}
rm -f "$out"/api_* "$out"/inject_*
# 1. The Python API: each worker starts its own session.
run api_run "${torchrun[@]}" "$here/python/ranks_app.py" --api "$out/api_{rank}"
run api_check "$py" "$here/python/ranks_check.py" "$out" api
grep -E "^(PASS|FAIL)" "$out/api_check.log" | sed 's/^/  /'
# 2. Injection: an unmodified program, NVTX ranges as scopes. CPROTON_LOG=info
#    shows which processes ran no kernel and therefore wrote nothing.
#    The agent is the torchrun process itself: its pid tells whether it was
#    injected (it then reports "process <pid> ... ran no kernel").
(cd "$out" && exec env CUDA_INJECTION64_PATH="$build/libcproton.so" \
  CPROTON_NAME="$out/inject_{rank}" CPROTON_LOG=info \
  "${torchrun[@]}" "$here/python/ranks_app.py" --plain) >"$out/inject_run.log" 2>&1 &
agent=$!
if wait $agent; then echo "PASS inject_run"; else
  echo "FAIL inject_run (see $out/inject_run.log)"; tail -20 "$out/inject_run.log"; fail=1; fi
grep -E "ran no kernel|written by another process" "$out/inject_run.log" | sed 's/^/  info: /'
if grep -q "process $agent, .*ran no kernel" "$out/inject_run.log"; then
  echo "  info: the torchrun agent (pid $agent) was injected and wrote nothing"
fi
run inject_check "$py" "$here/python/ranks_check.py" "$out" inject
grep -E "^(PASS|FAIL)" "$out/inject_check.log" | sed 's/^/  /'
# 3. The merged view of both ranks (cproton-viewer with several files).
viewer=$build/tools/viewer/cproton-viewer
if "$viewer" "$out/inject_0.hatchet" "$out/inject_1.hatchet" >"$out/merged.txt" 2>&1; then
  echo "PASS merged_view"; head -40 "$out/merged.txt"
else
  echo "FAIL merged_view (see $out/merged.txt)"; head -20 "$out/merged.txt"; fail=1
fi
exit $fail
