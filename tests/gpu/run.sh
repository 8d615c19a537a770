#!/usr/bin/env bash
# The one GPU entry point: builds cproton from source on the GPU machine, then
# runs every GPU test script and benchmark in tests/gpu/ and bench/, writing
# logs under $OUT (or $1). Each part prints "PASS name" / "FAIL name: why".
# Usage (device tool): bash tests/gpu/run.sh [parts...]; each part P runs
# tests/gpu/P.sh OUTDIR BUILD ("build" builds the tree first).
set -uo pipefail
# Logs are written to a scratch folder and packed into $OUT/gpu-logs.tar.gz
# (the device tool brings back at most 8 files), beside summary.log.
root=$(cd "$(dirname "$0")/../.." && pwd)
final=${OUT:-/tmp/cproton-gpu-out}
parts=${*:-"build cupti instrument python tensor_metrics bench"}
out=/tmp/cproton-gpu-logs
rm -rf "$out"; mkdir -p "$out" "$final"
# One build folder per source tree: several checkouts (a lead's and its
# helpers' copies under .carry/) may share one warm machine.
build=${BUILD:-/tmp/cproton-build-$(printf '%s' "$root" | cksum | cut -d' ' -f1)}
export BUILD=$build
# The CMake build makes the Python package importable from the build tree,
# and libcproton.so is the injection library for `cproton -- ./program`.
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
export CPROTON_INJECTION_LIB=$build/libcproton.so
export PYTHONUNBUFFERED=1
# Python packages the GPU image lacks (llnl-hatchet and its pure-Python needs,
# for Proton's test_get_data and the viewer tests) travel as wheels in .whl/
# (carry it; docs/testing.md says how to download them). Installed, never built.
# Debian libraries the image lacks (libunwind8, libdw1/libelf1 and their
# -dev headers, for native call stacks with file:line) travel as .deb files
# in .debs/ (carry it; docs/testing.md): unpacked, found through
# CMAKE_INCLUDE_PATH at build and LD_LIBRARY_PATH at run time.
if ls "$root"/.debs/*.deb >/dev/null 2>&1; then
  for d in "$root"/.debs/*.deb; do dpkg-deb -x "$d" /tmp/cproton-debs; done
  export CMAKE_INCLUDE_PATH=/tmp/cproton-debs/usr/include
  export CPATH=/tmp/cproton-debs/usr/include${CPATH:+:$CPATH}
  export LD_LIBRARY_PATH=/tmp/cproton-debs/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if ls "$root"/.whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/cproton-site "$root"/.whl/*.whl &&
    export PYTHONPATH=$PYTHONPATH:/tmp/cproton-site
fi
log() { echo "== $*" | tee -a "$out/summary.log"; }
status=0
# Each part runs under a time limit (PART_TIMEOUT s), and the logs are packed
# into $OUT after every part, so a run cut short still brings back the rest.
pack() {
  tar -C "$out" -czf "$final/gpu-logs.tar.gz" . 2>/dev/null
  cp "$out/summary.log" "$final/summary.log"
}
run_part() {
  local name=$1; shift
  log "$name"
  local t0=$(date +%s)
  local limit=(timeout -k 10 "${PART_TIMEOUT:-300}")
  [ "$(type -t "$1")" = function ] && limit=() # shell functions run as they are
  if "${limit[@]}" "$@" >"$out/$name.log" 2>&1; then
    log "PASS part $name ($(( $(date +%s) - t0 )) s)"
  else
    log "FAIL part $name ($(( $(date +%s) - t0 )) s)"; status=1
  fi
  grep -E "^(PASS|FAIL|RESULT)" "$out/$name.log" | tee -a "$out/summary.log" >/dev/null
  pack
}
do_build() {
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCPROTON_BUILD_TESTS=OFF -DCPROTON_WERROR=OFF &&
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
pack
cat "$out/summary.log"
exit $status
