#!/bin/sh
# Golden tests for cproton-viewer: run every case of cases.txt and compare
# stdout+stderr and the exit status with expected/<name>.out.
# usage: run.sh VIEWER SOURCE_DIR [--update]
set -u
viewer=$1
src=$2
update=${3:-}
here=$src/tests/golden/viewer
ref=$src/tests/data/proton-3.6  # copies of Proton 3.6 outputs (README there)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a 2 MiB frame name (over the reader's 1 MiB string limit), made here
{ printf '[{"frame": {"name": "'; head -c 2097152 /dev/zero | tr '\0' a;
  printf '"}, "metrics": {"count": 1}, "children": []}]'; } > "$tmp/long_name.hatchet"
fail=0
n=0
cd "$here/inputs" || exit 1
while IFS='|' read -r name args; do
  case "$name" in ''|'#'*) continue ;; esac
  args=$(printf '%s' "$args" | sed "s|REF/|$ref/|g; s|LONG|$tmp/long_name.hatchet|")
  # shellcheck disable=SC2086
  out=$("$viewer" --no-color $args 2>&1; echo "rc=$?")
  out=$(printf '%s\n' "$out" | sed "s|$ref/|REF/|g; s|$tmp/|TMP/|g")
  n=$((n + 1))
  if [ "$update" = "--update" ]; then
    printf '%s\n' "$out" > "$here/expected/$name.out"
  elif ! printf '%s\n' "$out" | cmp -s - "$here/expected/$name.out"; then
    echo "FAIL $name: $viewer $args"
    printf '%s\n' "$out" | diff "$here/expected/$name.out" - | head -20
    fail=$((fail + 1))
  fi
done < "$here/cases.txt"
echo "$n cases, $fail failed"
# No case run is a broken setup (a wrong source dir), never a pass.
[ "$n" -gt 0 ] && [ "$fail" -eq 0 ]
