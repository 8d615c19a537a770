"""The instrumentation hook (``start(backend="instrumentation", mode=...)``).

Proton lowers its record ops through MLIR passes inside Triton. cproton
lowers the ``cproton.language`` markers at PTX level instead, using only
Triton's public hooks:

* a stages-inspection hook wraps the ``ptx`` stage: the C pass
  (``cproton_ptx_instrument``) rewrites the PTX of the selected kernels and
  the kernel's metadata gets ``profile_scratch_size`` (bytes per CTA), the
  alignment, and ``cproton_layout`` (scope table and buffer layout, so a
  binary from Triton's cache is decoded correctly in a later process);
* ``knobs.compilation.instrumentation_mode`` is set to a string naming the
  mode and the kernel filter, so instrumented and plain binaries never mix
  in Triton's cache;
* the profile allocator hands out buffers from cproton's device pool
  (``cproton_instr_alloc``, zeroed on the launch's stream);
* the launch-exit hook reports each launch (``cproton_instr_launch``), which
  queues an asynchronous copy-back; a C thread decodes it off the launch
  path and adds per-scope metrics under the kernel's node.

Only one instrumentation hook is active at a time, as in Proton.

Proton's own dialect ops in IR that Triton parses (a ``.ttgir``/``.ttir``
file given through ``TRITON_KERNEL_OVERRIDE`` or ``triton.compile(path)``)
work too: while the hook is active the proton dialect is loaded into Triton's
contexts, and a wrapper of the ``llir`` stage turns ``proton.record`` /
``proton.event`` ops into the same markers (``proton_ir.py``).

Tree profiles sum in the kernel by default (``reduce`` not given, or
``reduce=kernel``): the pass keeps per-scope totals in registers and each
warp adds them to a few slots of the launch's buffer as it exits, so no
records are stored, copied back or decoded. Kernels compile with records
instead when something needs them: a trace session, the host buffer below
(set before ``start``), ``optimizations=time_shift``, events, more than 8
scopes, or ``reduce=device`` / ``reduce=host``. The choice is part of the
cache key; each kernel's layout says which it got.

``InstrumentationHook.enable_host_buffer = True`` makes each launch also
fill ``InstrumentationHook.host_buffer`` (a CPU ``torch.uint8`` tensor, or
``bytes`` without torch) with that launch's records in Proton's binary
host-buffer layout (``cproton_buffer_to_proton``): a debugging aid that
waits for the kernel, as Proton's does.
"""
import functools
import hashlib
import json
import re
import struct
import threading
import warnings
from typing import Any, Dict, Optional, Union

from .. import _compat, _cproton
from .. import mode as _mode
from .._log import CprotonWarning
from ..flags import flags
from . import proton_ir
from .hook import Hook

PROFILE_BUFFER_ALIGNMENT = 128

_include: Optional[str] = None
_exclude: Optional[str] = None

# Loaded instrumented kernels (CUfunction -> registered handle), process-wide:
# Triton loads a kernel once per process, so a later session (a new hook)
# must still find the kernels an earlier one saw loaded.
_handles: Dict[Any, int] = {}
# CUfunction -> (layout dict, warps per CTA), for the host buffer.
_layouts: Dict[Any, tuple] = {}
# CUfunction -> warps per CTA, for kernels selected for instrumentation that
# record nothing (no pl.scope, so no profile scratch): Proton 3.9 still builds
# a host buffer for them, the header alone.
_unscoped: Dict[Any, int] = {}


def set_filter(include: Optional[str] = None, exclude: Optional[str] = None) -> None:
    """Instrument only kernels whose name matches ``include`` and not ``exclude``
    (Python regular expressions, ``re.search``). Applies to kernels compiled after
    the call; the filter is part of the compile option, so Triton's cache keeps
    differently filtered binaries apart."""
    global _include, _exclude
    for value, what in ((include, "include"), (exclude, "exclude")):
        if value is not None:
            if not isinstance(value, str):
                raise TypeError(f"{what} must be a str or None")
            re.compile(value)
    _include, _exclude = include, exclude


def _selected(name: str) -> bool:
    if _include is not None and not re.search(_include, name):
        return False
    return _exclude is None or not re.search(_exclude, name)


