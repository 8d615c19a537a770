"""Proton's dialect ops in IR that Triton parses, under
``backend="instrumentation"`` (cproton.hooks.proton_ir), compiled ahead of
time for sm_90 without a GPU: Proton's TTGIR-override workflow (its
test_override.py: dump a kernel's .ttgir, insert ``proton.record`` ops, compile
again with TRITON_KERNEL_OVERRIDE) gives the scopes Proton's would, as does a
.ttir override; the ops lower to the markers ``cproton.language`` emits, so
the PTX matches the equivalent ``pl`` kernel's; ops cproton cannot lower are
refused naming the line; the hook leaves Triton as it found it."""
import re

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import cproton.language as pl  # noqa: E402
from cproton.hooks import instrumentation as instr  # noqa: E402
from cproton.hooks import proton_ir  # noqa: E402


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def add_kernel_pl(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """add_kernel with the pl markers that test_override.py's edit amounts to."""
    pl.enter_scope("kernel")
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    pl.enter_scope("load_ops")
    pl.enter_scope("load_x")
    x = tl.load(x_ptr + offsets, mask=mask)
    pl.exit_scope("load_x")
    pl.enter_scope("load_y")
    y = tl.load(y_ptr + offsets, mask=mask)
    pl.exit_scope("load_y")
    pl.exit_scope("load_ops")
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)
    pl.exit_scope("kernel")


SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32", "BLOCK_SIZE": "constexpr"}
SCOPES = ["kernel", "load_ops", "load_x", "load_y"]
PARENTS = [-1, 0, 1, 1]


def compile_hooked(fn, mode="default", data="tree"):
    hook = instr.InstrumentationHook(mode, data)
    hook.activate()
    try:
        import triton.knobs as knobs
        return triton.compile(ASTSource(fn, SIG, {"BLOCK_SIZE": 1024}), target=GPUTarget("cuda", 90, 32),
                              options={"num_warps": 1,
                                       "instrumentation_mode": knobs.compilation.instrumentation_mode})
    finally:
        hook.deactivate()


def insert_records(lines):
    """Proton's test_override.py edit of a dumped add_kernel .ttgir/.ttir."""
    out, first_load = [], True
    for line in lines:
        if "tt.get_program_id x" in line:
            line = '    proton.record start "kernel" loc(#loc)\n' + line
        elif "arith.cmpi slt" in line:
            line += '    proton.record start "load_ops" loc(#loc)\n    proton.record start "load_x" loc(#loc)\n'
        elif "tt.load" in line and first_load:
            line += '    proton.record end "load_x" loc(#loc)\n    proton.record start "load_y" loc(#loc)\n'
            first_load = False
        elif "tt.load" in line:
            line += '    proton.record end "load_y" loc(#loc)\n    proton.record end "load_ops" loc(#loc)\n'
        elif "tt.return" in line:
            line = '    proton.record end "kernel" loc(#loc)\n' + line
        out.append(line)
    return out


def dump_and_edit(tmp_path, monkeypatch, ext):
    """The override workflow: compile once dumping the IR (under an
    instrumentation session, as Proton's override_helper.py does), insert the
    records into the .`ext` file, keep only that file, then turn overrides on."""
    dump = tmp_path / "dump"
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TRITON_KERNEL_DUMP", "1")
    monkeypatch.setenv("TRITON_DUMP_DIR", str(dump))
    compile_hooked(add_kernel)
    files = list(dump.rglob(f"*.{ext}"))
    assert len(files) == 1, files
    for f in dump.rglob("*"):
        if f.is_file() and f != files[0]:
            f.unlink()
    files[0].write_text("".join(insert_records(files[0].read_text().splitlines(keepends=True))))
    monkeypatch.delenv("TRITON_KERNEL_DUMP")
    monkeypatch.setenv("TRITON_KERNEL_OVERRIDE", "1")
    monkeypatch.setenv("TRITON_OVERRIDE_DIR", str(dump))
    return files[0]


def markers(ptx):
    return re.findall(r"// @cproton proton\.(?:record|event) (start|end) (\S+)", ptx)


@pytest.mark.parametrize("ext", ["ttgir", "ttir"])
@pytest.mark.parametrize("mode,data", [("default", "tree"), ("default", "trace"),
                                       ("default:buffer_type=global:optimizations=clock32", "tree")])
