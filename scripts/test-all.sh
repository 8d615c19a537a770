#!/usr/bin/env bash
# `make test`: the C suite (ctest), the Python tests (scripts/test-python.sh)
# and the Triton 3.6-3.9 runs (scripts/triton-compat.sh), one after another
# even when one fails, each with its usual output (and a log under BUILD),
# then exactly one closing line summing the three:
#   N passed, N failed[, N skipped]
# A part that ends without reporting counts (a venv that cannot be made, a
# build error) counts as one failure and is named on the line before.
# Exits non-zero when anything failed.
# usage: scripts/test-all.sh BUILD [JOBS]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: test-all.sh BUILD [JOBS]}
jobs=${2:-$(nproc)}
passed=0 failed=0 skipped=0

# count WORD LINES: the sum of the numbers before WORD (a regex) in LINES
# ("3 passed" -> 3), or 0.
count() { grep -oE "[0-9]+ $1" <<< "$2" | awk '{s += $1} END {print s + 0}'; }

# stage NAME RC PASSED FAILED SKIPPED FOUND: adds one part's counts.
stage() {
  local name=$1 rc=$2 p=$3 f=$4 s=$5 found=$6
  if [ "$found" = 0 ] || { [ "$rc" != 0 ] && [ "$f" = 0 ]; }; then
    echo "cproton: $name ended (exit $rc) without reporting its failures; counted as 1 failed" >&2
    f=$((f + 1))
  fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

c_tests() {
  local log=$build/ctest.log rc line
  (cd "$build" && ctest --output-on-failure -j "$jobs") 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  # "75% tests passed, 1 tests failed out of 4"; "100% tests passed out of 4"
  line=$(grep -E 'tests passed(, [0-9]+ tests? failed)? out of [0-9]+' "$log" | tail -1)
  local total f s
  total=$(grep -oE 'out of [0-9]+' <<< "$line" | grep -oE '[0-9]+$')
  f=$(grep -oE '[0-9]+ tests? failed' <<< "$line" | grep -oE '^[0-9]+')
  s=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$log")
  stage "C tests (ctest)" "$rc" "$(( ${total:-0} - ${f:-0} - s ))" "${f:-0}" "$s" "$([ -n "$line" ] && echo 1 || echo 0)"
}

py_tests() {
  local log=$build/pytest.log rc line
  "$root/scripts/test-python.sh" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  line=$(grep -E '^=* ?[0-9]+ (passed|failed|skipped|errors?)' "$log" | tail -1)
  stage "Python tests" "$rc" "$(count passed "$line")" \
    "$(( $(count failed "$line") + $(count 'errors?' "$line") ))" \
    "$(count skipped "$line")" "$([ -n "$line" ] && echo 1 || echo 0)"
}

triton_tests() {
  local log=$build/triton-compat.log rc lines
  "$root/scripts/triton-compat.sh" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  lines=$(grep -E '^RESULT triton=' "$log")
  stage "Triton runs" "$rc" "$(count passed "$lines")" \
    "$(( $(count failed "$lines") + $(count 'errors?' "$lines") ))" \
    "$(count skipped "$lines")" "$([ -n "$lines" ] && echo 1 || echo 0)"
}

mkdir -p "$build"
c_tests
py_tests
triton_tests
summary="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ]
