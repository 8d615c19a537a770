"""bench/realworld.py's harness runs end to end without a GPU (its `cpu`
workload: Python scopes) and its summary parses. No timing is checked: the
numbers are the GPU benchmark's business (docs/benchmarks.md, issue 15)."""
import json
import math
from pathlib import Path

from conftest import run_python

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_alternating_blocks_on_the_cpu_workload(tmp_path):
    out = tmp_path / "rw"
    r = run_python([str(BENCH / "realworld.py"), "--workloads", "cpu", "--variants",
                    "none,cproton", "--rounds", "2", "--blocks", "2", "--steps", "50",
                    "--warmup", "5", "--out", str(out)], cwd=tmp_path)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "== cpu: 50 steps per loop" in r.stdout
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()
            if line.split()[:1] in (["none"], ["cproton"])}
    assert set(rows) == {"none", "cproton"}
    summary = json.loads((out / "realworld.json").read_text())["cpu"]
    assert summary["failed"] == []
    for v in ("none", "cproton"):
        st = summary["variants"][v]
        assert st["blocks"] == 4 and len(st["per_process"]) == 2, st
        assert math.isfinite(st["x"]) and st["x"] > 0 and not st["errors"], st
    # every profiled block of cproton wrote a profile; each child kept its last
    assert summary["variants"]["cproton"]["profile_bytes"] > 0
    assert len(list((out / "profiles").glob("cpu_cproton_*_b1.hatchet"))) == 2
    runs = json.loads((out / "runs.json").read_text())["cpu"]
    assert [b["base_first"] for b in runs["none"][0]["blocks"]] == [True, False]
