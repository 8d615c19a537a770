#!/usr/bin/env bash
# The one GPU entry point: builds cproton from source on the GPU machine, then
# runs every GPU test script and benchmark in tests/gpu/ and bench/, writing
# logs under $OUT (or $1). Each part prints "PASS name" / "FAIL name: why".
# Usage (device tool): bash tests/gpu/run.sh [parts...]   parts: see below.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-/tmp/cproton-gpu}}
shift || true
parts=${*:-"build cupti python instrument bench"}
mkdir -p "$out"
build=/tmp/cproton-build
log() { echo "== $*" | tee -a "$out/summary.log"; }
status=0
run_part() {
  local name=$1; shift
  log "$name"
  local t0=$(date +%s)
  if "$@" >"$out/$name.log" 2>&1; then
    log "PASS part $name ($(( $(date +%s) - t0 )) s)"
  else
    log "FAIL part $name ($(( $(date +%s) - t0 )) s)"; status=1
  fi
  grep -E "^(PASS|FAIL|RESULT)" "$out/$name.log" | tee -a "$out/summary.log" >/dev/null
}
do_build() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCPROTON_BUILD_TESTS=OFF &&
  cmake --build "$build" -j 16
}
for p in $parts; do
  case $p in
    build) run_part build do_build ;;
    *) if [ -x "$root/tests/gpu/$p.sh" ]; then
         run_part "$p" "$root/tests/gpu/$p.sh" "$out/$p" "$build"
       else
         log "SKIP $p (no tests/gpu/$p.sh)"
       fi ;;
  esac
done
cat "$out/summary.log"
exit $status
