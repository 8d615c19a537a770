"""Proton's dialect ops in IR that Triton parses (``backend="instrumentation"``).

Proton's intra-kernel workflow lets a user edit a dumped ``.ttgir`` (or
``.ttir``) file, insert ``proton.record start "name"`` / ``proton.record end
"name"`` ops (and, from Triton 3.9, ``proton.allocate_event`` /
``proton.event``), and compile it again through ``TRITON_KERNEL_OVERRIDE`` or
``triton.compile(path)``. Two things make that work under Proton, and this
module does both for cproton:

* the ``proton`` dialect is loaded into every context Triton creates, or the
  file does not parse ("Dialect 'proton' not found"). Triton 3.6-3.8 ask
  ``CUDABackend.instrumentation.load_dialects(ctx)``; Triton 3.9 calls the
  ``load-dialects`` callback registered with
  ``triton._instrumentation.register_instrumentation`` (PR #11522).
  :func:`install` uses whichever the installed Triton has, and
  :func:`uninstall` puts back what was there.
* the ops are lowered. Proton lowers them through its own MLIR passes;
  cproton lowers markers at PTX level, so before the ``llir`` stage each op
  becomes the marker ``cproton.language`` emits for the same call
  (``pl.enter_scope("name")`` for ``proton.record start "name"``): the same
  side-effecting inline assembly, at the same place, with the op's location.
  The PTX pass then sees exactly what a ``pl``-instrumented kernel gives it,
  so the scopes, metrics and trace events are those of the equivalent
  ``pl`` kernel.

Triton's Python bindings cannot erase an op, so the lowering rewrites the
module's text (always printed in the ops' custom form, whatever form the
user wrote) and parses it back into the same context. Modules without a
proton op are returned untouched.
"""
import os
import re
import tempfile
from typing import Any, Callable, Dict, List, Optional, Tuple

# The custom forms MLIR prints (Proton's assembly formats):
#   proton.record start "name" loc(...)
#   %e = proton.allocate_event "name" : i32 loc(...)
#   proton.event start %e : i32 loc(...)
_RECORD = re.compile(r'^(\s*)proton\.record (start|end) "((?:[^"\\]|\\.)*)"(.*)$')
_ALLOCATE = re.compile(r'^(\s*)(%[^\s=]+) = proton\.allocate_event "((?:[^"\\]|\\.)*)" : i32(.*)$')
_EVENT = re.compile(r'^(\s*)proton\.event (start|end) (%\S+) : i32(.*)$')
# Any proton op at the start of a statement (not inside a string literal).
_ANY = re.compile(r'^\s*(?:%[^\s=]+(?::\d+)? = )?"?proton\.', re.M)
_OP_NAME = re.compile(r'"?(proton\.[A-Za-z_.]+)')


class ProtonOpError(ValueError):
    """A proton op cproton cannot lower; the message names the line."""


def has_proton_ops(text: str) -> bool:
    """Whether the printed module `text` holds an op of the proton dialect."""
    return _ANY.search(text) is not None


def _mlir_string(text: str) -> str:
    """`text` as an MLIR string literal body (newline and tab escaped as the
    printer writes them; marker names hold no quote or backslash)."""
    return text.replace("\n", "\\0A").replace("\t", "\\09")


def _marker_op(result: str, text: str, rest: str, indent: str) -> str:
    return (f'{indent}{result} = tt.elementwise_inline_asm "{_mlir_string(text)}" '
            f'{{constraints = "=r", packed_element = 1 : i32, pure = false}} -> i32{rest}')


def _marker(is_start: bool, name: str, event: bool, where: str) -> str:
    # cproton.language imports triton: loaded here, not when cproton is
    from ..language import EVENT_PREFIX, MARKER_PREFIX, marker_text
    try:
        return marker_text(is_start, name, EVENT_PREFIX if event else MARKER_PREFIX)
    except ValueError as e:
        raise ProtonOpError(f"{where}: {e}") from None


