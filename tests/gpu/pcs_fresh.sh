#!/usr/bin/env bash
# Proton 3.6's test_profile.py::test_pcsampling run alone, FRESH_RUNS times
# (default 10), each in a fresh process, for Proton, cproton's default PC
# sampling mode and cproton's exact mode; then bench/pcsampling_short.py (the
# share of 1-10 us kernel launches that get >= 1 sample, cproton's modes and
# Proton side by side). cproton must pass every run in both modes.
# Proton's test file is taken from PROTON_TESTS (default .proton-tests/ of
# this tree, git-ignored, never committed; see tests/gpu/proton_suite.sh),
# with the imports-only rewrite for cproton (and mode="pcsampling:exact" for
# the exact runs); without it, tests/gpu/pcs/fresh_pcsampling.py (the
# test's program and assertions) runs instead.
# usage: tests/gpu/pcs_fresh.sh OUT_DIR [BUILD_DIR]   (about 5-6 minutes: run
# it through tests/gpu/run.sh with PART_TIMEOUT=480; PCS_SHORT_BENCH=0 skips
# the bench, FRESH_RUNS and PCS_SHORT_TRIALS shorten it)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-pcs-fresh}}; mkdir -p "$out"; out=$(cd "$out" && pwd)
build=${2:-${BUILD:-$root/build}}
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-$out/triton-cache}
py=${PYTHON:-python3}
runs=${FRESH_RUNS:-10}
tests=${PROTON_TESTS:-$root/.proton-tests}
[ -f "$tests/test/test_profile.py" ] && tests=$tests/test
fail=0
configs="proton|pcsampling cproton|pcsampling cproton|pcsampling:exact"
if [ -f "$tests/test_profile.py" ]; then
  echo "test_pcsampling from $tests/test_profile.py"
  for spec in $configs; do
    IFS='|' read -r prof mode <<<"$spec"
    d=$out/suite_${prof}_${mode/:/_}; rm -rf "$d"; cp -r "$tests" "$d"
    if [ "$prof" = cproton ]; then
      find "$d" -name '*.py' -print0 | xargs -0 sed -i -E 's/triton\.profiler/cproton/g'
      sed -i "s/mode=\"pcsampling\"/mode=\"$mode\"/" "$d/test_profile.py"
    fi
  done
fi
for spec in $configs; do
  IFS='|' read -r prof mode <<<"$spec"
  tag=${prof}_${mode/:/_}; passed=0
  for i in $(seq 1 "$runs"); do
    log=$out/$tag.$i.log
    if [ -f "$tests/test_profile.py" ]; then
      (cd "$out/suite_$tag" && CPROTON_LOG=info timeout -k 5 120 "$py" -m pytest -q -p no:cacheprovider -o addopts="" \
        "test_profile.py::test_pcsampling") >"$log" 2>&1
    else
      (cd "$out" && CPROTON_LOG=info timeout -k 5 120 "$py" "$here/pcs/fresh_pcsampling.py" "$out/$tag.$i" "$prof" "$mode") \
        >"$log" 2>&1
    fi
    if [ $? = 0 ]; then passed=$((passed + 1))
    else echo "  run $i of $tag failed: $(grep -m1 -E 'Error|assert' "$log" | cut -c1-160)"; fi
  done
  echo "RESULT test_pcsampling fresh $prof $mode: $passed/$runs passed"
  if [ "$prof" = cproton ]; then
    if [ "$passed" = "$runs" ]; then echo "PASS test_pcsampling fresh $mode: $passed/$runs"
    else echo "FAIL test_pcsampling fresh $mode: $passed/$runs"; fail=1; fi
  fi
done
if [ "${PCS_SHORT_BENCH:-1}" = 1 ]; then
  if "$py" "$root/bench/pcsampling_short.py" "$out/bench" "${PCS_SHORT_TRIALS:-12}" >"$out/bench.log" 2>&1; then
    grep -E "^(RESULT|PASS|FAIL|\|)" "$out/bench.log"
  else
    echo "FAIL pcsampling_short bench (see bench.log)"; tail -15 "$out/bench.log"; fail=1
  fi
fi
exit $fail