def test_override_workflow_gives_protons_scopes(tmp_path, monkeypatch, ext, mode, data):
    """test_override.py's edit, compiled with TRITON_KERNEL_OVERRIDE: it parses
    (the proton dialect is loaded), and the kernel has Proton's scope tree
    (kernel > load_ops > load_x, load_y), as its test asserts of the profile."""
    path = dump_and_edit(tmp_path, monkeypatch, ext)
    assert 'proton.record start "load_x"' in path.read_text()
    k = compile_hooked(add_kernel, mode, data)
    layout = k.metadata.cproton_layout
    assert layout["scope_names"] == SCOPES
    assert layout["scope_parents"] == PARENTS
    assert k.metadata.profile_scratch_size == layout["per_cta_bytes"] > 0
    assert "proton.record" in k.asm[ext], "the IR kept is the overriding file's"
    assert len(k.asm["cubin"]) > 0


def test_override_lowers_like_the_pl_kernel(tmp_path, monkeypatch):
    """The markers reach the PTX in the order and number of the equivalent pl
    kernel's, and the lowered kernels have the same layout: the same scopes,
    metrics and events come out of the runtime."""
    reference = compile_hooked(add_kernel_pl, "default", "trace")
    dump_and_edit(tmp_path, monkeypatch, "ttgir")
    k = compile_hooked(add_kernel, "default", "trace")
    assert markers(k.asm["ptx"]) == markers(reference.asm["ptx"])
    assert len(markers(k.asm["ptx"])) == 8
    ours, theirs = dict(k.metadata.cproton_layout), dict(reference.metadata.cproton_layout)
    for layout in (ours, theirs):
        layout.pop("kernel")
    assert ours == theirs


def test_without_a_session_the_dialect_is_not_loaded(tmp_path, monkeypatch, capfd):
    """The hook gives the dialect back at deactivate: an override with proton
    ops fails to parse without an instrumentation session, as under Proton
    (and as it did under an instrumentation session before cproton loaded
    the dialect)."""
    dump_and_edit(tmp_path, monkeypatch, "ttgir")
    with pytest.raises(RuntimeError, match="Parse MLIR file failed"):
        triton.compile(ASTSource(add_kernel, SIG, {"BLOCK_SIZE": 1024}), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 1})
    assert "Dialect `proton' not found for custom op 'proton.record'" in capfd.readouterr().err


def test_install_restores_what_was_there():
    undo = proton_ir.install()
    assert undo is not None
    registry = proton_ir._registry()
    if registry is not None and hasattr(registry, "register_instrumentation"):
        with pytest.raises(RuntimeError, match="already registered"):
            proton_ir.install()
        undo()
        proton_ir.install()()  # registrable again
    else:
        from triton.backends import backends
        compiler = backends["nvidia"].compiler
        assert isinstance(compiler.instrumentation, proton_ir._Instrumentation)
        undo()
        assert compiler.instrumentation is None


def test_lower_text_records_and_events():
    text = ('  tt.func public @k() {\n'
            '    proton.record start "outer" loc(#loc3)\n'
            '    %0 = proton.allocate_event "ev" : i32 loc(#loc)\n'
            '    proton.event start %0 : i32 loc(#loc4)\n'
            '    proton.event end %0 : i32 loc(#loc)\n'
            '    proton.record end "outer" loc(#loc)\n'
            '    tt.return loc(#loc)\n')
    out, n = proton_ir.lower_text(text)
    assert n == 5 and not proton_ir.has_proton_ops(out)
    lines = out.split("\n")
    assert lines[1] == ('    %cproton_marker_1 = tt.elementwise_inline_asm "// @cproton proton.record start outer'
                        '\\0A\\09mov.u32 $0, %clock;" {constraints = "=r", packed_element = 1 : i32, pure = false} '
                        '-> i32 loc(#loc3)')
    assert lines[2] == "    %0 = arith.constant 0 : i32 loc(#loc)"
    assert '"// @cproton proton.event start ev\\0A' in lines[3] and lines[3].endswith("loc(#loc4)")
    assert markers(out.replace("\\0A", "\n")) == [("start", "outer"), ("start", "ev"), ("end", "ev"),
                                                  ("end", "outer")]
    assert proton_ir.lower_text("%cproton_marker_1 = x\nproton.record start \"a\"")[0].startswith(
        "%cproton_marker_1 = x\n%cproton_marker_2 = "), "fresh names never clash"


