"""A TMA matmul with a warp-specialized K loop and a scope around the loop
body, compiled for sm_90 without a GPU through the instrumentation hook (the
shape of Proton's test_warp_spec). Triton puts a `.loc` line directive, which
ends at its newline and not at a ';', right before the branch into the loop:
the PTX pass once read the branch as part of the directive and refused the
loop's markers as unreachable.

For sm_100 Triton splits the loop into warp-specialized partitions that the
kernel enters through a `brx.idx` jump table (`.branchtargets`), which the
pass follows too.

Also the generator of tests/data/instrument/matmul_tma_ws_sm{90,100}.ptx:
    .venv/bin/python tests/python/test_instrument_ws.py OUT.ptx [90|100]
writes the kernel's PTX for that target with markers only (no pass)."""
import sys
import warnings

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import cproton.language as pl  # noqa: E402
from cproton import CprotonWarning  # noqa: E402
from cproton.flags import flags  # noqa: E402
from cproton.hooks import instrumentation as instr  # noqa: E402


@triton.jit
def tma_ws_matmul(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  WS: tl.constexpr, LOOP_SCOPE: tl.constexpr):
    if not LOOP_SCOPE:
        pl.enter_scope("kernel")
    tiles_n = tl.cdiv(N, BN)
    row = (tl.program_id(0) // tiles_n) * BM
    col = (tl.program_id(0) % tiles_n) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in tl.range(tl.cdiv(K, BK), warp_specialize=WS):
        if LOOP_SCOPE:
            pl.enter_scope("loop")
        a = a_desc.load([row, kt * BK])
        b = b_desc.load([col, kt * BK])
        acc = tl.dot(a, b.T, acc)
        if LOOP_SCOPE:
            pl.exit_scope("loop")
    c_desc.store([row, col], acc.to(tl.float8e4nv))
    if not LOOP_SCOPE:
        pl.exit_scope("kernel")


SIG = {"a_desc": "tensordesc<fp8e4nv[128, 128]>", "b_desc": "tensordesc<fp8e4nv[256, 128]>",
       "c_desc": "tensordesc<fp8e4nv[128, 256]>", "M": "i32", "N": "i32", "K": "i32",
       "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "WS": "constexpr",
       "LOOP_SCOPE": "constexpr"}
CONSTS = {"BM": 128, "BN": 256, "BK": 128, "WS": True}
OPTIONS = {"num_warps": 8, "num_stages": 2}


@pytest.fixture(autouse=True)
def _fresh_triton_cache(tmp_path, monkeypatch):
    """Triton's cache keys on the option string, not on the pass: a binary
    cached by another build of cproton must not stand in for this one's."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def compile_with(option, cc=90):
    """sm_90 gets the scope around the loop body; sm_100, where Triton 3.6
    really splits the loop into partitions, gets it around the whole kernel
    (its partition scheduling fails on inline asm inside the loop)."""
    src = ASTSource(tma_ws_matmul, SIG, {**CONSTS, "LOOP_SCOPE": cc < 100})
    return triton.compile(src, target=GPUTarget("cuda", cc, 32), options={**OPTIONS, "instrumentation_mode": option})


def markers_only_ptx(cc=90):
    flags.instrumentation_on = True
    try:
        return compile_with("cproton-test-markers:" + pl.marker_text(True, "x"), cc).asm["ptx"]
    finally:
        flags.instrumentation_on = False


def test_loop_markers_follow_a_loc_directive():
    ptx = markers_only_ptx()
    lines = ptx.splitlines()
    # the construct under test: a .loc line right before a branch
    assert any(a.strip().startswith(".loc") and "bra" in b for a, b in zip(lines, lines[1:]))
    assert sum("@cproton proton.record" in ln for ln in lines) == 2


def test_blackwell_partitions_are_entered_by_brx_idx():
    ptx = markers_only_ptx(100)
    assert "setmaxnreg" in ptx and ".branchtargets" in ptx and "brx.idx" in ptx
    assert sum("@cproton proton.record" in ln for ln in ptx.splitlines()) == 2


@pytest.mark.parametrize("cc,mode", [(90, "default:metric_type=cycle:optimizations=clock32"),
                                     (90, "default:buffer_type=global:metric_type=cycle"),
                                     (100, "default:metric_type=cycle")])
def test_hook_instruments_the_ws_kernel(cc, mode):
    hook = instr.InstrumentationHook(mode)
    hook.activate()
    try:
        import triton.knobs as knobs
        with warnings.catch_warnings():  # the flow is followed: no text-order warning
            warnings.simplefilter("error", CprotonWarning)
            k = compile_with(knobs.compilation.instrumentation_mode, cc)
    finally:
        hook.deactivate()
    layout = k.metadata.cproton_layout
    assert layout["kernel"] == "tma_ws_matmul"
    assert layout["scope_names"] == ["loop" if cc < 100 else "kernel"] and layout["scope_parents"] == [-1]
    assert "warning" not in layout
    assert k.metadata.profile_scratch_size == layout["per_cta_bytes"] > 0
    assert len(k.asm["cubin"]) > 0  # Triton's ptxas took the instrumented PTX


UNFOLLOWABLE = """.version 8.7
.target sm_90a
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u64 .ptr .global .align 1 k_param_1
)
.reqntid 64
{
\t.reg .b32 %r<4>;
\tmov.u32 %r1, %tid.x;
\tbrx.idx %r1, $L_elsewhere;
\t// @cproton record start a
\t// @cproton record end a
\tret;
}
"""


def test_text_order_fallback_is_a_warning():
    """A body the pass cannot follow (brx.idx without its list) is checked in
    text order; the layout says so and the hook raises a CprotonWarning."""
    hook = instr.InstrumentationHook("default")
    stages = {"ptx": lambda src, metadata: UNFOLLOWABLE}
    hook._wrap_ptx_stage(stages)
    metadata = {"name": "k", "num_warps": 2}
    with pytest.warns(CprotonWarning, match=r"line 12: an indirect branch \(brx\.idx\).*checked in text order"):
        out = stages["ptx"](None, metadata)
    assert "$cpr_fin" in out
    assert "text order" in metadata["cproton_layout"]["warning"]
    assert metadata["cproton_layout"]["scope_names"] == ["a"]


if __name__ == "__main__":
    with open(sys.argv[1], "w") as out:
        out.write(markers_only_ptx(int(sys.argv[2]) if len(sys.argv) > 2 else 90))
