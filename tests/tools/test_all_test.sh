#!/usr/bin/env bash
# `make test` ends with exactly one line summing its three parts (issue 24,
# item 13): scripts/test-all.sh run in a scratch copy of the repository's
# scripts folder, where the Python and Triton parts are stand-ins printing
# pytest's closing lines, and the C part is a real ctest over a made-up
# CTestTestfile (2 passing tests, 1 failing, 1 skipped). Then a Python part
# that dies before pytest (a venv that cannot be made) counts as one failure.
# usage: test_all_test.sh SOURCE_DIR
set -uo pipefail
src=$1
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/scripts" "$tmp/build"
cp "$src/scripts/test-all.sh" "$tmp/scripts/" || fail "no scripts/test-all.sh"
cat > "$tmp/build/CTestTestfile.cmake" <<'CT'
add_test(ok1 "true")
add_test(ok2 "true")
add_test(bad "false")
add_test(skip "sh" "-c" "exit 77")
set_tests_properties(skip PROPERTIES SKIP_RETURN_CODE 77)
CT
printf '#!/bin/sh\necho ..F.s\necho "1 failed, 40 passed, 3 skipped in 2.50s"\nexit 1\n' > "$tmp/scripts/test-python.sh"
cat > "$tmp/scripts/triton-compat.sh" <<'TC'
#!/bin/sh
echo "RESULT triton=3.6.0 pass 67 passed in 30.1s (31 s)"
echo "RESULT triton=3.9.0 FAIL 2 failed, 64 passed, 1 skipped, 1 error in 29.0s (30 s)"
exit 1
TC
chmod +x "$tmp/scripts/"*.sh
out=$("$tmp/scripts/test-all.sh" "$tmp/build" 2 2>&1)
rc=$?
last=$(tail -1 <<< "$out")
# C 2/1/1, Python 40/1/3, Triton 131/3 (2 failed + 1 error)/1
[ "$last" = "173 passed, 5 failed, 5 skipped" ] || fail "closing line '$last':"$'\n'"$out"
[ "$rc" -ne 0 ] || fail "exit status 0 with failures"
[ "$(grep -cE '^[0-9]+ passed, [0-9]+ failed' <<< "$out")" -eq 1 ] || fail "more than one summary line"
printf '#!/bin/sh\necho "pip: no network" >&2\nexit 1\n' > "$tmp/scripts/test-python.sh"
out=$("$tmp/scripts/test-all.sh" "$tmp/build" 2 2>&1)
last=$(tail -1 <<< "$out")
[ "$last" = "133 passed, 5 failed, 2 skipped" ] || fail "closing line '$last' with a broken Python part:"$'\n'"$out"
grep -q "Python tests ended (exit 1) without reporting" <<< "$out" || fail "the broken part is not named"
# every C test passing: ctest says "100% tests passed out of 3" (no failed count)
printf 'add_test(ok1 "true")\nadd_test(ok2 "true")\nadd_test(ok3 "true")\n' > "$tmp/build/CTestTestfile.cmake"
out=$("$tmp/scripts/test-all.sh" "$tmp/build" 2 2>&1)
last=$(tail -1 <<< "$out")
[ "$last" = "134 passed, 4 failed, 1 skipped" ] || fail "closing line '$last' with every C test passing:"$'\n'"$out"
echo "PASS test-all: one closing line summing ctest, pytest and the Triton runs"
