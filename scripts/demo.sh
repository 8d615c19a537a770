#!/usr/bin/env bash
# The main job (`make demo`): profiles the bundled examples and prints their
# trees with cproton-viewer. With a GPU it profiles real GPU work: a native
# CUDA program through CUDA's injection (no rebuild), a Triton + PyTorch
# script through the Python API, and intra-kernel scopes of a Triton kernel.
# Without one it profiles CPU scopes (examples/basic.c) and shows bundled
# results recorded on an H200, and says so. Each profile is also drawn as an
# icicle flame graph (cproton-viewer --svg) under out/demo/; the closing lines
# list them.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Absolute: the GPU part runs programs from other folders (the injection
# library and PYTHONPATH must still resolve there).
build=$(cd "${1:-build}" && pwd) || { echo "demo: no build folder ${1:-build}" >&2; exit 1; }
viewer=$build/tools/viewer/cproton-viewer
out=${CPROTON_DEMO_OUT:-$root/out/demo} # (the demo test writes elsewhere)
mkdir -p "$out"
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
svgs=()
failed=() # steps that did not produce their profile (the exit status says so)
# header METRICS ROOT_LINE: the metric names over the root line's columns
# ("time/ms  count  frame"), each padded to its column's width.
header() {
  local -a names values
  IFS=, read -ra names <<< "$1"
  read -ra values <<< "$2"
  local k line=""
  for k in "${!names[@]}"; do
    line+=$(printf '%-*s ' "${#values[k]}" "${names[k]}")
  done
  printf '%sframe\n' "$line"
}

# view NAME -m METRICS VIEWER-ARGS...: the tree (first 40 lines, C++ kernel
# names demangled) under a header naming its columns, and $out/NAME.svg.
view() {
  local name=$1; shift
  local tree
  tree=$("$viewer" --demangle --svg "$out/$name.svg" "$@")
  [ "$1" = -m ] && header "$2" "$(grep -m1 -E '^(-?[0-9]|nan|-?inf)' <<< "$tree")"
  # demangled C++ templates run to thousands of characters: one screen line
  # each here (the full names are in the profile and the SVG's tooltips)
  head -40 <<< "$tree" | while IFS= read -r line; do
    [ ${#line} -gt 160 ] && line="${line:0:159}…"
    printf '%s\n' "$line"
  done
  [ -s "$out/$name.svg" ] && svgs+=("$out/$name.svg")
}

have_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}

cpu_scopes() {
  say "CPU scopes through the C API (examples/basic.c)"
  "$build/examples/example_basic" "$out/basic" tree
  view basic -m flops,items "$out/basic.hatchet"
}

gpu_demo() {
  local py=${PYTHON:-python3}
  export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
  say "A native CUDA program, unmodified, through CUDA_INJECTION64_PATH"
  if nvcc -O2 -arch=native "$root/tests/gpu/cupti_app.cu" -o "$out/cuda_app" 2>"$out/nvcc.log"; then
    (cd "$out" && CUDA_INJECTION64_PATH=$build/libcproton.so CPROTON_NAME=$out/native \
       ./cuda_app "$out/native_expected" >/dev/null) &&
      view native -m time/ms,avg_time/us,count "$out/native.hatchet" || failed+=(native)
  else
    echo "(nvcc failed; see $out/nvcc.log)"; failed+=(nvcc)
  fi
  if $py -c "import torch, triton" 2>/dev/null; then
    say "Triton + PyTorch with scopes and launch metadata (examples/python/matmul_profile.py)"
    (cd "$out" && $py "$root/examples/python/matmul_profile.py") &&
      view matmul -m time/ms,tflop16/s,util "$out/matmul.hatchet" || failed+=(matmul_profile.py)
    say "Intra-kernel scopes of a Triton kernel (examples/python/intra_kernel.py)"
    if (cd "$out" && $py "$root/examples/python/intra_kernel.py") &&
       view intra_kernel -m normalized_cycles,count "$out/intra_kernel.hatchet"; then
      echo "timeline: $out/intra_kernel_trace.chrome_trace (open in https://ui.perfetto.dev)"
    else
      failed+=(intra_kernel.py)
    fi
  else
    echo "(no torch/triton in $py: Python demos skipped)"
  fi
}

bundled() {
  local r=$root/examples/results
  say "No GPU here: bundled results recorded by cproton on an H200 (examples/results/README.md)"
  say "native CUDA program through injection"
  view native_injection -m time/ms,avg_time/us,count "$r/native_injection.hatchet"
  say "a Proton script run with 'import cproton as proton'"
  view proton_example -m time/us,count "$r/proton_example.hatchet"
  say "Python context: frames named file:line@function, launches from two threads"
  view python_context -m time/us,count "$r/python_context.hatchet"
  say "launch metadata: FLOP/s and bandwidth"
  view triton_hook -m time/us,gflop32/s,gbyte/s "$r/triton_hook.hatchet"
  say "intra-kernel scopes: cycles per warp"
  view triton_instrumentation -m normalized_cycles,count "$r/triton_instrumentation.hatchet"
}

cpu_scopes
if have_gpu; then
  gpu_demo
else
  bundled
fi
echo
echo "profiles written under $out"
echo "flame graphs (open in a browser):"
printf '  %s\n' "${svgs[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "demo: these steps failed: ${failed[*]}" >&2
  exit 1
fi
