"""The misuse suite of the Python package: what a careless or hostile user
does -- no Triton installed, bad formats, NUL bytes, NaN metrics, unbalanced
states, bad modes, wrong types, unknown ids, wrong order, huge values and
racing threads. Every case must end in the documented outcome (a clear
exception or a written profile) and never crash or lose the profile.
docs/guarantees.md lists the guarantees and the suite's counts."""
import json
import math
import os
import subprocess
import sys
import textwrap
import threading

import pytest

import cproton as proton
from cproton import _cproton

# Makes `import triton` fail in a subprocess, as on a machine without it.
NO_TRITON = textwrap.dedent("""
    import importlib.abc, sys
    class _NoTriton(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "triton" or name.startswith("triton."):
                raise ModuleNotFoundError(f"No module named '{name}'", name=name)
            return None
    sys.meta_path.insert(0, _NoTriton())
    for m in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        del sys.modules[m]
""")


def run_without_triton(tmp_path, body):
    code = NO_TRITON + textwrap.dedent(body)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r


def load(path):
    with open(path) as f:
        return json.load(f)


# ---- 1. no Triton ------------------------------------------------------------


def test_api_writes_profile_without_triton(tmp_path):
    run_without_triton(tmp_path, """
        import cproton as proton
        try:
            import triton
        except ModuleNotFoundError:
            pass
        else:
            raise SystemExit("the blocker let triton in")
        sid = proton.start("plain")
        with proton.scope("work", {"flops": 3}):
            pass
        proton.deactivate(sid)
        proton.activate(sid)
        proton.finalize()
    """)
    tree = load(tmp_path / "plain.hatchet")
    assert [c["frame"]["name"] for c in tree[0]["children"]] == ["work"]


def test_command_writes_profile_without_triton(tmp_path):
    (tmp_path / "script.py").write_text("import cproton as proton\nwith proton.scope('s'):\n    pass\n")
    run_without_triton(tmp_path, """
        import runpy, sys
        sys.argv = ["cproton", "-n", "cmd", "script.py"]
        try:
            runpy.run_module("cproton", run_name="__main__")
        except SystemExit as e:
            assert not e.code, e.code
    """)
    tree = load(tmp_path / "cmd.hatchet")
    assert [c["frame"]["name"] for c in tree[0]["children"]] == ["s"]


# ---- 2. a bad format keeps the session ------------------------------------------


def test_bad_format_keeps_session(tmp_path):
    sid = proton.start("keep")
    with proton.scope("kept"):
        pass
    with pytest.raises(RuntimeError, match="unknown output format 'bogus'"):
        proton.finalize(sid, output_format="bogus")
    assert _cproton.session_count() == 1
    with pytest.raises(RuntimeError, match="bogus"):
        proton.finalize(None, output_format="bogus")
    assert _cproton.session_count() == 1
    proton.finalize(sid)
    assert "kept" in [c["frame"]["name"] for c in load("keep.hatchet")[0]["children"]]


# ---- 12. names, NaN, states, modes ----------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda: proton.scope("a\0b").__enter__(),
    lambda: proton.enter_scope("a\0b"),
    lambda: proton.enter_state("a\0b"),
    lambda: proton.start("a\0b"),
    lambda: proton.scope("ok", {"m\0x": 1}).__enter__(),
])
def test_nul_in_names_raises(call):
    proton.start("nul")
    with pytest.raises(ValueError, match="null character"):
        call()
    assert _cproton.depth() == 0


def test_nan_and_inf_metrics_are_written_as_null(tmp_path):
    """Proton 3.6 writes its profile with nlohmann::json, which writes NaN
    and +-inf as null; cproton does the same (Python's json would write the
    non-JSON tokens NaN / Infinity, which strict readers refuse)."""
    sid = proton.start("nan")
    with proton.scope("s", {"a": math.nan, "b": math.inf, "c": -math.inf, "d": 1.5}):
        pass
    proton.finalize(sid)
    text = open("nan.hatchet").read()
    assert "NaN" not in text and "Infinity" not in text
    node = load("nan.hatchet")[0]["children"][0]
    assert node["metrics"]["a"] is None and node["metrics"]["b"] is None
    assert node["metrics"]["c"] is None and node["metrics"]["d"] == 1.5


def test_exit_state_without_enter_raises_like_c():
    proton.start("st")
    with pytest.raises(ValueError, match="exit_state"):
        proton.exit_state()


@pytest.mark.parametrize("backend,mode,match", [
    (None, "pcsampling:interval=abc", "interval must be an integer"),
    ("cupti", "pcsampling:interval=abc", "interval must be an integer"),
    ("instrumentation", "default:buffer_size=abc", "buffer_size"),
    ("instrumentation", ":", "names no mode"),
    ("instrumentation", "::::", "names no mode"),
    ("none", "pcsampling:interval=abc", "interval must be an integer"),
    ("none", "sampling", "mode"),
])
def test_bad_modes_are_refused_without_gpu(backend, mode, match):
    with pytest.raises(ValueError, match=match):
        proton.start("m", backend=backend, mode=mode)
    assert _cproton.session_count() == 0


