#!/usr/bin/env bash
# cproton-viewer --roofline (issue 27 item 3): a profile with two kernels
# that carry flops16/bytes and one that does not; the SVG must be
# well-formed, place each kernel at FLOP/byte and FLOP/s computed by hand,
# draw the H100 fp16 roof at specs.py's peak, stay inside its plot area, and
# say how many kernels it could not draw. A profile without FLOPs is refused
# and leaves no file. Usage: roofline_test.sh VIEWER
set -euo pipefail
viewer=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" <<'PY'
import json, sys
def node(n, m=None, c=()): return {"frame": {"name": n, "type": "function"}, "metrics": m or {}, "children": list(c)}
def k(n, ns, fl=None, by=None):
    m = {"count": 1, "time (ns)": ns, "device_id": "0", "device_type": "CUDA"}
    if fl is not None: m["flops16"] = fl
    if by is not None: m["bytes"] = by
    return node(n, m)
dev = {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1755000,
                      "memory_clock_rate": 2619000, "num_sms": 132}}}
good = [node("ROOT", {"count": 0, "time (ns)": 0}, [node("fwd", {}, [
    k("matmul<a&b>", 1_000_000, 4e11, 1e8), k("add", 500_000, 1e6, 1.2e9), k("nometa", 1000)])]), dev]
bare = [node("ROOT", {"count": 0, "time (ns)": 0}, [k("nometa", 1000)]), dev]
json.dump(good, open(f"{sys.argv[1]}/good.hatchet", "w"))
json.dump(bare, open(f"{sys.argv[1]}/bare.hatchet", "w"))
PY
"$viewer" --roofline "$tmp/r.svg" "$tmp/good.hatchet" >/dev/null
python3 - "$tmp/r.svg" <<'PY'
import math, sys
from xml.etree import ElementTree
ns = "{http://www.w3.org/2000/svg}"
svg = ElementTree.parse(sys.argv[1]).getroot()
pts = {c.find(ns + "title").text.split("\n")[0]: c for c in svg.iter(ns + "circle")}
assert set(pts) == {"matmul<a&b>", "add"}, pts
def close(a, b): return math.isclose(float(a), b, rel_tol=1e-4)
assert close(pts["matmul<a&b>"].get("data-ai"), 4000) and close(pts["matmul<a&b>"].get("data-flops"), 4e14)
assert close(pts["add"].get("data-ai"), 1e6 / 1.2e9) and close(pts["add"].get("data-flops"), 2e9)
roofs = [p for p in svg.iter(ns + "polyline") if p.get("class") == "roof"]
assert [r.get("data-width") for r in roofs] == ["fp16"], roofs
assert close(roofs[0].get("data-peak"), 132 / 114 * 1513e12 / 2)  # specs.py, sm_90
W, H = float(svg.get("width")), float(svg.get("height"))
for c in pts.values():
    assert 0 < float(c.get("cx")) < W and 0 < float(c.get("cy")) < H
for xy in roofs[0].get("points").split():
    x, y = map(float, xy.split(","))
    assert 0 <= x <= W and 0 <= y <= H, xy
title = next(svg.iter(ns + "text")).text
assert "2 kernel frames" in title and "1 without flops" in title, title
print("roofline svg ok")
PY
if "$viewer" --roofline "$tmp/b.svg" "$tmp/bare.hatchet" >/dev/null 2>"$tmp/err"; then
  echo "FAIL: a profile without flops drew a roofline"; exit 1
fi
grep -q "no kernel frame has flops" "$tmp/err" || { cat "$tmp/err"; exit 1; }
[ ! -e "$tmp/b.svg" ] || { echo "FAIL: refused roofline left a file"; exit 1; }
if "$viewer" --roofline "$tmp/c.svg" --diff-profile "$tmp/good.hatchet" "$tmp/good.hatchet" 2>/dev/null; then
  echo "FAIL: --roofline with --diff-profile accepted"; exit 1
fi
echo "PASS roofline"