def check_mode(mode_str: Optional[str], data: str = "tree") -> str:
    """Checks a mode string for a session recording `data`, before any
    session exists; returns its ``reduce`` ('auto', 'kernel', 'device' or
    'host'). ValueError for a mode cproton cannot run, with the message of
    the instrumentation backend's own parse (``cproton_instr_mode_parse``,
    the function a session's start runs, which also refuses reduce=kernel
    where records are needed)."""
    return _cproton.instr_mode_parse(mode_str, data == "trace")["reduce"]


def _records_why(layout: Dict[str, Any]) -> str:
    """Why a kernel asked to sum in the kernel (reduce=kernel) kept records."""
    kernel, parents = layout.get("kernel", "?"), layout.get("scope_parents", [])
    why = ("it has events, which pair across warps" if -2 in parents
           else f"its {len(parents)} scopes are more than the 8 that in-kernel sums keep in registers")
    return f"kernel '{kernel}': reduce=kernel, but {why}; its markers are stored as records"


def _knobs():
    import triton.knobs as knobs
    return knobs


def host_buffer_bytes(layout: Dict[str, Any], data: bytes, num_warps: int) -> bytes:
    """A profile buffer of ``layout`` (bytes copied from the device) in
    Proton's host-buffer layout: what ``InstrumentationHook.host_buffer``
    holds."""
    return _cproton.buffer_to_proton(layout, data, int(num_warps))


def header_only_host_buffer(mode: _mode.InstrumentationMode, num_warps: int) -> bytes:
    """Proton 3.9's host buffer of a launch with no profile scratch: the
    header of ``host_buffer_bytes``'s layout with no blocks (payload_size,
    block_num and scratch_mem_size 0); the unit ids are the sampled warps,
    or every warp when the mode samples none."""
    if mode.sampling_strategy == _mode.SAMPLING_STRATEGY.NONE:
        uids = list(range(int(num_warps)))
    else:
        uids = [int(w) for w in mode.sampling_options.split(",") if w.strip()]
    header = 40 + 4 * len(uids)
    fields = [1, 4, header, header, 0, 1, 0, int(num_warps), 0, len(uids), *uids]
    return struct.pack(f"<{len(fields)}I", *fields)


def _as_tensor(data: bytes):
    try:
        import torch
    except ImportError:
        return data
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


@functools.lru_cache(maxsize=1)
def _pass_build_id():
    """A digest of the extension that holds the PTX pass (read once)."""
    from .. import _cproton
    with open(_cproton.__file__, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:12]


def _stages_hook(previous, option: str, wrap):
    """The hook for ``knobs.runtime.add_stages_inspection_hook``, chained
    after ``previous``. Triton 3.6 only calls it as ``(backend, stages,
    options, language, capability)`` while building the pipeline; Triton 3.7
    and later also call it without arguments, before looking up the cache,
    for ``(key, hash)`` that it adds to the kernel's cache key."""

    def hook(*args):
        if not args:
            key, digest = previous() if previous is not None else ("", "")
            key = f"{key}{option}"
            return key, hashlib.sha256(f"{digest}{option}".encode()).hexdigest()
        if previous is not None:
            previous(*args)
        wrap(args[1])

    return hook


