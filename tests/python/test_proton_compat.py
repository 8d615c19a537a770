"""Behaviours that Proton 3.6's own test suite checks (test_api.py,
test_profile.py), tested here on the CPU with the fake backend: other
threads' kernels, session ids, error texts, string metrics, states under
scopes, the launch hook's ContextVars, Triton's knobs."""
import threading

import pytest

import cproton as proton
from cproton import _cproton as C
from cproton.hooks import launch as proton_launch

from conftest import load_tree

# Proton 3.6's suite's behaviours (test_proton_versions.py has 3.9's)
pytestmark = pytest.mark.usefixtures("proton36")


def _in_thread(fn):
    errors = []

    def run():
        try:
            fn()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert not errors, errors


# ---- other threads' kernels -------------------------------------------------


def test_thread_without_scopes_follows_main_live_stack():
    """A worker that enters no scope launches under the main thread's scope
    of the moment. Proton copies the main stack at the worker's first use,
    which would put the second launch under iter1 as well."""
    sid = proton.start("t", backend="fake")
    go, done = threading.Event(), threading.Event()

    def worker():
        C._fake_launch("first")  # first use: main is in iter1
        done.set()
        go.wait(10)
        C._fake_launch("second")  # main has moved on to iter2

    t = threading.Thread(target=worker)
    with proton.scope("iter1"):
        t.start()
        assert done.wait(10)
    with proton.scope("iter2"):
        go.set()
        t.join()
    proton.finalize(sid)
    tree = load_tree("t.hatchet")
    assert "first" in tree["iter1"] and "second" not in tree["iter1"]
    assert "second" in tree["iter2"]


def test_thread_with_own_scopes_uses_them():
    sid = proton.start("t", backend="fake")

    def worker():
        with proton.scope("mine"):
            C._fake_launch("k")
        assert proton.context.depth(sid) == 0

    with proton.scope("main_scope"):
        _in_thread(worker)
    proton.finalize(sid)
    tree = load_tree("t.hatchet")
    assert "k" in tree["mine"]
    assert "k" not in tree.get("main_scope", {})


def test_thread_without_scopes_and_main_at_root():
    sid = proton.start("t", backend="fake")
    _in_thread(lambda: C._fake_launch("k"))
    proton.finalize(sid)
    assert "k" in load_tree("t.hatchet")


def test_main_thread_is_the_starter():
    """The thread that starts a session is the one others follow."""

    def starter():
        proton.start("t", backend="fake")
        proton.enter_scope("starter_scope")
        C._fake_launch("own")
        go.set()
        stop.wait(10)
        proton.exit_scope()

    go, stop = threading.Event(), threading.Event()
    t = threading.Thread(target=starter)
    t.start()
    assert go.wait(10)
    C._fake_launch("from_main")  # this thread entered no scope
    stop.set()
    t.join()
    proton.finalize()
    tree = load_tree("t.hatchet")
    assert {"own", "from_main"} <= set(tree["starter_scope"])


# ---- sessions and errors ----------------------------------------------------


def test_session_ids_are_never_reused():
    a = proton.start("a")
    proton.finalize()
    b = proton.start("b")
    c = proton.start("c")
    assert b == a + 1 and c == b + 1
    proton.finalize(b)
    d = proton.start("d")
    assert d == c + 1
    with pytest.raises(RuntimeError, match=f"Session has not been initialized: {b}"):
        proton.activate(b)
    proton.finalize()


def test_type_mismatch_message_is_protons():
    sid = proton.start("m")
    proton.enter_scope("s", metrics={"a": 1.0})
    proton.exit_scope()
    with pytest.raises(RuntimeError, match=r"Metric value type mismatch for valueId 0 \(a\): "
                       r"current=double, new=uint64_t"):
        proton.enter_scope("s", metrics={"a": 1})
    assert proton.context.depth(sid) == 0


# ---- string metrics, states under scopes ------------------------------------


def test_string_metrics_replace():
    sid = proton.start("s")
    with proton.scope("p", {"a (pty)": "x"}):
        pass
    with proton.scope("p", {"a (pty)": "y"}):
        pass
    with proton.scope("e", {"b (exc)": "1"}):
        with proton.scope("inner", {"c": "v"}):
            pass
    proton.finalize(sid)
    tree = load_tree("s.hatchet")
    assert tree["p"]["@"] == {"a": "y"}
    assert tree["e"]["@"] == {"b": "1"}
    assert tree["e"]["inner"]["@"] == {"c": "v"}
    # Proton 3.6 writes a 0 on ROOT for every metric not marked (exc), kernels
    # or not, strings and properties included (docs/python.md, Metrics)
    assert tree["@"] == {"a": 0, "c": 0}


