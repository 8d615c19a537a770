#!/bin/sh
# The misuse suite of the command-line tools: cproton-instrument writing to a
# device node, outputs that are inputs, directories, FIFOs or planted links
# (both tools), and cproton-viewer on hostile profiles (names with newlines,
# repeated keys, string counts, the exact string limit, quadratic diffs,
# exponential regexes, endless and zero inputs). Every case must end with
# the documented exit status and message, within a time bound.
# usage: tools_misuse.sh VIEWER INSTRUMENT SOURCE_DIR
set -u
viewer=$1
instrument=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0

# check NAME WANT_RC PATTERN -- CMD...: runs CMD (60 s at most), expects its
# exit status and PATTERN in its stdout+stderr.
check() {
  name=$1 want=$2 pattern=$3
  shift 4
  out=$(timeout 60 "$@" 2>&1)
  rc=$?
  n=$((n + 1))
  if [ "$rc" != "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "FAIL $name: rc=$rc (want $want), output:"
    printf '%s\n' "$out" | head -5 | cut -c1-300
    fail=$((fail + 1))
  fi
}

node() { # name metrics children
  printf '{"frame": {"name": "%s", "type": "function"}, "metrics": {%s}, "children": [%s]}' "$1" "$2" "$3"
}
M='"count": 1, "time (ns)": 5'

# ---- cproton-instrument -o /dev/null keeps the device node
ptx="$src/tests/data/instrument/scope_return.ptx"
check instrument_dev_null 0 "scopes" -- "$instrument" "$ptx" -o /dev/null
# ---- file safety (docs/guarantees.md): an output is never an input, never
# replaces anything but a regular file, and its temporary never follows a
# link planted at its name
cp "$ptx" "$tmp/in.ptx"
check instrument_in_is_out 1 "output '$tmp/in.ptx' is the input" -- "$instrument" "$tmp/in.ptx" -o "$tmp/in.ptx"
check instrument_over_dir 1 "is a directory; cproton replaces only regular files" -- "$instrument" "$ptx" -o "$tmp"
printf 'secret' > "$tmp/victim"
i=0
while [ $i -lt 1000 ]; do # every temporary name cproton-instrument used to try
  ln -s "$tmp/victim" "$tmp/out.ptx.tmp$i"
  i=$((i + 1))
done
check instrument_planted_links 0 "scopes" -- "$instrument" "$ptx" -o "$tmp/out.ptx"
n=$((n + 1))
if ! cmp -s "$ptx" "$tmp/in.ptx" || [ "$(cat "$tmp/victim")" != secret ] || [ -L "$tmp/out.ptx" ] ||
   ! grep -q '%cpr_' "$tmp/out.ptx"; then
  echo "FAIL instrument_files: the input or the victim changed, or no instrumented output"
  fail=$((fail + 1))
fi
printf '[%s]' "$(node ROOT "$M" '')" > "$tmp/p.hatchet"
ln "$tmp/p.hatchet" "$tmp/hard.hatchet"
check svg_is_input 1 "output '$tmp/p.hatchet' is the input" -- "$viewer" --svg "$tmp/p.hatchet" "$tmp/p.hatchet"
check svg_hard_link_is_input 1 "is the input" -- "$viewer" --svg "$tmp/hard.hatchet" "$tmp/p.hatchet"
mkdir "$tmp/svgdir"
check svg_over_dir 1 "is a directory; cproton replaces only regular files" -- "$viewer" --svg "$tmp/svgdir" "$tmp/p.hatchet"
pf="$src/tests/fuzz/corpus/perfetto_merge_fuzz/sample.pftrace"
cp "$pf" "$tmp/a.pftrace"
mkfifo "$tmp/node"
check merge_over_fifo 1 "is a FIFO; cproton replaces only regular files" -- "$viewer" --merge-traces "$tmp/node" "$tmp/a.pftrace"
check merge_over_input 1 "is the input" -- "$viewer" --merge-traces "$tmp/a.pftrace" "$tmp/a.pftrace"
n=$((n + 1))
if [ ! -p "$tmp/node" ] || ! cmp -s "$pf" "$tmp/a.pftrace" || [ "$(cat "$tmp/p.hatchet")" != "[$(node ROOT "$M" '')]" ]; then
  echo "FAIL viewer_files: a FIFO was replaced or an input changed"
  fail=$((fail + 1))
fi

# ---- --buffer-strategy: flush gives a global buffer; a bad value is named
check instrument_flush 0 "global buffer" -- "$instrument" "$ptx" -o /dev/null --buffer-strategy flush
check instrument_bad_strategy 2 "bad option '--buffer-strategy' periodic" -- \
  "$instrument" "$ptx" -o /dev/null --buffer-strategy periodic
n=$((n + 1))
if [ ! -c /dev/null ]; then echo "FAIL /dev/null is no longer a device"; fail=$((fail + 1)); fi

# ---- viewer: folded output escapes what would break its lines
printf '[%s]' "$(node ROOT "$M" "$(node 'a\nb;c\\d' "$M" '')")" > "$tmp/nl.hatchet"
check folded_escapes 0 'ROOT;a\\nb,c\\\\d 5' -- "$viewer" -o folded -m time/ns "$tmp/nl.hatchet"
lines=$("$viewer" -o folded -m time/ns "$tmp/nl.hatchet" | wc -l)
n=$((n + 1))
[ "$lines" = 2 ] || { echo "FAIL folded_lines: $lines lines"; fail=$((fail + 1)); }

# ---- repeated keys: the last one wins, as in Python's json
printf '[{"frame": {"name": "R", "name": "ROOT"}, "metrics": {"count": 1, "count": 7, "time (ns)": 5}, "children": []}]' > "$tmp/dup.hatchet"
check duplicate_keys_last 0 '^7.000 ROOT' -- "$viewer" -m count "$tmp/dup.hatchet"

# ---- a count that is a string is an error with its position
printf '[{"frame": {"name": "ROOT"}, "metrics": {"count": "ten", "time (ns)": 5}, "children": []}]' > "$tmp/ten.hatchet"
check string_count 1 'ten.hatchet:1:51: metric "count" must be a number' -- "$viewer" -m time/ns "$tmp/ten.hatchet"

# ---- the 1 MiB string limit is exact
long() { # bytes
  { printf '[{"frame": {"name": "'; head -c "$1" /dev/zero | tr '\0' a
    printf '"}, "metrics": {%s}, "children": []}]' "$M"; } > "$tmp/long.hatchet"
}
long 1048576
check string_1MiB 0 'ROOT\|aaaa' -- "$viewer" -m time/ns "$tmp/long.hatchet"
long 1048577
check string_1MiB_plus_1 1 'string longer than 1048576 bytes' -- "$viewer" -m time/ns "$tmp/long.hatchet"

# ---- --diff-profile with 200,000 same-named siblings stays linear
python3 - "$tmp" <<'PY'
import sys
kid = '{"frame": {"name": "k", "type": "function"}, "metrics": {"count": 1, "time (ns)": 2}, "children": []}'
root = '[{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"count": 1, "time (ns)": 5}, "children": [%s]}]'
for side in ("l", "r"):
    open(f"{sys.argv[1]}/{side}.hatchet", "w").write(root % ",".join([kid] * 200000))
PY
start=$(date +%s)
check diff_same_named 0 "0.000 ROOT" -- "$viewer" -m time/ns -d 1 --diff-profile "$tmp/r.hatchet" "$tmp/l.hatchet"
secs=$(($(date +%s) - start))
n=$((n + 1))
[ "$secs" -le 10 ] || { echo "FAIL diff_same_named took ${secs}s"; fail=$((fail + 1)); }

# ---- regexes: back-references (exponential in glibc) are refused
printf '[%s]' "$(node ROOT "$M" "$(node "$(head -c 5000 /dev/zero | tr '\0' a)" "$M" '')")" > "$tmp/re.hatchet"
check regex_backref 1 'back-references' -- "$viewer" -m time/ns -i '((a*)*)*\2b' "$tmp/re.hatchet"
check regex_nested_star 0 "^$" -- "$viewer" -m time/ns -i "((a*)*)*b" "$tmp/re.hatchet"

# ---- endless or zero inputs end with an error, not a hang
check dev_zero 1 'unexpected character 0x00' -- "$viewer" -m time/ns /dev/zero
mkfifo "$tmp/fifo"
(yes '[' > "$tmp/fifo" 2>/dev/null &)
check fifo_stream 1 'fifo' -- "$viewer" -m time/ns "$tmp/fifo"
check directory 1 '' -- "$viewer" -m time/ns "$tmp"

echo "$n cases, $fail failed"
[ "$fail" -eq 0 ]
