"""Intra-kernel events (pl.allocate_event / start_event / end_event), on the
CPU: the warp-specialized Gluon kernel of tests/gpu/python/ws_events.py
compiled for sm_90 through the instrumentation hook (events started in one
partition and ended in another, an event spanning loop iterations), the
scope table the pass makes of it, and events that cannot be lowered,
refused at compile time with kernel, event and source line named."""
import sys
import warnings
from pathlib import Path

import pytest

triton = pytest.importorskip("triton")
gluon = pytest.importorskip("triton.experimental.gluon")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import cproton.language as pl  # noqa: E402
from cproton import CprotonWarning  # noqa: E402
from cproton.hooks import instrumentation as instr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu" / "python"))
import ws_events  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def compile_hooked(src, mode="default", options=None):
    hook = instr.InstrumentationHook(mode)
    hook.activate()
    try:
        import triton.knobs as knobs
        return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                              options={**(options or ws_events.OPTIONS),
                                       "instrumentation_mode": knobs.compilation.instrumentation_mode})
    finally:
        hook.deactivate()


@pytest.mark.parametrize("mode", ["default", "default:buffer_type=global:optimizations=clock32"])
def test_ws_kernel_events_lower(mode):
    with warnings.catch_warnings():  # the partitions' flow is followed: no text-order warning
        warnings.simplefilter("error", CprotonWarning)
        k = compile_hooked(ws_events.source(), mode)
    layout = k.metadata.cproton_layout
    names = layout["scope_names"]
    assert sorted(names) == ["gap", "handoff", "step"]
    parents = dict(zip(names, layout["scope_parents"]))
    assert parents == {"gap": -2, "handoff": -2, "step": -1}  # events sit outside the nesting
    assert "warning" not in layout
    ptx = k.asm["ptx"]
    assert ".branchtargets" in ptx and "brx.idx" in ptx  # the partitions' dispatch
    assert ptx.count("@cproton proton.event start handoff") == ws_events.N_HANDOFF
    assert ptx.count("@cproton proton.event end handoff") == ws_events.N_HANDOFF
    assert len(k.asm["cubin"]) > 0  # ptxas took it


def test_events_across_partitions_need_warp_granularity():
    """With units of several warps a partition may hold no recording warp:
    the kernel compiles, with a CprotonWarning naming kernel and fix."""
    with pytest.warns(CprotonWarning, match="kernel 'ws_events': events in a warp-specialized kernel "
                                            "with 8 warps per unit.*use granularity=warp"):
        k = compile_hooked(ws_events.source(), "default:granularity=warp_group_2")
    assert k.metadata.cproton_layout["n_units"] == 1


def test_event_value_crosses_calls_and_keeps_its_name():
    """Events are values: passed to @jit functions (inlined) they keep their
    name; two events make two specializations."""
    @triton.jit
    def finish(ev):
        pl.end_event(ev)

    @triton.jit
    def k(x):
        a = pl.allocate_event("a")
        b = pl.allocate_event("b")
        pl.start_event(a)
        pl.start_event(b)
        tl.store(x, 1)
        finish(b)
        finish(a)

    c = compile_hooked(ASTSource(k, {"x": "*i32"}, {}), options={"num_warps": 4})
    assert sorted(c.metadata.cproton_layout["scope_names"]) == ["a", "b"]


def test_start_event_needs_an_event():
    @triton.jit
    def k(x):
        pl.start_event(3)
        tl.store(x, 1)

    with pytest.raises(Exception, match="expected an event returned by allocate_event"):
        compile_hooked(ASTSource(k, {"x": "*i32"}, {}), options={"num_warps": 4})


def test_unbalanced_event_is_refused_with_source_line():
    @triton.jit
    def lonely(x):
        ev = pl.allocate_event("lonely")
        pl.start_event(ev)  # never ended
        tl.store(x, 1)

    with pytest.raises(RuntimeError) as e:
        compile_hooked(ASTSource(lonely, {"x": "*i32"}, {}), options={"num_warps": 4})
    msg = str(e.value)
    line = lonely.fn.__code__.co_firstlineno + 3
    assert "kernel 'lonely'" in msg and "event 'lonely' is started but never ended" in msg, msg
    assert f"test_events.py:{line})" in msg, msg


def test_event_and_scope_names_are_distinct():
    @triton.jit
    def both(x):
        ev = pl.allocate_event("x")
        pl.enter_scope("x")
        pl.start_event(ev)
        pl.end_event(ev)
        pl.exit_scope("x")
        tl.store(x, 1)

    with pytest.raises(RuntimeError, match="'x' is used both as a scope and as an event"):
        compile_hooked(ASTSource(both, {"x": "*i32"}, {}), options={"num_warps": 4})


def test_bad_event_names():
    with pytest.raises(ValueError, match="invalid cproton event name"):
        pl.marker_text(True, "has space", pl.EVENT_PREFIX)
