"""cproton.language markers compiled ahead of time for sm_90 without a GPU:
`// @cproton record start|end <name>` reach the PTX in program order, each
followed by the `mov.u32 %rN, 0;` the inline asm defines."""
import re

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import cproton.language as pl  # noqa: E402


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


def compile_ptx(fn, signature, constexprs):
    src = ASTSource(fn, signature, constexprs)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]


def markers(ptx):
    lines = [ln.strip() for ln in ptx.splitlines()]
    out = []
    for i, ln in enumerate(lines):
        m = re.match(r"// @cproton record (start|end) (\S+)$", ln)
        if m:
            assert re.match(r"mov\.u32 %r\d+, 0;$", lines[i + 1]), lines[i + 1]
            out.append((m.group(1), m.group(2)))
    return out


def test_markers_in_order():
    ptx = compile_ptx(vadd, {"x": "*fp32", "y": "*fp32", "z": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                      {"BLOCK": 256})
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
    assert pl.marker_text(True, "dot") == "// @cproton record start dot\n\tmov.u32 $0, 0;"
    assert pl.marker_text(False, "dot").startswith("// @cproton record end dot")
