#!/usr/bin/env bash
# Runs Proton 3.6's own Python test suite against Proton and against cproton,
# side by side, and prints per-file pass counts for both.
#
# usage: tests/gpu/proton_suite.sh DIR [WORK_DIR]
#   DIR holds Proton's test/ folder (third_party/proton/test of triton-lang/
#   triton, commit 371b6445f95f869cc7f7c70cfd8dedebc5285d54), or is that folder.
#   The files are public but not ours: fetch them into the git-ignored
#   .proton-tests/ of this repository, never commit them.
#   WORK_DIR (default: a temporary folder) receives the two copies, one pytest
#   log and one JUnit XML per file and profiler, and summary.txt.
# Environment: PYTHON (default python3), PROTON_SUITE_FILES (default: the five
#   files below), PROTON_SUITE_PROFILERS (default "proton cproton"; they run
#   concurrently), PROTON_SUITE_TIMEOUT (seconds per file, default 300).
#
# The cproton copy differs from Proton's only in its imports:
#   triton.profiler... -> cproton...,  "-m triton.profiler.proton" -> "-m cproton",
#   the "proton" command -> "cproton", "proton-viewer" -> "cproton-viewer".
# Prints "RESULT <file> proton=P/T cproton=C/T" per file (P, C: passed; T: run).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: proton_suite.sh DIR [WORK_DIR]}
[ -f "$src/test/test_profile.py" ] && src=$src/test
if [ ! -f "$src/test_profile.py" ]; then
  echo "FAIL proton_suite: no Proton test folder (test_profile.py) in $1" >&2; exit 2
fi
work=${2:-$(mktemp -d /tmp/proton-suite.XXXXXX)}
mkdir -p "$work"; work=$(cd "$work" && pwd)
py=${PYTHON:-python3}
files=${PROTON_SUITE_FILES:-"test_profile.py test_api.py test_cmd.py test_viewer.py test_instrumentation.py"}
profilers=${PROTON_SUITE_PROFILERS:-"proton cproton"}

# The command-line tools the cproton copy calls: shims over `python -m` when
# the package is importable but not installed (e.g. from a build tree).
shims=$work/bin
mkdir -p "$shims"
command -v cproton >/dev/null 2>&1 ||
  printf '#!/bin/sh\nexec %s -m cproton "$@"\n' "$py" > "$shims/cproton"
command -v cproton-viewer >/dev/null 2>&1 ||
  printf '#!/bin/sh\nexec %s -m cproton.viewer "$@"\n' "$py" > "$shims/cproton-viewer"
chmod +x "$shims"/* 2>/dev/null

rewrite() { # the imports-only rewrite, in place, of every .py under $1
  find "$1" -name '*.py' -print0 | xargs -0 sed -i -E \
    -e 's/"-m", "triton\.profiler\.proton"/"-m", "cproton"/g' \
    -e 's/triton\.profiler/cproton/g' \
    -e 's/\["proton-viewer"/["cproton-viewer"/g' \
    -e 's/\["proton"/["cproton"/g'
}

for p in $profilers; do
  rm -rf "${work:?}/$p"; cp -r "$src" "$work/$p"
  [ "$p" = cproton ] && rewrite "$work/$p"
done

count() { # passed/run from a JUnit XML file ("0/0" when missing)
  "$py" - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except (OSError, ET.ParseError):
    print("0/0"); sys.exit()
suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
run = sum(int(s.get("tests", 0)) - int(s.get("skipped", 0)) for s in suites)
bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
print(f"{run - bad}/{run}")
PY
}

: > "$work/summary.txt"
# The two profilers run side by side (separate processes: CUPTI is per
# process), each over the files in turn.
run_files() {
  local p=$1 f
  for f in $files; do
    [ -f "$work/$p/$f" ] || continue
    (cd "$work/$p" && PATH="$shims:$PATH" timeout -k 10 "${PROTON_SUITE_TIMEOUT:-300}" \
      "$py" -m pytest -q -p no:cacheprovider -o addopts="" "$f" --junitxml="$work/$p.$f.xml") \
      > "$work/$p.$f.log" 2>&1
  done
}
for p in $profilers; do run_files "$p" & done
wait
for f in $files; do
  line="RESULT $f"
  for p in $profilers; do
    if [ -f "$work/$p/$f" ]; then line+=" $p=$(count "$work/$p.$f.xml")"; else line+=" $p=absent"; fi
  done
  echo "$line" | tee -a "$work/summary.txt"
done
echo "logs: $work"
