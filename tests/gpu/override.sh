#!/usr/bin/env bash
# Proton's TTGIR-override workflow (its test_override.py / intra-kernel
# README) on Proton and cproton side by side: dump a vector add's IR, insert
# proton.record start/end ops into the .ttgir, run it again with
# TRITON_KERNEL_OVERRIDE=1 under start(backend="instrumentation"), for
# data="tree" and data="trace"; both profilers must give the same scopes and
# metric names, and the same trace events per scope. When Proton's test
# folder is there (PROTON_TESTS, default .proton-tests/ of this tree: git-
# ignored, never committed), its own test_override.py also runs for both,
# cproton's copy with the imports-only rewrite.
# usage: tests/gpu/override.sh OUT_DIR [BUILD_DIR]. Prints PASS/FAIL/RESULT.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-${OUT:-out/gpu-override}}; mkdir -p "$out"; out=$(cd "$out" && pwd)
build=${2:-${BUILD:-$here/../../build}}
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
app=$here/override/override_app.py
chk="$py $here/override/override_check.py"
fail=0
step() { # name cmd...: the command's PASS/FAIL/RESULT lines, FAIL when it fails
  local name=$1; shift
  if "$@" >"$out/$name.log" 2>&1; then grep -E "^(PASS|RESULT)" "$out/$name.log"
  else echo "FAIL $name (see $name.log)"; tail -8 "$out/$name.log"; fail=1; fi
}
for data in tree trace; do
  for prof in proton cproton; do
    d=$out/$data-$prof; rm -rf "$d"; mkdir -p "$d"
    step "$data-$prof-dump" env TRITON_ALWAYS_COMPILE=1 TRITON_KERNEL_DUMP=1 TRITON_DUMP_DIR="$d/ir" \
      "$py" "$app" "$d" "$prof" "$data"
    step "$data-$prof-edit" $chk edit "$d/ir"
    step "$data-$prof-override" env TRITON_ALWAYS_COMPILE=1 TRITON_KERNEL_OVERRIDE=1 TRITON_OVERRIDE_DIR="$d/ir" \
      "$py" "$app" "$d" "$prof" "$data"
  done
  ext=hatchet; [ "$data" = trace ] && ext=chrome_trace
  step "$data-compare" $chk "$data" "$out/$data-proton/override.$ext" "$out/$data-cproton/override.$ext"
done
tests=${PROTON_TESTS:-$here/../../.proton-tests}
[ -f "$tests/test/test_override.py" ] && tests=$tests/test
if [ -f "$tests/test_override.py" ]; then
  for prof in proton cproton; do
    d=$out/suite-$prof; rm -rf "$d"; cp -r "$tests" "$d"
    [ $prof = cproton ] && find "$d" -name '*.py' -print0 | xargs -0 sed -i -E 's/triton\.profiler/cproton/g'
    if (cd "$d" && "$py" -m pytest -q -p no:cacheprovider -o addopts="" test_override.py) >"$out/suite-$prof.log" 2>&1
    then echo "PASS test_override.py ($prof)"
    else echo "FAIL test_override.py ($prof, see suite-$prof.log)"; tail -8 "$out/suite-$prof.log"; fail=1; fi
  done
else
  echo "RESULT test_override.py not run: no Proton test folder in $tests"
fi
exit $fail