def test_scope_under_state_records_on_state_node():
    sid = proton.start("s", backend="fake")
    proton.enter_scope("outer")
    proton.enter_state("st")
    proton.enter_scope("inner", metrics={"a": 1.0})
    C._fake_launch("k_in")
    proton.exit_scope()
    proton.exit_state()
    C._fake_launch("k_out")
    proton.exit_scope()
    proton.finalize(sid)
    tree = load_tree("s.hatchet")
    assert tree["outer"]["inner"]["st"]["@"] == {"a": 1.0}
    assert "k_in" in tree["outer"]["inner"]["st"]
    assert "k_out" in tree["outer"]


# ---- launch hook ------------------------------------------------------------


class _Lazy:
    def __init__(self, data):
        self.data = data

    def get(self):
        return self.data


def test_launch_hook_sets_context_vars_per_thread():
    sid = proton.start("h", backend="fake", hook="triton")
    ids = []
    lock = threading.Lock()

    def launches(name):
        for _ in range(50):
            meta = _Lazy({"name": name, "flops": 1.0})
            proton_launch.LaunchHook.enter(meta)
            C._fake_launch("real")
            proton_launch.LaunchHook.exit(meta)
            assert proton_launch.op_name.get() == name
            with lock:
                ids.append(proton_launch.id.get())

    threads = [threading.Thread(target=launches, args=(n, )) for n in ("foo", "bar")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    proton.finalize(sid)
    assert len(ids) == 100 and len(set(ids)) == 100 and None not in ids
    tree = load_tree("h.hatchet")
    assert tree["foo"]["@"]["count"] == 50 and tree["bar"]["@"]["count"] == 50


# ---- knobs ------------------------------------------------------------------


def test_disable_env_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_PROTON_DISABLE", "1")
    assert proton.knobs.disabled()
    assert proton.start("off") is None
    proton.enter_scope("s")
    proton.exit_scope()
    proton.finalize()
    assert not (tmp_path / "off.hatchet").exists()


def test_disable_knob(monkeypatch, tmp_path):
    triton_knobs = pytest.importorskip("triton.knobs")
    monkeypatch.delenv("TRITON_PROTON_DISABLE", raising=False)
    monkeypatch.setattr(triton_knobs.proton, "disable", True)
    assert proton.start("off") is None
    monkeypatch.setattr(triton_knobs.proton, "disable", False)
    assert proton.start("on") is not None
    proton.finalize()
    assert not (tmp_path / "off.hatchet").exists() and (tmp_path / "on.hatchet").exists()


def test_knobs_exported_to_environment(monkeypatch):
    triton_knobs = pytest.importorskip("triton.knobs")
    for env, _ in proton.knobs.KNOBS.values():
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(triton_knobs.proton, "enable_nvtx", False)
    proton.knobs.export()
    import os
    assert os.environ["TRITON_ENABLE_NVTX"] in ("0", "false")  # Triton may propagate it itself
    assert "TRITON_CUPTI_LIB_PATH" not in os.environ, "Triton's default CUPTI is not forced"
    monkeypatch.setattr(triton_knobs.proton, "cupti_lib_dir", "/opt/my/cupti")
    proton.knobs.export()
    assert os.environ["TRITON_CUPTI_LIB_PATH"] == "/opt/my/cupti"


def test_knobs_without_triton_read_env(monkeypatch):
    monkeypatch.setattr(proton.knobs, "_triton_knobs", lambda: None)
    monkeypatch.setenv("TRITON_ENABLE_NVTX", "Off")
    assert proton.knobs.get("enable_nvtx") is False
    monkeypatch.setenv("TRITON_PROTON_DISABLE", "TRUE")
    assert proton.knobs.disabled()
    monkeypatch.delenv("TRITON_PROTON_DISABLE")
    assert not proton.knobs.disabled()


@pytest.mark.parametrize("version,names", [("3.6", "kernel"), ("3.8", "kernel"), ("3.9", "hook")])
def test_graph_kernel_names_follow_proton_version(monkeypatch, version, names):
    """Inside CUDA graphs Proton 3.9 names hooked kernels by the hook, 3.6 by
    the kernel (docs/cupti.md): export tells the C library which, unless
    CPROTON_GRAPH_KERNEL_NAMES is set already. The version is the one
    _compat decided (CPROTON_PROTON_VERSION at import)."""
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply(_compat.decide(version, None))
    try:
        _graph_names_case(monkeypatch, names)
    finally:
        _compat.apply(before)


def _graph_names_case(monkeypatch, names):
    import os
    monkeypatch.delenv("CPROTON_GRAPH_KERNEL_NAMES", raising=False)
    assert proton.knobs.graph_kernel_names() == names
    proton.knobs.export()
    assert os.environ["CPROTON_GRAPH_KERNEL_NAMES"] == names
    monkeypatch.setenv("CPROTON_GRAPH_KERNEL_NAMES", "hook")
    proton.knobs.export()
    assert os.environ["CPROTON_GRAPH_KERNEL_NAMES"] == "hook", "the user's choice stays"