@pytest.mark.parametrize("text,match", [
    ('  proton.record start "a b" loc(#loc)', r"line 1: invalid cproton scope name 'a b'"),
    ('  %3 = proton.allocate_event "x\\22y" : i32', "line 1: invalid cproton event name"),
    ('\n  proton.event start %arg3 : i32 loc(#loc)', "line 2: proton.event uses %arg3"),
    ('  %1 = proton.mystery "a" : i32', "line 1: .*'proton.mystery' is not supported"),
])
def test_lower_text_refuses_what_it_cannot_lower(text, match):
    with pytest.raises(proton_ir.ProtonOpError, match=match):
        proton_ir.lower_text(text, "f.ttgir, line")


def test_markers_inside_strings_are_not_ops():
    text = '    %0 = tt.elementwise_inline_asm "// @cproton proton.record start kernel" -> i32'
    assert not proton_ir.has_proton_ops(text)
    assert proton_ir.lower_text(text) == (text, 0)


def test_a_refused_op_names_the_kernel(tmp_path, monkeypatch):
    path = dump_and_edit(tmp_path, monkeypatch, "ttgir")
    path.write_text(path.read_text().replace('"load_x"', '"load x"'))
    with pytest.raises(RuntimeError, match=r"cproton could not lower a proton op: kernel 'add_kernel', "
                                           r"line \d+: invalid cproton scope name 'load x'"):
        compile_hooked(add_kernel)


def test_override_with_proton_events(tmp_path, monkeypatch):
    """Triton 3.9's proton.allocate_event / proton.event ops in an overriding
    .ttgir become cproton's event markers: an event outside the scope nesting."""
    from triton._C.libtriton import proton
    if not hasattr(proton, "create_proton_event"):
        pytest.skip("this Triton's proton dialect has no event ops (Triton 3.9 added them)")
    path = dump_and_edit(tmp_path, monkeypatch, "ttgir")
    lines = []
    for line in path.read_text().splitlines(keepends=True):
        if 'proton.record start "load_ops"' in line:
            line += '    %ev = proton.allocate_event "loads" : i32 loc(#loc)\n    proton.event start %ev : i32 loc(#loc)\n'
        elif 'proton.record end "load_ops"' in line:
            line = '    proton.event end %ev : i32 loc(#loc)\n' + line
        lines.append(line)
    path.write_text("".join(lines))
    k = compile_hooked(add_kernel, "default", "trace")
    layout = k.metadata.cproton_layout
    assert dict(zip(layout["scope_names"], layout["scope_parents"])) == {
        "kernel": -1, "load_ops": 0, "load_x": 1, "load_y": 1, "loads": -2}
    ptx = k.asm["ptx"]
    assert ptx.count("@cproton proton.event start loads") == ptx.count("@cproton proton.event end loads") == 1


def test_override_under_a_session(tmp_path, monkeypatch):
    """The public path of Proton's override_helper.py: start(backend=
    "instrumentation") (on a machine without a GPU the session records CPU
    scopes, but the hook is installed), compile the overridden kernel,
    finalize; the dialect is given back with the session."""
    import warnings

    import triton.knobs as knobs

    import cproton as proton
    dump_and_edit(tmp_path, monkeypatch, "ttgir")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no libcuda here: CPU scopes only
        proton.start(str(tmp_path / "override"), backend="instrumentation")
    try:
        k = triton.compile(ASTSource(add_kernel, SIG, {"BLOCK_SIZE": 1024}), target=GPUTarget("cuda", 90, 32),
                           options={"num_warps": 1,
                                    "instrumentation_mode": knobs.compilation.instrumentation_mode})
    finally:
        proton.finalize()
    assert k.metadata.cproton_layout["scope_names"] == SCOPES
    with pytest.raises(RuntimeError, match="Parse MLIR file failed"):
        triton.compile(ASTSource(add_kernel, SIG, {"BLOCK_SIZE": 1024}), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 1})
