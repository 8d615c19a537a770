#!/usr/bin/env bash
# Real programs profiled by Proton 3.6 and by cproton, compared path by path
# (launch counts on every path, kernel time within 25%): Triton's tutorials
# under each profiler's command (`python -m triton.profiler.proton` against
# `python -m cproton`), and Proton's own tutorials (matmul.py with its
# hook="triton" session, dynamic-net.py with the shadow and python
# contexts) with only `import triton.profiler as proton` rewritten to
# `import cproton as proton`; matmul.py also with --cudagraph (CUDA graphs). The tutorials are Triton's files, not ours:
# they travel in the ignored folder .triton-tutorials/ (carry it; docs/
# testing.md says how to fetch them). tests/gpu/python/realprog_run.py
# bounds each benchmark loop (fixed repetitions, two x values) the same way
# for both profilers, so their launch counts can be compared.
# usage: tests/gpu/realprograms.sh OUT_DIR [BUILD_DIR]  (REALPROGS="01-vector-add ..." runs a subset)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-realprograms}}; mkdir -p "$out"; out=$(cd "$out" && pwd)
build=${2:-${BUILD:-$root/build}}
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/cproton-realprog-triton}
py=${PYTHON:-python3}
tut=$root/.triton-tutorials
runner=$here/python/realprog_run.py
compare=$here/python/compare_trees.py
if [ ! -d "$tut" ]; then echo "FAIL realprograms: no .triton-tutorials/ (carry it)"; exit 1; fi
only=${REALPROGS:-"01-vector-add 02-fused-softmax 03-matrix-multiplication 05-layer-norm 06-fused-attention matmul matmul-graph dynamic-net dynamic-net-python"}
fail=0
# pair NAME PROTON_CMD... -- CPROTON_CMD...: each in its own folder and
# process, Proton first (it compiles into the shared Triton cache, so both
# profile the same cached kernels), then the comparison.
pair() {
  local name=$1; shift
  local a=() b=() side=a
  for x in "$@"; do
    if [ "$x" = "--" ]; then side=b; continue; fi
    if [ $side = a ]; then a+=("$x"); else b+=("$x"); fi
  done
  mkdir -p "$out/$name/proton" "$out/$name/cproton"
  if ! (cd "$out/$name/proton" && timeout 240 "${a[@]}") >"$out/$name/proton.log" 2>&1; then
    echo "FAIL $name: Proton's run failed"; tail -5 "$out/$name/proton.log"; fail=1; return
  fi
  if ! (cd "$out/$name/cproton" && timeout 240 "${b[@]}") >"$out/$name/cproton.log" 2>&1; then
    echo "FAIL $name: cproton's run failed"; tail -5 "$out/$name/cproton.log"; fail=1; return
  fi
  local pa pb
  pa=$(ls "$out/$name"/proton/*.hatchet 2>/dev/null | head -1)
  pb=$(ls "$out/$name"/cproton/*.hatchet 2>/dev/null | head -1)
  if [ -z "$pa" ] || [ -z "$pb" ]; then echo "FAIL $name: a profile is missing ($pa / $pb)"; fail=1; return; fi
  local opt=; [[ $name == *python* ]] && opt=--python
  "$py" "$compare" "$name" "$pa" "$pb" 0.25 $opt || fail=1
}
# a copy of a program that uses Proton's API, with cproton imported instead
as_cproton() {
  sed -e 's/^import triton.profiler as proton/import cproton as proton/' \
      -e 's/import triton.profiler.viewer as proton_viewer/import cproton.viewer as proton_viewer/' "$1" >"$2"
}
mkdir -p "$out/src"
for p in $only; do
  case $p in
    matmul|matmul-graph)
      flags=--profile; [ $p = matmul-graph ] && flags="--profile --cudagraph"
      as_cproton "$tut/matmul.py" "$out/src/matmul.py"
      pair "$p" "$py" "$runner" "$tut/matmul.py" $flags -- "$py" "$runner" "$out/src/matmul.py" $flags ;;
    dynamic-net|dynamic-net-python)
      ctx=shadow; [ $p = dynamic-net-python ] && ctx=python
      as_cproton "$tut/dynamic-net.py" "$out/src/dynamic-net.py"
      pair "$p" "$py" "$runner" "$tut/dynamic-net.py" --profile --context $ctx -- \
        "$py" "$runner" "$out/src/dynamic-net.py" --profile --context $ctx ;;
    *)
      pair "$p" "$py" -m triton.profiler.proton -n "$p" "$runner" "$tut/$p.py" -- \
        "$py" -m cproton -n "$p" "$runner" "$tut/$p.py" ;;
  esac
done
exit $fail
