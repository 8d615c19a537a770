"""hatchet_msgpack byte for byte against Proton 3.9: the same scripted
profile (tests/python/proton39_scenario.py) recorded by Proton 3.9's own
libproton (in .venv-triton-3.9.0, made by scripts/venv-triton.sh 3.9.0; it runs
without a GPU on the instrumentation backend) and by cproton must give
identical bytes, and the msgpack package must decode them alike."""
import os
import subprocess
import sys

import msgpack
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCENARIO = os.path.join(HERE, "proton39_scenario.py")
VENV = os.environ.get("CPROTON_PROTON39_VENV", os.path.join(ROOT, ".venv-triton-3.9.0"))
PY39 = os.path.join(VENV, "bin", "python")


def record(python, which, out, env=None):
    r = subprocess.run([python, SCENARIO, which, str(out)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


@pytest.mark.skipif(not os.path.exists(PY39), reason="no .venv-triton-3.9.0 (scripts/venv-triton.sh 3.9.0)")
def test_same_bytes_as_proton_39(tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    theirs = record(PY39, "proton39", tmp_path / "proton39.hatchet_msgpack")
    ours = record(sys.executable, "cproton", tmp_path / "cproton.hatchet_msgpack", env)
    assert msgpack.loads(ours, raw=False, strict_map_key=False) == \
        msgpack.loads(theirs, raw=False, strict_map_key=False)
    assert ours == theirs
