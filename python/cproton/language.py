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

Events (Proton's ``pl.allocate_event`` / ``pl.start_event`` /
``pl.end_event``) are named regions that need not nest: a start and its end
may sit in different basic blocks, loop iterations, inlined functions or
warp-specialized partitions::

    ev = pl.allocate_event("handoff")     # an opaque value: pass it on
    ...  pl.start_event(ev)  ...          # e.g. in a producer partition
    ...  pl.end_event(ev)    ...          # e.g. in a consumer partition

An event emits ``// @cproton proton.event start|end <name>``; the PTX pass
gives it a scope id outside the scope nesting, and the decoder pairs its
records per warp first and then across the warps of a CTA in time order
(docs/instrumentation.md). The ``Event`` value carries its name in its
type and one i32 IR value, so it crosses loops, ``@jit`` calls and Gluon's
``warp_specialize`` partition arguments like any other value.

Scope and event names: non-empty, at most 255 characters, no whitespace,
quotes or control characters (they must survive as one PTX comment token).
"""
import re

from triton.language import core as tl

from .flags import flags
from triton.language.core import builtin

MARKER_PREFIX = "// @cproton proton.record"
EVENT_PREFIX = "// @cproton proton.event"
_NAME = re.compile(r"^[^\s\"'\\`\x00-\x1f\x7f]{1,255}$")

_SEMANTICS = {"triton", "gluon"}


def enable_semantic(semantic_name: str):
    _SEMANTICS.add(semantic_name)


def disable_semantic(semantic_name: str):
    _SEMANTICS.discard(semantic_name)


def _check_name(name, what="scope"):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"invalid cproton {what} name {name!r}: use 1-255 characters "
                         "without whitespace, quotes or control characters")


def marker_text(is_start: bool, scope_name: str, prefix: str = MARKER_PREFIX) -> str:
    """The inline-assembly text of one record op (or, with EVENT_PREFIX, of
    one event op)."""
    _check_name(scope_name, "event" if prefix == EVENT_PREFIX else "scope")
    kind = "start" if is_start else "end"
    return f"{prefix} {kind} {scope_name}\n\tmov.u32 $0, %clock;"


def _emit(asm, semantic):
    return tl.inline_asm_elementwise(asm, "=r", [], dtype=tl.int32, is_pure=False, pack=1,
                                     _semantic=semantic)


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
    return _emit(asm, semantic)


@builtin
def enter_scope(name: tl.constexpr, _semantic=None):
    record(is_start=True, scope_name=name, semantic=_semantic)


@builtin
def exit_scope(name: tl.constexpr, _semantic=None):
    record(is_start=False, scope_name=name, semantic=_semantic)


class _EventType(tl.base_type):
    """Front-end type of an event: one i32 IR value, with the event's name in
    the type, so that an event passed through a loop, a call or a partition
    argument comes back as the same event (and specializations of a callee
    taking different events differ)."""

    def __init__(self, name: str):
        self.name = name

    def _unflatten_ir(self, handles, cursor):
        return Event(handles[cursor], self.name), cursor + 1

    def _flatten_ir_types(self, builder, out):
        tl.int32._flatten_ir_types(builder, out)

    def __eq__(self, other):
        return isinstance(other, _EventType) and other.name == self.name

    def __hash__(self):
        return hash((_EventType, self.name))

    def mangle(self):
        return "PEvent" + self.name.encode().hex()

    def __str__(self):
        return f"proton.event<{self.name}>"


class Event(tl.base_value):
    """Opaque event returned by :func:`allocate_event`; consumed only by
    :func:`start_event` and :func:`end_event`."""

    def __init__(self, handle, name: str):
        self.handle = handle
        self.name = name
        self.type = _EventType(name)

    def _flatten_ir(self, handles):
        handles.append(self.handle)

    def _set_name(self, builder, name):
        pass


@builtin
def allocate_event(name: tl.constexpr, _semantic=None):
    """A new event named `name` (one id in the kernel's scope table)."""
    name = tl._unwrap_if_constexpr(name)
    _check_name(name, "event")
    # the value itself is a constant: the marker text names the event
    return Event(_semantic.builder.get_int32(0), name)


def record_event(event, is_start: bool, semantic):
    if not isinstance(event, Event):
        raise TypeError("expected an event returned by allocate_event, not "
                        f"{type(event).__name__}")
    asm = marker_text(bool(is_start), event.name, EVENT_PREFIX)
    if not flags.instrumentation_on:
        return None
    return _emit(asm, semantic)


@builtin
def start_event(event, _semantic=None):
    record_event(event, True, _semantic)


@builtin
def end_event(event, _semantic=None):
    record_event(event, False, _semantic)


class scope:

    def __init__(self, name: str, _semantic=None):
        self.name = name
        self.semantic = _semantic

    def __enter__(self):
        enter_scope(self.name, _semantic=self.semantic)

    def __exit__(self, exc_type, exc_value, traceback):
        exit_scope(self.name, _semantic=self.semantic)
