"""hatchet_msgpack byte for byte against Proton 3.9: the same scripted
profile (tests/python/proton39_scenario.py) recorded by Proton 3.9's own
libproton (a venv made by scripts/venv-triton.sh 3.9.0 in the cache folder of
scripts/cache.sh, or $CPROTON_PROTON39_VENV; it runs
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


def _venv39():
    """$CPROTON_PROTON39_VENV (scripts/test-python.sh sets it), else the cache
    folder's venv (scripts/cache.sh), else a clone's own .venv-triton-3.9.0
    (checkouts from before the cache folder)."""
    if os.environ.get("CPROTON_PROTON39_VENV"):
        return os.environ["CPROTON_PROTON39_VENV"]
    cache = os.environ.get("CPROTON_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "cproton")
    cached = os.path.join(cache, "venv-triton-3.9.0")
    return cached if os.path.exists(cached) else os.path.join(ROOT, ".venv-triton-3.9.0")


VENV = _venv39()
PY39 = os.path.join(VENV, "bin", "python")


def record(python, which, out, env=None):
    r = subprocess.run([python, SCENARIO, which, str(out)], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


@pytest.mark.skipif(not os.path.exists(PY39), reason=f"no Triton 3.9.0 venv at {VENV} (scripts/venv-triton.sh 3.9.0)")
def test_same_bytes_as_proton_39(tmp_path):
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    theirs = record(PY39, "proton39", tmp_path / "proton39.hatchet_msgpack")
    ours = record(sys.executable, "cproton", tmp_path / "cproton.hatchet_msgpack", env)
    assert msgpack.loads(ours, raw=False, strict_map_key=False) == \
        msgpack.loads(theirs, raw=False, strict_map_key=False)
    assert ours == theirs
