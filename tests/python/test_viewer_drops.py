"""cproton-viewer says when an instrumentation profile lost records: the
warning names the totals and the metrics that show where (per kernel
`dropped_records`, per scope `unpaired_records`); profiles without drops
print no warning."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VIEWER = Path(os.environ.get("CPROTON_BUILD_DIR", ROOT / "build")) / "tools" / "viewer" / "cproton-viewer"
if not VIEWER.exists():
    pytest.skip(f"{VIEWER} not built", allow_module_level=True)


def node(name, metrics, children=()):
    return {"frame": {"name": name, "type": "function"}, "metrics": metrics, "children": list(children)}


def profile(tmp_path, kernel_metrics, scope_metrics):
    scope = node("dot", {"cycles": 500, "count": 3, **scope_metrics})
    tree = [node("ROOT", {}, [node("matmul", kernel_metrics, [scope])]),
            {}]
    path = tmp_path / "p.hatchet"
    path.write_text(json.dumps(tree))
    return path


def view(path, metric):
    p = subprocess.run([str(VIEWER), "--no-color", "-m", metric, str(path)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_drops_are_reported(tmp_path):
    path = profile(tmp_path, {"dropped_records": 120}, {"unpaired_records": 4})
    out = view(path, "cycles")
    assert "Warning: 120 intra-kernel records were overwritten by full buffers and 4 left unpaired" in out
    assert "120.000 matmul" in view(path, "dropped_records")


def test_no_drops_no_warning(tmp_path):
    assert "Warning" not in view(profile(tmp_path, {}, {}), "cycles")
