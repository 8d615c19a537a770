#!/usr/bin/env bash
# Runs Proton's own Python test suite against Proton and against cproton,
# side by side, and prints per-file pass counts for both. Either suite:
#   3.6: third_party/proton/test of triton-lang/triton at commit
#        371b6445f95f869cc7f7c70cfd8dedebc5285d54 (Proton 3.6's);
#   3.9: the "3.9 window", third_party/proton/test of lightseekorg/triton
#        (a full mirror of triton-lang/triton) at commit
#        f4fca2c0bc0e19930d2be76bb06ee7b232b60e86 (2026-08-22).
#
# usage: tests/gpu/proton_suite.sh DIR [WORK_DIR]
#   DIR holds Proton's test/ folder, or is that folder. The files are public
#   but not ours: fetch them into the git-ignored .proton-tests/ (3.6) or
#   .proton-tests-39/ (3.9) of this repository, never commit them.
#   WORK_DIR (default: a temporary folder) receives the copies, one pytest
#   log and one JUnit XML per file and profiler, and summary.txt.
# Environment: PYTHON (default python3); PROTON_SUITE_VERSION (3.6 or 3.9;
#   default: 3.9 when test_profile.py imports cuda_graph_without_gc, as
#   only 3.9's does);
#   PROTON_SUITE_FILES (default: the suite's files below);
#   PROTON_SUITE_PROFILERS (default "proton cproton" for 3.6, "cproton" for
#   3.9: the installed Triton's Proton runs the 3.9 tests only when it is
#   3.9; they run concurrently); PROTON_SUITE_TIMEOUT (seconds per file,
#   default 300).
#
# The cproton copy differs from Proton's only in its imports:
#   triton.profiler... -> cproton...,  "-m triton.profiler.proton" -> "-m cproton",
#   the "proton" command -> "cproton", "proton-viewer" -> "cproton-viewer".
# For the 3.9 suite the cproton copy runs with CPROTON_PROTON_VERSION=3.9
# (cproton behaves like Proton 3.9 whatever Triton is installed), and pytest
# loads tests/gpu/proton_suite/proton39_shim.py (copied into WORK_DIR/shim),
# which adds what the tests import from Triton 3.9 and an older Triton lacks
# (triton.testing.cuda_graph_without_gc); the test files are not edited.
# Prints "RESULT <file> proton=P/T cproton=C/T" per file (P, C: passed; T:
# run) and "FAILED <profiler> <test id>" for every failed test.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?usage: proton_suite.sh DIR [WORK_DIR]}
[ -f "$src/test/test_profile.py" ] && src=$src/test
if [ ! -f "$src/test_profile.py" ]; then
  echo "FAIL proton_suite: no Proton test folder (test_profile.py) in $1" >&2; exit 2
fi
# 3.9's test_profile.py imports triton.testing.cuda_graph_without_gc
version=${PROTON_SUITE_VERSION:-$(grep -q cuda_graph_without_gc "$src/test_profile.py" && echo 3.9 || echo 3.6)}
case $version in
  3.6) default_files="test_profile.py test_api.py test_cmd.py test_viewer.py test_instrumentation.py"
       default_profilers="proton cproton" ;;
  3.9) default_files="test_profile.py test_api.py test_cmd.py test_viewer.py test_lib.py test_override.py test_instrumentation.py"
       default_profilers="cproton" ;;
  *) echo "FAIL proton_suite: PROTON_SUITE_VERSION=$version (3.6 or 3.9)" >&2; exit 2 ;;
esac
work=${2:-$(mktemp -d /tmp/proton-suite.XXXXXX)}
mkdir -p "$work"; work=$(cd "$work" && pwd)
py=${PYTHON:-python3}
files=${PROTON_SUITE_FILES:-$default_files}
profilers=${PROTON_SUITE_PROFILERS:-$default_profilers}
echo "proton_suite: Proton $version suite from $src, profilers: $profilers"

# The command-line tools the cproton copy calls: shims over `python -m` when
# the package is importable but not installed (e.g. from a build tree).
shims=$work/bin
mkdir -p "$shims"
command -v cproton >/dev/null 2>&1 ||
  printf '#!/bin/sh\nexec %s -m cproton "$@"\n' "$py" > "$shims/cproton"
command -v cproton-viewer >/dev/null 2>&1 ||
  printf '#!/bin/sh\nexec %s -m cproton.viewer "$@"\n' "$py" > "$shims/cproton-viewer"
chmod +x "$shims"/* 2>/dev/null

# Triton 3.9's helpers for the 3.9 suite (a pytest plugin, see above).
plugin=()
if [ "$version" = 3.9 ]; then
  mkdir -p "$work/shim"; cp "$here/proton_suite/proton39_shim.py" "$work/shim/"
  plugin=(-p proton39_shim)
fi

rewrite() { # the imports-only rewrite, in place, of every .py under $1
  find "$1" -name '*.py' -print0 | xargs -0 sed -i -E \
    -e 's/"-m", "triton\.profiler\.proton"/"-m", "cproton"/g' \
    -e 's/triton\.profiler/cproton/g' \
    -e 's/\["proton-viewer"/["cproton-viewer"/g' \
    -e 's/\["proton"/["cproton"/g'
}

: > "$work/summary.txt"
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

# The two profilers run side by side (separate processes: CUPTI is per
# process), each over the files in turn.
# PROTON_SUITE_DESELECT: test ids ("file::test") left out, each printed as
# NOTRUN: tests that need a compiler feature the installed Triton lacks
# (a failing test that started a session cascades into every later one).
deselect=()
for id in ${PROTON_SUITE_DESELECT:-}; do
  deselect+=(--deselect "$id"); echo "NOTRUN $id" | tee -a "$work/summary.txt"
done
run_files() {
  local p=$1 f env=()
  [ "$version" = 3.9 ] && [ "$p" = cproton ] && env=(CPROTON_PROTON_VERSION=3.9)
  for f in $files; do
    [ -f "$work/$p/$f" ] || continue
    (cd "$work/$p" && env "${env[@]}" PATH="$shims:$PATH" \
      PYTHONPATH="$work/shim${PYTHONPATH:+:$PYTHONPATH}" timeout -k 10 "${PROTON_SUITE_TIMEOUT:-300}" \
      "$py" -m pytest -q -p no:cacheprovider "${plugin[@]}" -o addopts="" "$f" "${deselect[@]}" --junitxml="$work/$p.$f.xml") \
      > "$work/$p.$f.log" 2>&1
  done
}
for p in $profilers; do run_files "$p" & done
wait
failed() { # "FAILED <profiler> <test id>" for each failure in a JUnit XML file
  "$py" - "$1" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[2]).getroot()
except (OSError, ET.ParseError):
    sys.exit()
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        print(f"FAILED {sys.argv[1]} {case.get('classname', '')}::{case.get('name', '')}")
PY
}
for f in $files; do
  line="RESULT $f"
  for p in $profilers; do
    if [ -f "$work/$p/$f" ]; then line+=" $p=$(count "$work/$p.$f.xml")"; else line+=" $p=absent"; fi
  done
  echo "$line" | tee -a "$work/summary.txt"
  for p in $profilers; do failed "$p" "$work/$p.$f.xml" | tee -a "$work/summary.txt"; done
done
echo "logs: $work"
