"""hook="triton": launch metadata becomes an op named after the kernel with
its numeric keys as metrics; include/exclude regexes select kernels. The
Triton launcher is simulated: Triton calls knobs.runtime.launch_enter_hook
with a LazyDict, launches (GIL released), then launch_exit_hook."""
import pytest

import cproton as proton
from cproton import _cproton as C

from conftest import load_tree

knobs = pytest.importorskip("triton.knobs")
from triton.compiler.compiler import LazyDict  # noqa: E402


def launch(name, meta_fn=None, args=None):
    lazy = LazyDict({"name": name, "function": 1234, "stream": 0})
    if meta_fn is not None:
        lazy.add(meta_fn, (None, None, args or {}))
    knobs.runtime.launch_enter_hook(lazy)
    C._fake_launch(name)
    knobs.runtime.launch_exit_hook(lazy)


def flops_meta(grid, metadata, args):
    return {"flops16": 2.0 * args["n"], "bytes": 3 * args["n"], "custom": 5, "label": "text", "flag": True}


def test_launch_metadata_metrics():
    sid = proton.start("h", backend="fake", hook="triton")
    with proton.scope("fwd"):
        for _ in range(2):
            launch("matmul_kernel", flops_meta, {"n": 10})
        launch("plain_kernel")
    proton.finalize(sid)
    t = load_tree("h.hatchet")
    m = t["fwd"]["matmul_kernel"]["@"]
    assert m["count"] == 2
    assert m["flops16"] == 40.0 and m["bytes"] == 60.0 and m["custom"] == 10.0
    assert "label" not in m and "flag" not in m and "function" not in m and "stream" not in m
    assert t["fwd"]["plain_kernel"]["@"]["count"] == 1
    assert not knobs.runtime.launch_enter_hook.calls  # unregistered at finalize


def test_metadata_kernels_under_metadata_state():
    def meta(grid, metadata, args):
        C._fake_launch("helper")  # e.g. a torch op inside launch_metadata
        return {"flops": 1.0}

    sid = proton.start("h", backend="fake", hook="triton")
    launch("k", meta)
    proton.finalize(sid)
    t = load_tree("h.hatchet")
    # Proton 3.9 (cproton._compat): under the state of the kernel, two frames
    metadata = t["__proton_launch_metadata"]["k"] if proton._compat.is_39() else t["__proton_launch_metadata"]
    assert "helper" in metadata
    assert t["k"]["@"]["flops"] == 1.0


@pytest.mark.parametrize("include,exclude,hooked", [
    ("^mat", None, {"matmul_kernel"}),
    (None, "soft", {"matmul_kernel", "add_kernel"}),
    ("kernel$", "^add", {"matmul_kernel", "softmax_kernel"}),
])
def test_include_exclude(include, exclude, hooked):
    proton.hooks.launch.set_filter(include=include, exclude=exclude)
    sid = proton.start("h", backend="fake", hook="triton")
    for name in ("matmul_kernel", "add_kernel", "softmax_kernel"):
        launch(name, lambda g, m, a: {"flops": 1.0})
    proton.finalize(sid)
    t = load_tree("h.hatchet")
    got = {k for k, v in t.items() if k != "@" and "flops" in v.get("@", {})}
    assert got == hooked
    assert all(t[k]["@"]["count"] == 1 for k in ("matmul_kernel", "add_kernel", "softmax_kernel"))


def test_hook_inactive_session_and_exceptions():
    sid = proton.start("h", backend="fake", hook="triton")
    proton.deactivate(sid)
    assert not knobs.runtime.launch_enter_hook.calls or True

    def bad(grid, metadata, args):
        raise RuntimeError("boom")

    proton.activate(sid)
    lazy = LazyDict({"name": "k", "function": 0, "stream": 0})
    lazy.add(bad, (None, None, {}))
    with pytest.raises(RuntimeError, match="boom"):
        knobs.runtime.launch_enter_hook(lazy)
    assert C.depth() == 0
    launch("after")
    proton.finalize(sid)
    assert "after" in load_tree("h.hatchet")


def test_chains_loop_in_c_with_every_hook():
    """While hooked, Triton's launch chains run their loop in C: other
    hooks added to them are still called, in order (exit: reversed), with
    the same argument; at finalize the chains get Triton's class back."""
    enter, exit_ = knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook
    triton_class = type(enter)
    seen = []
    mine_in = lambda md, **kw: seen.append(("in", md, kw))  # noqa: E731
    mine_out = lambda md, **kw: seen.append(("out", md, kw))  # noqa: E731
    sid = proton.start("h", backend="fake", hook="triton")
    assert type(enter) is not triton_class and isinstance(enter, triton_class)
    enter.add(mine_in)
    exit_.add(mine_out)
    try:
        lazy = LazyDict({"name": "k", "function": 0, "stream": 0})
        enter(lazy)
        C._fake_launch("k")
        exit_(lazy)
        assert seen == [("in", lazy, {}), ("out", lazy, {})]
        assert enter.calls[0] is not mine_in and exit_.calls[-1] is mine_out
    finally:
        enter.remove(mine_in)
        exit_.remove(mine_out)
    proton.finalize(sid)
    assert type(enter) is triton_class and type(exit_) is triton_class
    assert load_tree("h.hatchet")["k"]["@"]["count"] == 1


def test_chain_hook_error_propagates():
    sid = proton.start("h", backend="fake", hook="triton")

    def boom(md):
        raise ValueError("hook failed")

    knobs.runtime.launch_exit_hook.add(boom)
    try:
        with pytest.raises(ValueError, match="hook failed"):
            knobs.runtime.launch_exit_hook(LazyDict({"name": "k", "function": 0, "stream": 0}))
    finally:
        knobs.runtime.launch_exit_hook.remove(boom)
    proton.finalize(sid)


def test_metadata_get_in_c_as_lazydict_get():
    """Triton's LazyDict.get runs in C for its own class (same merging,
    extras consumed once); a subclass keeps its own get()."""
    calls = []

    def meta(grid, metadata, args):
        calls.append(args["n"])
        return {"flops": float(args["n"]), "name": "renamed"}

    class Mine(LazyDict):
        def get(self):
            return {"name": "sub_kernel", "bytes": 7}

    sid = proton.start("h", backend="fake", hook="triton")
    lazy = LazyDict({"name": "k", "function": 0, "stream": 0})
    lazy.add(meta, (None, None, {"n": 3}))
    lazy.add(lambda g, m, a: {"bytes": 2}, (None, None, {}))
    knobs.runtime.launch_enter_hook(lazy)
    knobs.runtime.launch_exit_hook(lazy)
    assert lazy.extras == [] and lazy.data == {"name": "renamed", "function": 0, "stream": 0, "flops": 3.0,
                                               "bytes": 2}
    assert calls == [3]
    mine = Mine({"name": "x", "function": 0, "stream": 0})
    knobs.runtime.launch_enter_hook(mine)
    knobs.runtime.launch_exit_hook(mine)
    proton.finalize(sid)
    t = load_tree("h.hatchet")
    assert t["renamed"]["@"]["flops"] == 3.0 and t["renamed"]["@"]["bytes"] == 2.0
    assert t["sub_kernel"]["@"]["bytes"] == 7.0
