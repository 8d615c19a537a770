"""Intra-kernel instrumentation markers for Triton kernels (``pl``), the
front end of cproton's instrumentation backend, with the names of Proton's
``triton.profiler.language``:

    import cproton.language as pl

    @triton.jit
    def kernel(...):
        pl.enter_scope("load")
        ...
        pl.exit_scope("load")
        with pl.scope("compute"):
            ...

Each call emits one side-effecting inline-assembly statement whose text is
the record op, ``// @cproton proton.record start <name>`` or ``// @cproton
proton.record end <name>`` (Proton's op name, so that TTIR/LLIR dumps show
``proton.record start`` where Proton's would), followed by ``mov.u32 $0,
%clock;``: inline asm must define a result, and reading the counter there
makes each record op's counter read visible in the LLVM IR with its source
line, as Proton's is. The result is unused, so ptxas removes that read; the
real one is what cproton's PTX pass inserts at the marker. Triton keeps such
statements in program order, so the markers reach the PTX in order; cproton's PTX pass (src/instrument) turns them into
counter reads and stores. Without an active instrumentation session nothing
is emitted, so plain kernels are exactly what they would be without ``pl``. Unlike Proton, Triton-DSL kernels are supported (the
markers are plain inline asm, independent of the MLIR pipeline); the
``enable_semantic``/``disable_semantic`` switches are kept for
compatibility.

Scope names: non-empty, at most 255 characters, no whitespace, quotes or
control characters (they must survive as one PTX comment token).
"""
import re

from triton.language import core as tl

from .flags import flags
from triton.language.core import builtin

MARKER_PREFIX = "// @cproton proton.record"
_NAME = re.compile(r"^[^\s\"'\\`\x00-\x1f\x7f]{1,255}$")

_SEMANTICS = {"triton", "gluon"}


def enable_semantic(semantic_name: str):
    _SEMANTICS.add(semantic_name)


def disable_semantic(semantic_name: str):
    _SEMANTICS.discard(semantic_name)


def marker_text(is_start: bool, scope_name: str) -> str:
    """The inline-assembly text of one record op."""
    if not isinstance(scope_name, str) or not _NAME.match(scope_name):
        raise ValueError(f"invalid cproton scope name {scope_name!r}: use 1-255 characters "
                         "without whitespace, quotes or control characters")
    kind = "start" if is_start else "end"
    return f"{MARKER_PREFIX} {kind} {scope_name}\n\tmov.u32 $0, %clock;"


def record(is_start: tl.constexpr, scope_name: tl.constexpr, semantic):
    """Emits the marker for a record op (called at compile time), only while an
    instrumentation session is active: otherwise the kernel compiles with no
    marker at all. Triton's cache keeps the two apart through the
    ``instrumentation_mode`` compile option the instrumentation hook sets."""
    is_start = tl._unwrap_if_constexpr(is_start)
    scope_name = tl._unwrap_if_constexpr(scope_name)
    asm = marker_text(bool(is_start), scope_name)
    if not flags.instrumentation_on:
        return None
    return tl.inline_asm_elementwise(asm, "=r", [], dtype=tl.int32, is_pure=False, pack=1,
                                     _semantic=semantic)


@builtin
def enter_scope(name: tl.constexpr, _semantic=None):
    record(is_start=True, scope_name=name, semantic=_semantic)


@builtin
def exit_scope(name: tl.constexpr, _semantic=None):
    record(is_start=False, scope_name=name, semantic=_semantic)


class scope:

    def __init__(self, name: str, _semantic=None):
        self.name = name
        self.semantic = _semantic

    def __enter__(self):
        enter_scope(self.name, _semantic=self.semantic)

    def __exit__(self, exc_type, exc_value, traceback):
        exit_scope(self.name, _semantic=self.semantic)