class InstrumentationHook(Hook):
    priority: int = 0
    active_count: int = 0
    enable_host_buffer: bool = False
    host_buffer: Optional[Any] = None

    def __init__(self, mode_obj: Union[None, str, _mode.InstrumentationMode], data: Optional[str] = None,
                 config: Optional[Dict[str, Any]] = None):
        self.data = data or "tree"
        # `config`: the session's mode as its backend parsed it, once, when
        # the session started (start() passes _cproton.session_instr_config).
        # Proton's API also builds a hook with no session
        # (HookManager.register(InstrumentationHook(mode), ...)): that one is
        # validated by the same C function, cproton_instr_mode_parse. The
        # reduce key lives only in mode strings (str(self.mode) drops it).
        if mode_obj is not None and not isinstance(mode_obj, (str, _mode.BaseMode)):
            raise TypeError("mode must be a str")
        self._parsed = config if config is not None else _cproton.instr_mode_parse(
            mode_obj if mode_obj is None or isinstance(mode_obj, str) else str(mode_obj), self.data == "trace")
        self.mode: _mode.InstrumentationMode = (
            mode_obj if isinstance(mode_obj, _mode.InstrumentationMode)
            else _mode.from_canonical(self._parsed["canonical"]))
        self.mode_str = str(self.mode)
        self.reduce = self._parsed["reduce"]
        self._warned_host_buffer = False
        self.handles = _handles
        self.local = threading.local()
        self._saved = None
        self._undo_dialect = None

    def sums_in_kernel(self) -> bool:
        """Whether kernels compiled now sum in the kernel (no records): a
        tree profile, reduce unset or ``kernel``, and nothing that needs
        records (the host buffer, time_shift)."""
        # the C rule's answer for both values of the host-buffer switch,
        # from the one parse (the switch may change after start)
        return self._parsed["sums_in_kernel_host_buffer" if InstrumentationHook.enable_host_buffer
                            else "sums_in_kernel"]

    # ---- activation -----------------------------------------------------

    def activate(self):
        if InstrumentationHook.active_count > 0:
            raise RuntimeError("Only one instance of the instrumentation hook can be active at a time.")
        # before anything else changes: Triton 3.9 refuses a second
        # registration (Proton's own hook active)
        self._undo_dialect = proton_ir.install()
        InstrumentationHook.active_count += 1
        flags.instrumentation_on = True
        knobs = _knobs()
        from triton.runtime._allocation import _profile_allocator
        self._saved = (knobs.runtime.add_stages_inspection_hook, knobs.compilation.instrumentation_mode,
                       _profile_allocator.get())
        previous = self._saved[0]

        # the marker text and the build of the PTX pass are part of the key:
        # kernels cached by another cproton (other markers, another pass) are
        # compiled again rather than loaded with a stale lowering
        from ..language import EVENT_PREFIX, marker_text
        text = marker_text(True, "x") + marker_text(True, "x", EVENT_PREFIX)
        markers = hashlib.sha1(text.encode()).hexdigest()[:12]
        option = (f"cproton:{self.mode_str}:include={_include}:exclude={_exclude}"
                  f":reduce={self.reduce}:sums={int(self.sums_in_kernel())}:markers={markers}"
                  f":pass={_pass_build_id()}")
        knobs.runtime.add_stages_inspection_hook = _stages_hook(previous, option, self._wrap_stages)
        knobs.compilation.instrumentation_mode = option
        from triton.runtime._allocation import set_profile_allocator
        set_profile_allocator(self._allocate)

    def deactivate(self):
        if InstrumentationHook.active_count == 0:
            return
        InstrumentationHook.active_count -= 1
        flags.instrumentation_on = False
        if self._saved is not None:
            knobs = _knobs()
            from triton.runtime._allocation import set_profile_allocator
            knobs.runtime.add_stages_inspection_hook, knobs.compilation.instrumentation_mode, allocator = self._saved
            set_profile_allocator(allocator)
            self._saved = None
        if self._undo_dialect is not None:
            self._undo_dialect()
            self._undo_dialect = None
        InstrumentationHook.host_buffer = None
        _cproton.instr_flush()

    # ---- compile time ---------------------------------------------------

    def _wrap_stages(self, stages) -> None:
        self._wrap_llir_stage(stages)
        self._wrap_ptx_stage(stages)

    @staticmethod
    def _wrap_llir_stage(stages) -> None:
        """Proton's dialect ops in the module (an overridden .ttgir/.ttir)
        become cproton's markers before the module is lowered to LLVM."""
        if "llir" not in stages:
            return
        make_llir = stages["llir"]

        def llir_stage(src, metadata):
            try:
                src = proton_ir.lower(src)
            except proton_ir.ProtonOpError as e:
                raise RuntimeError(f"cproton could not lower a proton op: {e}") from e
            return make_llir(src, metadata)

        stages["llir"] = llir_stage

    def _wrap_ptx_stage(self, stages) -> None:
        if "ptx" not in stages:
            return
        make_ptx = stages["ptx"]
        mode_str = self.mode_str

        def ptx_stage(src, metadata):
            ptx = make_ptx(src, metadata)
            name = metadata.get("name", "")
            if not _selected(name):
                return ptx
            try:
                out, layouts = _cproton.instrument_ptx(ptx, mode_str, int(metadata.get("num_warps") or 0),
                                                       int(metadata.get("shared") or 0),
                                                       int(self.sums_in_kernel()))
            except ValueError as e:
                raise RuntimeError(f"cproton could not instrument kernel '{name}': {e}. If the kernel "
                                   "uses warp specialization, keep pl scopes out of the specialized loop "
                                   "or exclude the kernel with cproton.hooks.instrumentation.set_filter"
                                   ) from e
            if not layouts:
                metadata["cproton_unscoped"] = True
                return ptx
            layout = layouts[0]
            if layout.get("warning"):
                warnings.warn(layout["warning"], CprotonWarning, stacklevel=2)
            if self.reduce == "kernel" and not layout.get("aggregate"):
                warnings.warn(_records_why(layout), CprotonWarning, stacklevel=2)
            metadata["profile_scratch_size"] = layout["per_cta_bytes"]
            metadata["profile_scratch_align"] = PROFILE_BUFFER_ALIGNMENT
            metadata["cproton_layout"] = layout
            return out

        stages["ptx"] = ptx_stage

    def init_handle(self, module: Any, function: Any, name: str, metadata_group: Dict[str, str], hash: str) -> None:
        if not function or function in self.handles:
            return
        path = next((p for key, p in metadata_group.items() if key.endswith(".json")), None)
        if path is None:
            return
        with open(path) as f:
            meta = json.load(f)
        layout = meta.get("cproton_layout")
        if not layout and meta.get("cproton_unscoped"):
            _unscoped[function] = int(meta.get("num_warps") or 0)
        if layout:
            self.handles[function] = _cproton.instr_register(name, layout)
            _layouts[function] = (layout, int(meta.get("num_warps") or 0))

    # ---- launch time ----------------------------------------------------

    def _allocate(self, size: int, alignment: int, stream: Optional[int]):
        stream = int(stream or 0)
        ptr = _cproton.instr_alloc(size, stream)
        self.local.pending = (ptr, size, stream)
        return ptr

    def enter(self, metadata) -> None:
        if InstrumentationHook.enable_host_buffer:
            InstrumentationHook.host_buffer = None

    def exit(self, metadata) -> None:
        pending = getattr(self.local, "pending", None)
        if pending is None:
            self._header_only_host_buffer(metadata)
            return
        self.local.pending = None
        ptr, size, stream = pending
        function = metadata.data.get("function") if metadata is not None else None
        handle = self.handles.get(function)
        if handle is None:
            _cproton.instr_release(ptr)
            return
        if InstrumentationHook.enable_host_buffer and function in _layouts:
            layout, num_warps = _layouts[function]
            if layout.get("aggregate"):
                self._warn_no_records(layout.get("kernel", "?"))
            else:
                raw = _cproton.instr_read(ptr, size, stream)
                InstrumentationHook.host_buffer = _as_tensor(host_buffer_bytes(layout, raw, num_warps))
        _cproton.instr_launch(handle, ptr, size, stream)

    def _header_only_host_buffer(self, metadata) -> None:
        """Proton 3.9 fills the host buffer of a kernel with no profile
        scratch with the header alone; Proton 3.6 fails on it (a division
        by zero), so cproton 3.6 leaves it None."""
        if not (InstrumentationHook.enable_host_buffer and _compat.is_39()):
            return
        function = metadata.data.get("function") if metadata is not None else None
        if function in _unscoped:
            InstrumentationHook.host_buffer = _as_tensor(header_only_host_buffer(self.mode, _unscoped[function]))

    def _warn_no_records(self, kernel: str) -> None:
        if not self._warned_host_buffer:
            self._warned_host_buffer = True
            warnings.warn(f"kernel '{kernel}' was compiled with in-kernel sums (no records), so it has no host "
                          "buffer: set InstrumentationHook.enable_host_buffer before proton.start()",
                          CprotonWarning, stacklevel=3)
