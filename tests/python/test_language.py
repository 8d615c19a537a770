"""cproton.language and the instrumentation hook, compiled ahead of time for
sm_90 without a GPU: with an instrumentation session the markers
`// @cproton proton.record start|end <name>` reach the PTX in program order (each
followed by the `mov.u32 %rN, %clock;` the inline asm defines, after a `.loc`
line from Triton 3.9 on) and the hook's
PTX pass lowers them; without one, the kernel carries no marker at all."""
import re

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import cproton.language as pl  # noqa: E402
from cproton import CprotonWarning, _cproton  # noqa: E402
from cproton.flags import flags  # noqa: E402
from cproton.hooks import instrumentation as instr  # noqa: E402


@triton.jit
def vadd(x, y, z, n, BLOCK: tl.constexpr):
    pl.enter_scope("kernel")
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = off < n
    with pl.scope("load"):
        a = tl.load(x + off, mask=mask)
        b = tl.load(y + off, mask=mask)
    pl.enter_scope("store")
    tl.store(z + off, a + b, mask=mask)
    pl.exit_scope("store")
    pl.exit_scope("kernel")


@triton.jit
def looped(x, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in range(0, n, BLOCK):
        pl.enter_scope("iter")
        acc += tl.load(x + i + tl.arange(0, BLOCK))
        pl.exit_scope("iter")
    tl.store(x + tl.arange(0, BLOCK), acc)


VADD_SIG = {"x": "*fp32", "y": "*fp32", "z": "*fp32", "n": "i32", "BLOCK": "constexpr"}


def compile_kernel(fn, signature, constexprs, mode_option):
    src = ASTSource(fn, signature, constexprs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"instrumentation_mode": mode_option})


def compile_ptx(fn, signature, constexprs):
    """Markers only: the flag on, no PTX pass (a cache key of its own)."""
    flags.instrumentation_on = True
    try:
        return compile_kernel(fn, signature, constexprs, "cproton-test-markers:" + pl.marker_text(True, "x")).asm["ptx"]
    finally:
        flags.instrumentation_on = False


def markers(ptx):
    lines = [ln.strip() for ln in ptx.splitlines()]
    out = []
    for i, ln in enumerate(lines):
        m = re.match(r"// @cproton proton.record (start|end) (\S+)$", ln)
        if m:
            # Triton 3.9 puts a .loc line between the comment and the mov
            following = next(x for x in lines[i + 1:] if not x.startswith(".loc"))
            assert re.match(r"mov\.u32 %r\d+, %clock;$", following), following
            out.append((m.group(1), m.group(2)))
    return out


def test_markers_in_order():
    ptx = compile_ptx(vadd, VADD_SIG, {"BLOCK": 256})
    assert markers(ptx) == [("start", "kernel"), ("start", "load"), ("end", "load"), ("start", "store"),
                            ("end", "store"), ("end", "kernel")]


def test_markers_in_loop():
    ptx = compile_ptx(looped, {"x": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128})
    found = markers(ptx)
    assert found and set(found) == {("start", "iter"), ("end", "iter")}
    assert found[0] == ("start", "iter")


@pytest.mark.parametrize("bad", ["", "has space", "quo\"te", "a\nb", "x" * 256])
def test_bad_scope_names(bad):
    with pytest.raises(ValueError):
        pl.marker_text(True, bad)


def test_marker_text_shape():
    assert pl.marker_text(True, "dot") == "// @cproton proton.record start dot\n\tmov.u32 $0, %clock;"
    assert pl.marker_text(False, "dot").startswith("// @cproton proton.record end dot")


def test_no_session_no_markers():
    assert not flags.instrumentation_on
    k = compile_kernel(vadd, VADD_SIG, {"BLOCK": 256}, "")
    assert "@cproton" not in k.asm["ptx"]
    assert k.metadata.profile_scratch_size == 0


