#!/usr/bin/env bash
# Runs the core (through the examples and benchmarks) and the tools under
# valgrind's memcheck; any definite or indirect leak, or any memory error,
# fails. Usage: scripts/valgrind.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/tests/data
out=$(mktemp -d)
vg=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect
    --error-exitcode=9 --suppressions="$root/scripts/valgrind.supp")
pass=0; fail=0
# check NAME CMD...: CMD must exit 0 with no memcheck error.
# check_bad NAME CMD...: CMD must reject its input (exit 1..8) cleanly.
check() { run_vg 0 "$@"; }
check_bad() { run_vg 1 "$@"; }
run_vg() {
  local want_bad=$1 name=$2; shift 2
  local rc=0
  "${vg[@]}" "$@" >"$out/$name.log" 2>&1 || rc=$?
  if { [ "$want_bad" = 0 ] && [ $rc -eq 0 ]; } ||
     { [ "$want_bad" = 1 ] && [ $rc -ne 0 ] && [ $rc -ne 9 ]; }; then
    pass=$((pass + 1)); echo "PASS valgrind $name"
  else
    fail=$((fail + 1)); echo "FAIL valgrind $name"; tail -30 "$out/$name.log"
  fi
}
check basic_tree "$build/examples/example_basic" "$out/basic" tree
check basic_trace "$build/examples/example_basic" "$out/basic" trace
check scope_bench "$build/bench/scope_bench" 2000 2
check native_unwind "$build/bench/native_unwind_bench" 12 200
# the indexes doubling: 60,000 new scopes, then threads racing their growth
check scope_growth "$build/bench/scope_bench" --growth 3 flat 20000
check index_growth "$build/tests/index_growth"
# phases, periodic flushing (part files written and stores reused), both kinds
check soak_trace "$build/bench/soak_bench" 2 2000 trace
check soak_tree "$build/bench/soak_bench" 2 2000 tree
if [ -x "$build/tools/viewer/cproton-viewer" ]; then
  for f in "$data"/proton-3.6/*.hatchet; do
    m=time/ms,avg_time/us
    grep -q '"time (ns)"' "$f" || m=normalized_cycles  # instrumentation profile
    grep -q '"num_samples"' "$f" && m=num_samples,stalled_barrier/%
    check "viewer_$(basename "$f" .hatchet)" "$build/tools/viewer/cproton-viewer" \
      --no-color -m "$m" "$f"
  done
  check viewer_list "$build/tools/viewer/cproton-viewer" -l \
    "$data/proton-3.6/proton_hook.hatchet"
  check viewer_svg "$build/tools/viewer/cproton-viewer" --no-color --demangle \
    -m time/us --svg "$out/flame.svg" "$root/examples/results/proton_example.hatchet"
  printf '[{"frame": {"name": "ROOT"' > "$out/truncated.hatchet"
  check_bad viewer_truncated "$build/tools/viewer/cproton-viewer" "$out/truncated.hatchet"
  golden=$root/tests/golden/viewer
  check viewer_msgpack "$build/tools/viewer/cproton-viewer" --no-color -m time/ms \
    "$golden/inputs/known.hatchet_msgpack"
  check_bad viewer_msgpack_truncated "$build/tools/viewer/cproton-viewer" \
    "$golden/bad/truncated.hatchet_msgpack"
fi
if [ -x "$build/tools/instrument/cproton-instrument" ]; then
  for f in "$data"/ptx/*.ptx; do
    check "instrument_$(basename "$f" .ptx)" \
      "$build/tools/instrument/cproton-instrument" "$f" -o "$out/$(basename "$f")"
  done
fi
rm -rf "$out"
echo "valgrind: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
