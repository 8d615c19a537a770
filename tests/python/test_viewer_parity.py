"""Parity of cproton-viewer with Proton's viewer (triton.profiler.viewer).

Runs both on the Proton 3.6 reference profiles and on the golden inputs and
compares every number printed (same tree order, same values at the printed
precision). The binary is the one the package installed (the wheel's
cproton-viewer, beside sys.executable); the reference profiles are in
tests/data/. Skips only when triton/hatchet/pandas are missing.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "tests" / "data" / "proton-3.6"
INPUTS = ROOT / "tests" / "golden" / "viewer" / "inputs"
VIEWER = Path(sys.executable).parent / "cproton-viewer"

pytest.importorskip("pandas")
pytest.importorskip("hatchet")
pytest.importorskip("triton.profiler.viewer")
assert VIEWER.exists(), f"{VIEWER} missing: the package must install cproton-viewer"
assert REF.is_dir(), f"{REF} missing"

REF_CASES = [
    ("proton_python.hatchet", ["-m", "time/ms"]),
    ("proton_hook.hatchet", ["-m", "time/%,avg_time/us", "--print-sorted"]),
    ("instrumentation_tree.hatchet", ["-m", "cycles,normalized_cycles"]),
    ("pcsampling.hatchet", ["-m", "num_samples,stalled_barrier/%,stalled_wait"]),
    ("pcsampling.hatchet", ["-l"]),
    ("proton_hook.hatchet", ["-m", "time/us,count", "-diff", "proton_shadow.hatchet"]),
    ("proton_python.hatchet", ["-m", "time/us", "-diff", "proton_hook.hatchet"]),
    ("proton_hook.hatchet", ["-m", "time/ns", "-t", "20000"]),
    ("proton_hook.hatchet", ["-m", "time", "-t", "20000"]),
    ("proton_hook.hatchet", ["-m", "time/ns", "-i", "it1"]),
    ("proton_hook.hatchet", ["-m", "time", "-e", "it"]),
    ("proton_python.hatchet", ["-m", "time/s", "-f", "file_function", "-d", "4"]),
    ("proton_python.hatchet", ["-m", "avg_time/ns", "-f", "function_line"]),
]
INPUT_CASES = [
    ("known.hatchet", ["-m", "util,time/ms"]),
    ("known.hatchet", ["-m", "byte/s,gbyte/s,tbyte/s"]),
    ("known.hatchet", ["-m", "cpu_time/ms,avg_cpu_time/us"]),
    ("known.hatchet", ["-m", "tflop16/s", "-t", "100"]),
    ("known.hatchet", ["-m", "flops16/%", "--print-sorted"]),
    ("known.hatchet", ["-m", "util,time/ms", "-diff", "known_other.hatchet"]),
    ("hip.hatchet", ["-m", "util,tflop16/s,gflop32/s"]),
    ("cuda_archs.hatchet", ["-m", "util,tflop16/s,gflop32/s"]),
]

NUM = re.compile(r"-?(?:\d+\.\d+(?:e[+-]\d+)?|\d+e[+-]\d+|\d+|nan|inf)")


def run(cmd, cwd):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout


def numbers(text):
    return [NUM.findall(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("file,args", [(REF / f, a) for f, a in REF_CASES] +
                         [(INPUTS / f, a) for f, a in INPUT_CASES])
def test_same_output(file, args):
    assert file.exists(), f"{file} missing"
    rc_py, out_py = run([sys.executable, "-m", "triton.profiler.viewer", *args, file.name],
                        file.parent)
    rc_c, out_c = run([str(VIEWER), "--no-color", *args, file.name], file.parent)
    assert rc_py == 0 and rc_c == 0
    if "--print-sorted" in args:  # pandas' sort is not stable: compare as sets
        head_py, _, tail_py = out_py.partition("Sorted kernels")
        head_c, _, tail_c = out_c.partition("Sorted kernels")
        assert numbers(head_py) == numbers(head_c)
        assert sorted(tail_py.splitlines()) == sorted(tail_c.splitlines())
    else:
        assert numbers(out_py) == numbers(out_c)
        assert out_py == out_c


def test_unknown_metric_fails_in_both():
    f = REF / "proton_hook.hatchet"
    assert f.exists(), f"{f} missing"
    rc_py, _ = run([sys.executable, "-m", "triton.profiler.viewer", "-m", "nope", f.name], f.parent)
    rc_c, _ = run([str(VIEWER), "-m", "nope", f.name], f.parent)
    assert rc_py != 0 and rc_c != 0