@pytest.mark.parametrize("mode,data,sums", [
    ("default", "tree", True),
    ("default:buffer_type=global:metric_type=cycle", "tree", True),
    ("default:sampling_strategy=selective:sampling_options=0,2", "tree", True),
    ("default:reduce=kernel", "tree", True),
    ("default", "trace", False),
    ("default:reduce=host", "tree", False),
    ("default:reduce=device", "tree", False),
    ("default:optimizations=time_shift", "tree", False),
])
def test_hook_instruments_the_ptx_stage(mode, data, sums):
    """The whole compile path of backend="instrumentation": the stages hook runs
    the C pass, Triton's ptxas assembles the result, the metadata carries the
    per-CTA buffer size and the layout, and a later load registers it. Tree
    profiles sum in the kernel unless something needs records (a trace,
    reduce=device/host, time_shift)."""
    hook = instr.InstrumentationHook(mode, data)
    assert hook.sums_in_kernel() == sums
    hook.activate()
    try:
        import triton.knobs as knobs
        option = knobs.compilation.instrumentation_mode
        assert option.startswith("cproton:")
        k = compile_kernel(vadd, VADD_SIG, {"BLOCK": 256}, option)
    finally:
        hook.deactivate()
    assert not flags.instrumentation_on
    ptx = k.asm["ptx"]
    assert f":sums={int(sums)}:" in option, "the choice is part of Triton's cache key"
    layout = k.metadata.cproton_layout
    assert layout["aggregate"] == int(sums)
    if sums:  # no records: registers, then atomic adds into one slot per CTA
        assert "red.global.add.u64" in ptx and "%smid" not in ptx
        assert layout["per_cta_bytes"] == 256  # 17 words, padded to 128-byte lines
    else:
        assert "%globaltimer" in ptx and "%smid" in ptx
    assert layout["kernel"] == "vadd"
    assert layout["scope_names"] == ["kernel", "load", "store"]
    assert layout["scope_parents"] == [-1, 0, 0]
    assert k.metadata.profile_scratch_size == layout["per_cta_bytes"] > 0
    assert k.metadata.profile_scratch_align == instr.PROFILE_BUFFER_ALIGNMENT
    assert len(k.asm["cubin"]) > 0
    hook.init_handle(None, 1234, "vadd", k.metadata_group, k.hash)
    assert isinstance(hook.handles[1234], int)


