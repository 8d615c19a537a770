"""`cproton-viewer --svg`: the icicle flame graph, without a GPU.

The SVG is parsed (well-formed XML, one frame per tree node, widths
proportional to the chosen metric, children inside their parent, colour
class by kind, names cut but complete in <title>), then drawn by headless
Chromium and the screenshot's pixels compared with the frames' colours.
The viewer is the one the package installed (the scikit-build-core wheel).
"""
import colorsys
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
RESULTS = ROOT / "examples" / "results"
SVG_NS = "{http://www.w3.org/2000/svg}"


def viewer():
    exe = Path(sys.executable).parent / "cproton-viewer"
    assert exe.exists(), f"{exe} missing: the wheel must carry cproton-viewer"
    return str(exe)


def node(name, metrics=None, children=()):
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics or {},
            "children": list(children)}


def kernel(name, ns):
    return node(name, {"count": 1, "time (ns)": ns, "device_id": "0", "device_type": "CUDA"})


LONG = "a_kernel_with_a_very_long_name_" * 6
PROFILE = [
    node("ROOT", {"count": 0, "time (ns)": 0}, [
        node("fwd", {}, [kernel("matmul <fp16> & co", 6_000_000), kernel(LONG, 2_000_000)]),
        node("bwd", {}, [kernel("matmul_bwd", 1_500_000),
                         node("prof.py:42@step", {}, [kernel("tiny", 500_000)])]),
    ]),
    {"CUDA": {"0": {"arch": "90", "bus_width": 6016, "clock_rate": 1980000,
                    "memory_clock_rate": 3201000, "num_sms": 132}}},
]


