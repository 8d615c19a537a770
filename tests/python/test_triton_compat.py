"""cproton against the installed Triton, through the public API only and
without a GPU: `import cproton as proton`, a CPU session, the launch hook in
Triton's hook chains, and a kernel with `cproton.language` markers compiled
ahead of time for sm_90 under an instrumentation session (the markers
lowered by the PTX pass, the result assembled by Triton's ptxas).

scripts/triton-compat.sh runs this file (with test_language.py,
test_instrument_ws.py, test_hook.py and test_tensor_metrics.py) under each
Triton release from 3.6 to 3.9; docs/compatibility.md has the table."""
import json
import warnings

import pytest

import cproton as proton
import cproton.language as pl

triton = pytest.importorskip("triton")
import triton.knobs as knobs  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402


@triton.jit
def scaled_copy(x, y, n, BLOCK: tl.constexpr):
    pl.enter_scope("kernel")
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    with pl.scope("load"):
        v = tl.load(x + off, mask=off < n)
    pl.enter_scope("store")
    tl.store(y + off, v * 2, mask=off < n)
    pl.exit_scope("store")
    pl.exit_scope("kernel")


SIG = {"x": "*fp32", "y": "*fp32", "n": "i32", "BLOCK": "constexpr"}


@pytest.fixture(autouse=True)
def _own_triton_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def compile_for_sm90():
    src = ASTSource(scaled_copy, SIG, {"BLOCK": 128})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "instrumentation_mode": knobs.compilation.instrumentation_mode})


def test_cpu_session_writes_the_tree():
    sid = proton.start("cpu", backend="none")
    with proton.scope("outer", metrics={"bytes": 3}):
        proton.enter_scope("inner", metrics={"flops": 2.5})
        proton.exit_scope()
    proton.finalize(sid)
    with open("cpu.hatchet") as f:
        root = json.load(f)[0]
    outer = next(c for c in root["children"] if c["frame"]["name"] == "outer")
    assert outer["metrics"]["bytes"] == 3
    assert outer["children"][0]["frame"]["name"] == "inner"
    assert outer["children"][0]["metrics"]["flops"] == 2.5


def test_launch_hook_joins_and_leaves_tritons_chains():
    sid = proton.start("hooked", backend="none", hook="triton")
    assert knobs.runtime.launch_enter_hook.calls and knobs.runtime.launch_exit_hook.calls
    assert knobs.runtime.kernel_load_end_hook.calls
    proton.finalize(sid)
    assert not knobs.runtime.launch_enter_hook.calls and not knobs.runtime.launch_exit_hook.calls


def test_instrumented_kernel_compiles_ahead_of_time():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "backend 'instrumentation' is not available here"
        sid = proton.start("instr", backend="instrumentation", mode="default")
    try:
        assert knobs.compilation.instrumentation_mode.startswith("cproton:")
        k = compile_for_sm90()
    finally:
        proton.finalize(sid)
    ptx = k.asm["ptx"]
    layout = k.metadata.cproton_layout
    assert layout["scope_names"] == ["kernel", "load", "store"]
    assert layout["scope_parents"] == [-1, 0, 0]
    assert k.metadata.profile_scratch_size == layout["per_cta_bytes"] > 0
    # lowered: the pass's registers, clock reads and finalize block are in;
    # a tree profile sums in the kernel (lane-parallel atomics, no records)
    assert "%cpr_wr" in ptx and "$cpr_fin" in ptx and "%globaltimer" in ptx
    assert layout["aggregate"] == 1 and "red.global.add.u64" in ptx
    assert ptx.count("mov.u64 %cpr_") > 0
    assert k.asm["cubin"][:4] == b"\x7fELF"  # ptxas assembled it
    # the session is over: the same kernel compiles without markers again
    plain = compile_for_sm90()
    assert "@cproton" not in plain.asm["ptx"] and plain.metadata.profile_scratch_size == 0
