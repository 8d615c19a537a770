"""scripts/gen_ptx_fixtures.py, the generator of tests/data/ptx/, still makes
what the PTX pass is tested on: three Triton kernels compiled for sm_90
without a GPU, each carrying its markers, each lowered by cproton-instrument
and assembled by Triton's own ptxas."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def ptxas():
    """Triton's own ptxas (its wheel carries one)."""
    from triton.backends.nvidia.compiler import get_ptxas
    p = get_ptxas(90)
    return p.path if hasattr(p, "path") else p[0]


def test_generator_makes_instrumentable_fixtures(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_ptx_fixtures.py"), str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    meta = json.loads((tmp_path / "fixtures.json").read_text())
    committed = json.loads((ROOT / "tests" / "data" / "ptx" / "fixtures.json").read_text())
    assert set(meta) == set(committed)
    for name, m in meta.items():
        src = tmp_path / f"{name}.ptx"
        text = src.read_text()
        assert f".entry {m['kernel']}(" in text
        assert text.count("// @cproton proton.record start") == text.count("// @cproton proton.record end") > 0
        out = tmp_path / f"{name}.instr.ptx"
        r = subprocess.run([str(BIN / "cproton-instrument"), str(src), "-o", str(out), "-q",
                            "--num-warps", str(m["num_warps"]), "--existing-shared", str(m["shared"])],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "%cpr_buf" in out.read_text()  # lowered: the prologue and records are there
        r = subprocess.run([ptxas(), "-arch=sm_90a", str(out), "-o", os.devnull],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
