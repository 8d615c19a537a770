#!/usr/bin/env bash
# Timed libFuzzer runs (`make fuzz`): each target in a libFuzzer build
# (-DCPROTON_FUZZ=ON, clang, ASan + UBSan) runs for SECONDS from its
# checked-in corpus. New inputs go to a scratch copy, never into the
# repository. A crash, leak, sanitizer report or timeout stops that target;
# the script goes on with the others, prints the reproducer's path and the
# command to replay it, and fails at the end.
# usage: scripts/fuzz.sh BUILD SECONDS TARGET...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1 seconds=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/cproton-fuzz.XXXXXX")
keep=0
trap '[ $keep -eq 1 ] || rm -rf "$work"' EXIT
failed=()
for t in "$@"; do
  corpus=$root/tests/fuzz/corpus/$t
  [ -d "$corpus" ] || { echo "FAIL $t: no corpus at $corpus"; failed+=("$t"); continue; }
  mkdir -p "$work/$t/corpus" "$work/$t/crash"
  cp "$corpus"/* "$work/$t/corpus/"
  # The scratch corpus first: libFuzzer writes new inputs to the first folder.
  if UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1 \
     "$build/tests/$t" -max_total_time="$seconds" -max_len=16384 -timeout=10 \
       -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$t/crash/" \
       "$work/$t/corpus" > "$work/$t/log" 2>&1; then
    runs=$(grep -m1 '^stat::number_of_executed_units' "$work/$t/log" | awk '{print $2}')
    echo "PASS $t: ${runs:-?} inputs in ${seconds} s, no report"
  else
    keep=1
    failed+=("$t")
    grep -E 'ERROR|runtime error|SUMMARY' "$work/$t/log" | head -5 || true
    for a in "$work/$t/crash"/*; do
      [ -e "$a" ] || continue
      echo "FAIL $t: reproducer $a"
      echo "  replay: $build/tests/${t}_replay $a; add it to tests/fuzz/corpus/$t/ with the fix"
    done
    echo "  log: $work/$t/log"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of $# targets failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: $# targets, ${seconds} s each, no report"
