#!/usr/bin/env bash
# cproton-viewer on a hand-made profile with hardware metrics (issue 27,
# the PM-sampling mode's storage: pm_sampled_ns and X*ns per kernel):
#   -m sm_throughput%      the derived column X*ns / pm_sampled_ns per kernel
#                          and, inclusively, per scope; none where nothing
#                          was sampled; case-insensitive like any metric
#   --list                 lists the hardware metrics
#   --svg --color-by X     frames coloured by X on the 0-100 scale, grey
#                          without a value, X in each tooltip
#   --roofline             each kernel's tooltip gives its measured
#                          dram/sm throughput
# Usage: hwm_viewer_test.sh VIEWER
set -euo pipefail
viewer=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import json, sys
def node(n, m=None, c=()): return {"frame": {"name": n, "type": "function"}, "metrics": m or {}, "children": list(c)}
def k(n, ns, sampled=None, sm=None, dram=None):
    m = {"count": 1, "time (ns)": ns, "device_id": "0", "device_type": "CUDA",
         "flops16": 4e11, "bytes": 1e8}
    if sampled is not None:
        m.update({"pm_sampled_ns": sampled, "pm_unsampled_ns": ns - sampled,
                  "pm_samples": sampled // 100_000, "pm_shared_samples": 0})
    if sm is not None: m["sm_throughput%*ns"] = sm * sampled
    if dram is not None: m["dram_throughput%*ns"] = dram * sampled
    return node(n, m)
dev = {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1755000,
                      "memory_clock_rate": 2619000, "num_sms": 132}}}
root = {"count": 0, "time (ns)": 0, "pm_sampled_ns": 0, "sm_throughput%*ns": 0,
        "dram_throughput%*ns": 0}
prof = [node("ROOT", root, [
    node("fwd", {}, [k("k1", 1_000_000, 800_000, 50, 90),
                     k("k2", 500_000, 200_000, 10, 20),
                     k("short", 1000, 0, 0, 0)]),
    node("bwd", {}, [k("plain", 2000)])]), dev]
json.dump(prof, open(f"{sys.argv[1]}/hw.hatchet", "w"))
PY
"$viewer" -m time/ns,sm_throughput%,DRAM_THROUGHPUT% -o csv "$tmp/hw.hatchet" > "$tmp/out.csv"
python3 - "$tmp/out.csv" <<'PY'
import csv, math, sys
rows = list(csv.reader(open(sys.argv[1])))
head, body = rows[0], rows[1:]
assert head == ["depth", "name", "time/ns (inc)", "sm_throughput% (inc)",
                "dram_throughput% (inc)"], head
got = {r[1]: (r[3], r[4]) for r in body}
def num(s): return float(s) if s.strip() else math.nan
want = {"k1": (50, 90), "k2": (10, 20), "fwd": (42, 76), "ROOT": (42, 76)}
for name, (sm, dram) in want.items():
    assert math.isclose(num(got[name][0]), sm) and math.isclose(num(got[name][1]), dram), (name, got[name])
for name in ("short", "plain", "bwd"):  # no sample covered them: no value
    assert all(not v.strip() for v in got[name]), (name, got[name])
print("hwm columns ok")
PY
"$viewer" --list "$tmp/hw.hatchet" > "$tmp/list.txt"
grep -q "^Available hardware metrics (X\*ns / pm_sampled_ns):" "$tmp/list.txt" || { cat "$tmp/list.txt"; exit 1; }
grep -qx -- "- sm_throughput%" "$tmp/list.txt" && grep -qx -- "- dram_throughput%" "$tmp/list.txt" || { cat "$tmp/list.txt"; exit 1; }
"$viewer" -m time/ns --svg "$tmp/f.svg" --color-by sm_throughput% "$tmp/hw.hatchet" > /dev/null
python3 - "$tmp/f.svg" <<'PY'
import sys
from xml.etree import ElementTree
ns = "{http://www.w3.org/2000/svg}"
svg = ElementTree.parse(sys.argv[1]).getroot()
frames = {}
for g in svg.iter(ns + "g"):
    t = g.find(ns + "title")
    if t is not None:
        frames[t.text.split("\n")[0]] = (g, g.find(ns + "rect").get("fill"), t.text)
g, fill, title = frames["k1"]
assert g.get("data-color-value") == "50" and "sm_throughput% = 50" in title, title
assert frames["k2"][0].get("data-color-value") == "10"
assert frames["fwd"][0].get("data-color-value") == "42"
assert frames["k1"][1] != frames["k2"][1], "different values, different colours"
def hue(hexc):
    import colorsys
    r, gg, b = (int(hexc[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, gg, b)[0] * 360
assert hue(frames["k2"][1]) > hue(frames["k1"][1]), "low is bluer than high"
for name in ("plain", "bwd"):
    assert frames[name][1] == "#cfcfcf" and "no value" in frames[name][2], name
legend = [t.text for t in svg.iter(ns + "text") if t.get("class") == "scale"]
assert legend == ["colour: sm_throughput%"], legend
print("color-by ok")
PY
if "$viewer" --color-by sm_throughput% "$tmp/hw.hatchet" >/dev/null 2>"$tmp/err"; then
  echo "FAIL: --color-by without --svg accepted"; exit 1
fi
grep -q "give --svg too" "$tmp/err" || { cat "$tmp/err"; exit 1; }
if "$viewer" -m time/ns --svg "$tmp/g.svg" --color-by no_such "$tmp/hw.hatchet" >/dev/null 2>"$tmp/err"; then
  echo "FAIL: --color-by an unknown metric accepted"; exit 1
fi
grep -q "Metric no_such is not found" "$tmp/err" || { cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/g.svg" ] || { echo "FAIL: refused --svg left a file"; exit 1; }
"$viewer" --roofline "$tmp/r.svg" "$tmp/hw.hatchet" > /dev/null
python3 - "$tmp/r.svg" <<'PY'
import sys
from xml.etree import ElementTree
ns = "{http://www.w3.org/2000/svg}"
svg = ElementTree.parse(sys.argv[1]).getroot()
pts = {c.find(ns + "title").text.split("\n")[0]: c for c in svg.iter(ns + "circle")}
k1 = pts["k1"]
assert k1.get("data-dram") == "90" and k1.get("data-sm") == "50", k1.attrib
assert "measured (PM sampling): dram_throughput% 90, sm_throughput% 50" in k1.find(ns + "title").text
assert pts["plain"].get("data-dram") is None and "measured" not in pts["plain"].find(ns + "title").text
print("roofline measured ok")
PY
echo "PASS hwm viewer"
