#!/usr/bin/env bash
# tests/gpu/run.sh part "proton": Proton 3.6's own test suite, run for Proton
# and for cproton side by side (tests/gpu/proton_suite.sh). The suite is not
# in the repository: fetch Proton's test/ folder into .proton-tests/ (git-
# ignored) or point PROTON_TESTS at it. Prints one RESULT line per file and
# fails when cproton passes fewer tests than Proton in some file.
# usage: tests/gpu/proton.sh OUT_DIR [BUILD_DIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-${OUT:-out/gpu-proton}}
tests=${PROTON_TESTS:-$root/.proton-tests}
if [ ! -d "$tests" ]; then
  echo "FAIL proton_suite: no Proton tests in $tests (see tests/gpu/proton_suite.sh)"; exit 1
fi
mkdir -p "$out"
"$here/proton_suite.sh" "$tests" "$out/suite" | tee "$out/summary.txt"
status=0
while read -r _ file rest; do
  p=$(sed -nE 's/.* proton=([0-9]+)\/.*/\1/p' <<<" $rest")
  c=$(sed -nE 's/.* cproton=([0-9]+)\/.*/\1/p' <<<" $rest")
  if [ -n "$p" ] && [ -n "$c" ] && [ "$c" -lt "$p" ]; then
    echo "FAIL proton_suite $file: cproton passes $c, Proton $p"; status=1
  fi
done < <(grep '^RESULT' "$out/summary.txt")
[ $status = 0 ] && echo "PASS proton_suite: cproton passes at least what Proton passes"
exit $status