def test_second_session_mode_is_validated():
    proton.start("first", backend="none")
    with pytest.raises(ValueError, match="interval must be an integer"):
        proton.start("second", backend="none", mode="pcsampling:interval=abc")
    with pytest.raises(RuntimeError, match="different mode"):
        proton.start("third", backend="none", mode="pcsampling")
    assert _cproton.session_count() == 1


# ---- a table of further misuse: each case raises the named exception -------------------

CASES = [
    ("activate unknown", lambda s: proton.activate(99), RuntimeError),
    ("deactivate negative", lambda s: proton.deactivate(-5), RuntimeError),
    ("activate bool", lambda s: proton.activate(True), TypeError),
    ("finalize str id", lambda s: proton.finalize("0"), TypeError),
    ("format not str", lambda s: proton.finalize(s, output_format=3), TypeError),
    ("exit scope empty", lambda s: proton.exit_scope(), ValueError),
    ("exit wrong name", lambda s: (proton.enter_scope("a"), proton.exit_scope("b")), ValueError),
    ("scope name int", lambda s: proton.scope(3), TypeError),
    ("scope name None", lambda s: proton.enter_scope(None), TypeError),
    ("empty scope name", lambda s: proton.enter_scope(""), ValueError),
    ("metrics not dict", lambda s: proton.scope("a", [1]).__enter__(), TypeError),
    ("metric key int", lambda s: proton.scope("a", {1: 2}).__enter__(), TypeError),
    ("metric value dict", lambda s: proton.scope("a", {"m": {"x": 1}}).__enter__(), TypeError),
    ("metric value list of str", lambda s: proton.scope("a", {"m": ["x"]}).__enter__(), TypeError),
    ("metric int > 2^63", lambda s: proton.scope("a", {"m": 2**64}).__enter__(), ValueError),
    ("reserved metric", lambda s: proton.scope("a", {"count": 1}).__enter__(), ValueError),
    ("metric changes type", lambda s: (proton.scope("a", {"m": 1}).__enter__(),
                                       proton.exit_scope(),
                                       proton.scope("a", {"m": 1.5}).__enter__()), RuntimeError),
    ("state name int", lambda s: proton.enter_state(3), TypeError),
    ("unknown data", lambda s: proton.start("x", data="graph"), RuntimeError),
    ("unknown context", lambda s: proton.start("x", context="frames"), RuntimeError),
    ("unknown backend", lambda s: proton.start("x", backend="rocm"), RuntimeError),
    ("name too long", lambda s: proton.start("n" * 5000), ValueError),
    ("scope name too long", lambda s: proton.enter_scope("n" * 70000), ValueError),
    ("nesting over 1024", lambda s: [proton.enter_scope(f"d{i}") for i in range(1100)], ValueError),
]


@pytest.mark.parametrize("what,call,exc", CASES, ids=[c[0] for c in CASES])
def test_misuse_table(what, call, exc, proton36):  # Proton 3.6's texts and rules
    sid = proton.start("table")
    with pytest.raises(exc):
        call(sid)
    # the session, if still there, still writes its profile
    while _cproton.depth():
        _cproton.exit_scope()
    if _cproton.session_count():
        proton.finalize()
        assert os.path.exists("table.hatchet")


def test_finalize_twice_warns():
    """Proton finalizes an unknown session silently; cproton does too but
    warns, so a wrong id is not lost."""
    sid = proton.start("twice")
    proton.finalize(sid)
    with pytest.warns(proton.CprotonWarning, match=f"Session has not been initialized: {sid}"):
        proton.finalize(sid)
    assert os.path.exists("twice.hatchet")


def test_integer_metric_saturates():
    sid = proton.start("sat")
    with proton.scope("s", {"big": 2**63 - 1}):
        pass
    with pytest.warns(proton.CprotonWarning, match="saturated at INT64_MAX"):
        with proton.scope("s", {"big": 2**63 - 1}):
            pass
        proton.finalize(sid)
    assert load("sat.hatchet")[0]["children"][0]["metrics"]["big"] == 2**63 - 1


def test_racing_threads_start_scope_finalize(tmp_path):
    """Threads race scopes and metrics while the main thread starts and
    finalizes sessions: every profile is written and readable."""
    stop = threading.Event()
    errors = []

    def worker(i):
        try:
            while not stop.is_set():
                with proton.scope(f"w{i}", {"n": 1}):
                    pass
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for k in range(20):
        sid = proton.start(f"race{k}")
        proton.finalize(sid)
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in range(20):
        assert isinstance(load(f"race{k}.hatchet"), list)
