"""context="python": frames are "file:line@function", outermost first,
collected in C, cached, correct when the launching thread released the GIL,
and Triton's launch machinery (and cproton's own frames) are dropped."""
import os
import threading

import cproton as proton
from cproton import _cproton as C

from conftest import load_tree

HERE = os.path.abspath(__file__)


def frames_here():
    return proton.context.python_frames()


def test_frame_format_and_order():
    frames = frames_here()
    assert frames[-1].startswith(f"{HERE}:") and frames[-1].endswith("@frames_here")
    assert frames[-2].endswith("@test_frame_format_and_order")
    line = int(frames[-1].split(":")[-1].split("@")[0])
    with open(HERE) as f:
        assert "python_frames()" in f.read().splitlines()[line - 1]
    assert not any("/cproton/" in f and "site-packages" not in f and "tests" not in f for f in frames)


def launch_in_helper(release_gil):
    C._fake_launch("k", release_gil=release_gil)


def test_kernels_under_python_frames_with_and_without_gil():
    sid = proton.start("py", context="python", backend="fake")
    for release in (True, False, True):
        launch_in_helper(release)
    proton.finalize(sid)
    tree = load_tree("py.hatchet")
    node = tree
    path = []
    while "k" not in node:
        (name,) = [k for k in node if k != "@" and k.startswith(HERE)] or [next(k for k in node if k != "@")]
        path.append(name)
        node = node[name]
    assert node["k"]["@"]["count"] == 3  # one node: with and without the GIL agree
    assert path[-1].endswith("@launch_in_helper")
    assert path[-2].endswith("@test_kernels_under_python_frames_with_and_without_gil")


def test_threads_have_own_frames():
    sid = proton.start("py", context="python", backend="fake")

    def thread_main():
        launch_in_helper(True)

    t = threading.Thread(target=thread_main)
    t.start()
    t.join()
    proton.finalize(sid)
    text = repr(load_tree("py.hatchet"))
    assert "@thread_main" in text and "threading.py" in text


def test_skip_prefixes(tmp_path):
    helper = tmp_path / "fake_triton_runtime.py"
    helper.write_text("def run(fn):\n    return fn()\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("fake_triton_runtime", helper)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert any("fake_triton_runtime" in f for f in mod.run(frames_here))
    default = proton.context.default_python_skip()
    try:
        proton.context.set_python_skip(default + [str(tmp_path)])
        frames = mod.run(frames_here)
        assert not any("fake_triton_runtime" in f for f in frames)
        assert frames[-1].endswith("@frames_here")
    finally:
        proton.context.set_python_skip(default)


def test_default_skip_covers_triton_runtime():
    skip = proton.context.default_python_skip()
    assert any(p.rstrip(os.sep).endswith(os.path.join("triton", "runtime")) for p in skip)
    assert any(p.rstrip(os.sep).endswith("cproton") for p in skip)


def test_scope_metrics_in_python_context():
    sid = proton.start("py", context="python")
    for _ in range(2):
        with proton.scope("ignored_name", {"n": 1}):
            pass
    proton.finalize(sid)
    assert "'n': 2" in repr(load_tree("py.hatchet"))