@triton.jit
def plain_add(x, y, z, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("version", [(3, 6), (3, 9)], ids=["proton36", "proton39"])
def test_host_buffer_of_a_kernel_without_scopes(version):
    """A kernel with no pl.scope gets no profile scratch, so the allocator is
    never called. Proton 3.9 (test_no_scope_zero_scratch) still fills the
    host buffer with the header alone; Proton 3.6 fails on it, and cproton
    3.6 leaves it None."""
    import struct
    import types
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply(version)
    hook = instr.InstrumentationHook("default")
    instr.InstrumentationHook.enable_host_buffer = True
    try:
        hook.activate()
        try:
            import triton.knobs as knobs
            k = compile_kernel(plain_add, VADD_SIG, {"BLOCK": 256}, knobs.compilation.instrumentation_mode)
        finally:
            hook.deactivate()
        assert not getattr(k.metadata, "profile_scratch_size", 0)
        hook.init_handle(None, 4321, "plain_add", k.metadata_group, k.hash)
        launch = types.SimpleNamespace(data={"function": 4321})
        hook.enter(launch)
        hook.exit(launch)
        buf = instr.InstrumentationHook.host_buffer
    finally:
        instr.InstrumentationHook.enable_host_buffer = False
        instr.InstrumentationHook.host_buffer = None
        _compat.apply(before)
    if version < (3, 9):
        assert buf is None
        return
    assert buf is not None, "Proton 3.9 builds the header with no payload"
    raw = bytes(buf.numpy()) if hasattr(buf, "numpy") else bytes(buf)
    warps = k.metadata.num_warps
    assert len(raw) == 40 + 4 * warps
    fields = struct.unpack(f"<{10 + warps}I", raw)
    # version, header offset/size, payload offset/size, CUDA, blocks, warps, scratch, uids
    assert fields[:10] == (1, 4, len(raw), len(raw), 0, 1, 0, warps, 0, warps)
    assert list(fields[10:]) == list(range(warps))


def test_flush_strategy_writes_a_global_buffer():
    """buffer_strategy=flush (Proton's spelling, through the dataclass and its
    str) reaches the pass: records go to the global buffer, sized to keep
    every record (vadd has no loop: one slot per marker)."""
    from cproton import mode as cm
    hook = instr.InstrumentationHook(cm.Default(buffer_strategy="flush"))
    assert "buffer_strategy=BUFFER_STRATEGY.FLUSH" in hook.mode_str, hook.mode_str
    hook.activate()
    try:
        import triton.knobs as knobs
        k = compile_kernel(vadd, VADD_SIG, {"BLOCK": 256}, knobs.compilation.instrumentation_mode)
    finally:
        hook.deactivate()
    layout = k.metadata.cproton_layout
    assert layout["buffer"] == 1  # CPROTON_BUFFER_GLOBAL, though the mode says buffer_type=shared
    assert "st.global" in k.asm["ptx"] and "__cproton_smem" not in k.asm["ptx"]
    with pytest.raises(ValueError, match="buffer_strategy"):
        instr.InstrumentationHook("default:buffer_strategy=flsuh")
    with pytest.raises(ValueError, match="circular, flush"):
        _cproton.instr_mode_parse("default:buffer_strategy=flsuh", False)


def test_filter_skips_kernels():
    instr.set_filter(exclude="^vadd$")
    hook = instr.InstrumentationHook("default")
    hook.activate()
    try:
        import triton.knobs as knobs
        k = compile_kernel(vadd, VADD_SIG, {"BLOCK": 256}, knobs.compilation.instrumentation_mode)
    finally:
        hook.deactivate()
        instr.set_filter()
    assert k.metadata.profile_scratch_size == 0
    assert "%globaltimer" not in k.asm["ptx"]


def test_bad_modes_and_filters():
    with pytest.raises(ValueError):
        instr.InstrumentationHook("default:buffer_type=texture")
    with pytest.raises(ValueError, match="unknown reduce 'gpu'"):  # the runtime's key, checked by the hook (C's message)
        instr.InstrumentationHook("default:reduce=gpu")
    with pytest.raises(ValueError):  # and by the session
        _cproton.instr_mode_parse("default:reduce=gpu", False)
    with pytest.raises(TypeError):
        instr.set_filter(include=3)
    with pytest.raises(ValueError):
        _cproton.instr_register("k", {"per_cta_bytes": 1})


def test_gluon_kernel_is_instrumented():
    """Gluon kernels take the same markers (Proton instruments Gluon too)."""
    gluon = pytest.importorskip("triton.experimental.gluon")
    gl = gluon.language

    @gluon.jit
    def gk(x, BLOCK: gl.constexpr):
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
        pl.enter_scope("load")
        offs = gl.arange(0, BLOCK, layout=layout)
        v = gl.load(x + offs)
        pl.exit_scope("load")
        gl.store(x + offs, v + 1)

    hook = instr.InstrumentationHook("default")
    hook.activate()
    try:
        import triton.knobs as knobs
        src = gluon._runtime.GluonASTSource(gk, {"x": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 128})
        k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": 4, "instrumentation_mode": knobs.compilation.instrumentation_mode})
    finally:
        hook.deactivate()
    assert k.metadata.cproton_layout["scope_names"] == ["load"]
    assert k.metadata.profile_scratch_size == k.metadata.cproton_layout["per_cta_bytes"] > 0
    assert "%globaltimer" in k.asm["ptx"] and len(k.asm["cubin"]) > 0


def test_reduce_kernel_is_refused_where_records_are_needed():
    """reduce=kernel stores no records: a trace session or time_shift with it
    is refused before any session starts."""
    import cproton as proton
    for kw in ({"data": "trace", "mode": "default:reduce=kernel"},
               {"mode": "default:reduce=kernel:optimizations=time_shift"}):
        with pytest.raises(ValueError, match="reduce=kernel"):
            proton.start("refused", backend="instrumentation", **kw)
        assert not flags.instrumentation_on
    assert instr.check_mode("default:reduce=kernel") == "kernel"
    assert instr.check_mode("default") == "auto"
    assert instr.check_mode(None, "trace") == "auto"


def test_reduce_kernel_warns_when_a_kernel_keeps_records(tmp_path, monkeypatch):
    """Asked for explicitly, a kernel that cannot sum in the kernel (events)
    says so; by default it keeps records quietly."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))  # compiled, not loaded
    from test_events import compile_hooked, ws_events
    with pytest.warns(CprotonWarning, match="kernel 'ws_events': reduce=kernel, but it has events"):
        k = compile_hooked(ws_events.source(), "default:reduce=kernel")
    assert k.metadata.cproton_layout["aggregate"] == 0
    assert "summed" in _cproton.instr_stats()


def test_a_refused_mode_leaves_no_session():
    """A mode the hook refuses (Proton's mode classes know metric_type=cycle
    only) raises before any session starts: the next start is not told
    that another mode is running."""
    import cproton as proton
    with pytest.raises(ValueError, match="metric_type"):
        proton.start("refused", backend="instrumentation", mode="default:metric_type=globaltimer")
    sid = proton.start("accepted", backend="instrumentation", mode="default:granularity=cta")
    proton.finalize(sid)
