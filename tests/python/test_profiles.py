"""Profiles written by scripts, compared tree by tree with the tree Proton
writes for the same script (its semantics written down: Proton cannot start
without a GPU here). Kernels come from the library's fake backend."""
import json
import os
import textwrap

import pytest

import cproton as proton
from cproton import _cproton as C

from conftest import load_tree, run_python

K = {"count": 1, "device_id": "0", "device_type": "CUDA", "time (ns)": 1000}


def write(tmp_path, body):
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(body))
    return path


def test_proton_script_unchanged(tmp_path):
    # A Proton example (scopes, decorator, cpu_timed_scope, activate/deactivate),
    # with only the import changed.
    script = write(tmp_path, """
        import cproton as proton

        @proton.scope("decorated", {"calls": 1})
        def work(i):
            with proton.scope(f"it{i % 2}", {"bytes": 100}):
                pass

        session = proton.start("example", context="shadow")
        with proton.scope("fwd", {"flops": 10.0}):
            for i in range(4):
                work(i)
        proton.deactivate(session)
        with proton.scope("ignored_metrics_when_inactive"):
            pass
        proton.activate(session)
        with proton.cpu_timed_scope("timed"):
            pass
        proton.enter_scope("manual", metrics={"m": 1})
        proton.exit_scope(metrics={"late": 2})
        proton.finalize()
    """)
    r = run_python([str(script)], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    tree = load_tree(tmp_path / "example.hatchet")
    root = tree["ROOT"] if "ROOT" in tree else tree
    assert set(root) - {"@"} >= {"fwd", "timed", "manual"}
    fwd = root["fwd"]
    assert fwd["@"] == {"flops": 10.0}
    assert fwd["decorated"]["@"] == {"calls": 4}
    assert fwd["decorated"]["it0"]["@"] == {"bytes": 200}
    assert fwd["decorated"]["it1"]["@"] == {"bytes": 200}
    assert root["manual"]["@"] == {"m": 1, "late": 2}
    timed = root["timed"]["@"]
    assert list(timed) in (["cpu_time (ns)"], ["cpu_time (ns)(exc)"]) and list(timed.values())[0] >= 0


def test_profile_decorator_deactivates(tmp_path):
    script = write(tmp_path, """
        import cproton as proton

        @proton.profile(name="deco")
        def main():
            with proton.scope("inside"):
                pass

        main()
        with proton.scope("after"):
            pass
        proton.finalize()
    """)
    r = run_python([str(script)], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    tree = load_tree(tmp_path / "deco.hatchet")
    assert "inside" in tree and "after" not in tree


def test_kernels_under_scopes_states_and_ops():
    sid = proton.start("k", backend="fake")
    C._fake_add_device(0)
    C._fake_launch("top")
    with proton.scope("fwd"):
        C._fake_launch("a")
        C._fake_launch("a")
        with proton.state("st"):
            C._fake_launch("b")
        C.enter_op("op", {"flops16": 2.0})
        C._fake_launch("hidden_by_op")
        C.exit_op()
    proton.finalize(sid)
    tree = load_tree("k.hatchet")
    assert tree["top"]["@"] == K
    assert tree["fwd"]["a"]["@"] == dict(K, count=2, **{"time (ns)": 2000})
    assert tree["fwd"]["st"]["b"]["@"] == K
    assert tree["fwd"]["op"]["@"] == dict(K, flops16=2.0)
    assert "hidden_by_op" not in json.dumps(tree)
    with open("k.hatchet") as f:
        assert json.load(f)[1]["CUDA"]["0"]["arch"] == "90"


def test_deactivate_stops_kernels_and_two_sessions():
    a = proton.start("a", backend="fake")
    b = proton.start("b", backend="fake")
    C._fake_launch("both")
    proton.deactivate(a)
    C._fake_launch("only_b")
    proton.activate(a)
    C._fake_launch("both")
    proton.finalize()
    ta, tb = load_tree("a.hatchet"), load_tree("b.hatchet")
    assert ta["both"]["@"]["count"] == 2 and "only_b" not in ta
    assert tb["both"]["@"]["count"] == 2 and tb["only_b"]["@"]["count"] == 1


def test_trace_output(tmp_path, proton36):  # Proton 3.6's chrome_trace
    sid = proton.start("tr", data="trace", backend="fake")
    with proton.scope("s"):
        C._fake_launch("k")
    proton.finalize(sid)
    with open("tr.chrome_trace") as f:
        trace = json.load(f)
    # Proton's layout: kernel events only, each with its calling context
    assert [e["name"] for e in trace["traceEvents"]] == ["k"]
    assert trace["traceEvents"][0]["args"]["call_stack"] == ["ROOT", "s", "k"]


def test_trace_output_timeline(tmp_path):
    sid = proton.start("tl", data="trace", backend="fake")
    with proton.scope("s"):
        C._fake_launch("k")
    proton.finalize(sid, output_format="chrome_timeline")
    with open("tl.chrome_trace") as f:
        trace = json.load(f)
    names = {e.get("name") for e in trace["traceEvents"]}
    assert {"s", "k", "thread_name"} <= names


def test_finalize_format_and_default_name():
    sid = proton.start()
    with proton.scope("x"):
        pass
    proton.finalize(sid, "hatchet")
    assert os.path.exists("proton.hatchet")
    with pytest.raises(RuntimeError):  # Proton's "Unknown output format"
        sid = proton.start("f")
        proton.finalize(sid, "nope")


def test_data_get_matches_file():
    sid = proton.start("live", backend="fake")
    with proton.scope("x", {"v": 1}):
        C._fake_launch("k")
    live = proton.data.get(sid)
    proton.finalize(sid)
    with open("live.hatchet") as f:
        assert json.load(f) == live


def test_finalize_within_scope_starts_next_session_at_depth_zero(tmp_path):
    """A scope open at the last finalize ends with the session: its exit,
    with profiling off, does nothing, and the next session starts at depth 0
    (Proton's contexts live in the session; its 3.9 test_finalize_within_scope)."""
    sid = proton.start(str(tmp_path / "a"))
    with proton.scope("test0"):
        assert proton.context.depth(sid) == 1
        proton.finalize()
    assert (tmp_path / "a.hatchet").exists()
    sid = proton.start(str(tmp_path / "b"))
    assert proton.context.depth(sid) == 0
    with proton.scope("x"):
        assert proton.context.depth(sid) == 1
    proton.finalize()
    tree = load_tree(tmp_path / "b.hatchet")
    assert list(tree) == ["x"], tree
