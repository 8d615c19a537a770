"""Profiles cproton writes load in Hatchet (GraphFrame.from_literal) and in
Proton's viewer module (triton.profiler.viewer)."""
import json

import pytest

import cproton as proton
from cproton import _cproton as C

ht = pytest.importorskip("hatchet")
viewer = pytest.importorskip("triton.profiler.viewer")


def make_profile(name="v"):
    sid = proton.start(name, backend="fake", hook=None)
    C._fake_add_device(0)
    with proton.scope("fwd", {"flops16": 1e9}):
        for _ in range(3):
            C._fake_launch("matmul_kernel", 2000)
        with proton.scope("inner", {"bytes": 1e6}):
            C._fake_launch("add_kernel", 500)
    proton.finalize(sid)
    return f"{name}.hatchet"


def test_hatchet_from_literal():
    path = make_profile()
    with open(path) as f:
        literal = json.load(f)
    gf = ht.GraphFrame.from_literal([literal[0]])
    names = set(gf.dataframe["name"])
    assert {"ROOT", "fwd", "inner", "matmul_kernel", "add_kernel"} <= names
    row = gf.dataframe[gf.dataframe["name"] == "matmul_kernel"].iloc[0]
    assert row["count"] == 3 and row["time (ns)"] == 6000


def test_proton_viewer_read_and_parse():
    path = make_profile()
    gf, inc, exc, device_info = viewer.read(path)
    assert "time (ns)" in inc + exc
    assert device_info["CUDA"]["0"]["arch"] == "90"
    gf, metrics = viewer.parse(["time/ns"], path)
    assert metrics
    df = gf.dataframe
    assert df[df["name"] == "ROOT"].iloc[0][metrics[0]] == pytest.approx(6500)
    gf, metrics = viewer.parse(["tflop16/s"], path)
    assert metrics


def test_proton_viewer_print_tree(capsys):
    path = make_profile()
    gf, metrics = viewer.parse(["time/ms"], path)
    viewer.print_tree(gf, metrics)
    out = capsys.readouterr().out
    assert "matmul_kernel" in out and "fwd" in out


def test_cpu_only_profile_loads_in_hatchet():
    sid = proton.start("cpu")
    with proton.scope("a", {"n": 1}):
        pass
    proton.finalize(sid)
    with open("cpu.hatchet") as f:
        literal = json.load(f)
    gf = ht.GraphFrame.from_literal([literal[0]])
    assert "a" in set(gf.dataframe["name"])