class _Lowering:
    """One pass over a module's lines: fresh result names, the events seen."""

    def __init__(self, text: str, source: str):
        self.text = text
        self.source = source
        self.events: Dict[str, str] = {}
        self.n = 0

    def fresh(self) -> str:
        while True:
            self.n += 1
            name = f"%cproton_marker_{self.n}"
            if name not in self.text:
                return name

    def line(self, lineno: int, line: str) -> str:
        where = f"{self.source} {lineno}"
        m = _RECORD.match(line)
        if m:
            indent, kind, name, rest = m.groups()
            return _marker_op(self.fresh(), _marker(kind == "start", name, False, where), rest, indent)
        m = _ALLOCATE.match(line)
        if m:
            indent, value, name, rest = m.groups()
            _marker(True, name, True, where)  # checks the name here, where the op is
            self.events[value] = name
            # an opaque constant, as pl.allocate_event's value: the markers name the event
            return f"{indent}{value} = arith.constant 0 : i32{rest}"
        m = _EVENT.match(line)
        if m:
            indent, kind, value, rest = m.groups()
            if value not in self.events:
                raise ProtonOpError(f"{where}: proton.event uses {value}, which no proton.allocate_event above "
                                    "defines: cproton lowers an event only where its value comes straight from "
                                    "proton.allocate_event (use cproton.language events across partitions)")
            marker = _marker(kind == "start", self.events[value], True, where)
            return _marker_op(self.fresh(), marker, rest, indent)
        if _ANY.match(line):
            op = _OP_NAME.search(line).group(1)
            raise ProtonOpError(f"{where}: cproton lowers proton.record, proton.allocate_event and proton.event; "
                                f"'{op}' is not supported: {line.strip()[:120]}")
        return line


def lower_text(text: str, source: str = "line") -> Tuple[str, int]:
    """The printed module `text` with every proton op replaced by cproton's
    marker; returns the new text and how many ops were replaced. Raises
    ProtonOpError naming `source` and the line for an op it cannot lower
    (another proton op, an event value of unknown origin, a name a marker
    cannot carry)."""
    lowering = _Lowering(text, source)
    out: List[str] = []
    replaced = 0
    for lineno, line in enumerate(text.split("\n"), 1):
        new = lowering.line(lineno, line)
        replaced += new is not line
        out.append(new)
    return "\n".join(out), replaced


def _parse(text: str, context: Any):
    from triton._C.libtriton import ir
    fd, path = tempfile.mkstemp(suffix=".ttgir", prefix="cproton-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        module = ir.parse_mlir_module(path, context)
    finally:
        os.unlink(path)
    module.context = context
    return module


def _entry(module: Any) -> str:
    try:
        return module.get_entry_func_name()
    except Exception:  # a module without a public function: name the IR only
        return ""


def lower(module: Any) -> Any:
    """`module` (a TTGIR ``ir.module``) with its proton ops lowered to
    cproton's markers, parsed back into the module's context; `module`
    itself when it holds none. ProtonOpError as for :func:`lower_text`."""
    text = str(module)
    if not has_proton_ops(text):
        return module
    kernel = _entry(module)
    lowered, _ = lower_text(text, f"kernel '{kernel}', line" if kernel else "line")
    return _parse(lowered, module.context)


# ---- loading the dialect ------------------------------------------------


class _Instrumentation:
    """What Triton 3.6-3.8 call as ``CUDABackend.instrumentation``: the
    proton dialect for every context, no passes (cproton's lowering is the
    ``llir`` stage wrapper)."""

    def load_dialects(self, ctx) -> None:
        from triton._C.libtriton import proton
        proton.load_dialects(ctx)

    def patch(self, ir: str, pm, context) -> None:
        self.load_dialects(context)


def _registry():
    try:
        from triton import _instrumentation
    except ImportError:
        return None
    return _instrumentation


def install() -> Optional[Callable[[], None]]:
    """Loads the proton dialect into every context Triton creates from now
    on; returns the function that undoes it (None when this Triton has no
    NVIDIA backend). RuntimeError when another instrumentation (Proton's
    own hook) holds Triton 3.9's registration."""
    registry = _registry()
    if registry is not None and hasattr(registry, "register_instrumentation"):
        from triton._C.libtriton import proton
        registry.register_instrumentation(point="load-dialects", backend="nvidia", callback=proton.load_dialects)
        return lambda: registry.unregister_instrumentation(point="load-dialects", backend="nvidia")
    from triton.backends import backends
    if "nvidia" not in backends:
        return None
    compiler = backends["nvidia"].compiler
    saved = getattr(compiler, "instrumentation", None)
    compiler.instrumentation = _Instrumentation()

    def undo():
        compiler.instrumentation = saved

    return undo