def draw(tmp_path, profile, metric, *extra):
    """Runs the viewer with --svg; returns (svg path, [(kind, name, value, x, y, w, text)])."""
    if isinstance(profile, Path):
        src = profile
    else:
        src = tmp_path / "p.hatchet"
        src.write_text(json.dumps(profile))
    out = tmp_path / "out.svg"
    r = subprocess.run([viewer(), "-m", metric, "--svg", str(out), *extra, str(src)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    root = ElementTree.parse(out).getroot()  # raises on malformed XML
    assert root.tag == SVG_NS + "svg"
    frames = []
    for g in root.iter(SVG_NS + "g"):
        classes = g.get("class", "").split()
        if "f" not in classes:
            continue
        title = g.find(SVG_NS + "title").text
        name, info = title.rsplit("\n", 1)
        value = float(info.split()[0])
        rect = g.find(SVG_NS + "rect")
        text = g.find(SVG_NS + "text")
        frames.append((classes[1], name, value, float(rect.get("x")), float(rect.get("y")),
                       float(rect.get("width")), rect.get("fill"),
                       text.text if text is not None else None))
    return out, frames


def test_svg_widths_kinds_and_names(tmp_path):
    _, frames = draw(tmp_path, PROFILE, "time/ms")
    by_name = {f[1]: f for f in frames}
    assert len(frames) == 8
    # one pixel width per ms everywhere (widths proportional to time/ms)
    ratios = [f[5] / f[2] for f in frames]
    assert max(ratios) - min(ratios) < 1e-3 * max(ratios)
    assert by_name["ROOT"][2] == pytest.approx(10.0)
    assert by_name["fwd"][2] == pytest.approx(8.0)
    assert by_name["ROOT"][5] == pytest.approx(1180.0, abs=0.01)
    kinds = {f[1]: f[0] for f in frames}
    assert kinds["fwd"] == kinds["bwd"] == kinds["ROOT"] == "scope"
    assert kinds["matmul <fp16> & co"] == kinds["tiny"] == kinds[LONG] == "kernel"
    assert kinds["prof.py:42@step"] == "line"
    # colour by kind: one hue per kind, lightness varied by name
    hues = {"scope": 210, "kernel": 28, "line": 135, "intra": 275}
    for kind, name, *_rest, fill, _text in frames:
        rgb = [int(fill[k:k + 2], 16) / 255 for k in (1, 3, 5)]
        assert abs(colorsys.rgb_to_hls(*rgb)[0] * 360 - hues[kind]) < 3, (name, fill)
    # children lie inside their parent, one row below, in the tree's order
    fwd, mm, lng = by_name["fwd"], by_name["matmul <fp16> & co"], by_name[LONG]
    assert lng[3] == pytest.approx(fwd[3]) and mm[3] == pytest.approx(lng[3] + lng[5])
    assert mm[3] + mm[5] == pytest.approx(fwd[3] + fwd[5])
    assert mm[4] == lng[4] == fwd[4] + 18
    # a name that does not fit is cut; the <title> keeps it whole
    assert by_name[LONG][7].endswith("\u2026") and LONG.startswith(by_name[LONG][7][:-1])
    assert by_name["matmul <fp16> & co"][7] == "matmul <fp16> & co"


def test_svg_intra_kernel_scopes_and_threshold(tmp_path):
    _, frames = draw(tmp_path, RESULTS / "triton_instrumentation.hatchet", "normalized_cycles")
    kinds = {f[1]: f[0] for f in frames}
    assert kinds["looped"] == kinds["vadd"] == "kernel"  # Proton gives kernels no metrics
    assert kinds["loop"] == kinds["step"] == kinds["load"] == "intra"
    by_name = {f[1]: f for f in frames}
    # a scope is as wide as its value, its nested scope inside it
    assert by_name["step"][5] < by_name["loop"][5] == pytest.approx(by_name["looped"][5])
    _, some = draw(tmp_path, RESULTS / "triton_instrumentation.hatchet", "normalized_cycles",
                   "-d", "2")
    assert {f[1] for f in some} == {"ROOT", "looped", "vadd"}


def test_svg_source_lines(tmp_path):
    _, frames = draw(tmp_path, DATA / "proton-3.6" / "pcsampling_lines.hatchet",
                     "num_samples")
    lines = [f for f in frames if f[0] == "line"]
    assert lines and all(re.search(r":\d+@", f[1]) for f in lines)
    assert {f[1] for f in frames if f[0] == "kernel"} == {"chase_kernel", "matmul_kernel"}


def test_svg_rejects_diff_and_unwritable_path(tmp_path):
    src = tmp_path / "p.hatchet"
    src.write_text(json.dumps(PROFILE))
    r = subprocess.run([viewer(), "--svg", str(tmp_path / "x.svg"), "-diff", str(src), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--diff-profile" in r.stderr
    r = subprocess.run([viewer(), "--svg", str(tmp_path / "no" / "x.svg"), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "cannot write" in r.stderr and "no/x.svg" in r.stderr


def read_png(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB/RGBA PNG."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, info = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            info = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype = info[:4]
    assert depth == 8 and ctype in (2, 6), info
    bpp = 3 if ctype == 2 else 4
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (w * bpp + 1)], bytearray(raw[y * (w * bpp + 1) + 1:(y + 1) * (w * bpp + 1)])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("no Chromium: `scripts/deps.sh test` installs it (apt-get install chromium); "
                "the screenshot test needs it")


def test_svg_screenshot_in_chromium(tmp_path):
    browser = chromium()
    svg, frames = draw(tmp_path, PROFILE, "time/ms")
    height = int(float(ElementTree.parse(svg).getroot().get("height")))
    png = tmp_path / "shot.png"
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--window-size=1200,{height}",
                        f"--screenshot={png}", svg.as_uri()],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, HOME=str(tmp_path)))
    assert png.exists(), r.stderr[-2000:]
    w, h, rows = read_png(png)
    assert (w, h) == (1200, height)
    for kind, name, _, x, y, width, fill, _ in frames:
        # a pixel inside the frame, away from the text: the frame's colour
        px, py = int(x + width - 2), int(y + 2)
        want = tuple(int(fill[k:k + 2], 16) for k in (1, 3, 5))
        got = rows[py][px]
        assert max(abs(a - b) for a, b in zip(got, want)) <= 8, (name, got, want)
