"""The Triton launch hook (``start(hook="triton")``), as in Proton's
``triton.profiler.hooks.launch``: before each Triton kernel launch the
kernel's ``launch_metadata`` is evaluated (under the
``__proton_launch_metadata`` state) and an op named after the kernel is
opened with its numeric keys as metrics -- ``flops8/16/32/64``, ``flops``,
``bytes`` and any other int/float key except ``name``, ``function`` and
``stream``; the op is closed after the launch. The body runs in C
(``_cproton.launch_enter`` / ``launch_exit``).

Like Proton's, the module's ContextVars ``op_name`` and ``id`` hold the
name of the calling thread's (or task's) last hooked launch and a number
unique to that launch in the process (Proton's is a scope id; cproton's a
launch counter).

Kernel-name filters: ``set_filter(include=..., exclude=...)`` (a cproton
extension) takes regular expressions (``re.search``); Proton 3.9's
``LaunchHook().configure(include=..., exclude=...)`` the same with
``re.match``, as Proton 3.9 does. A kernel is hooked when it matches
`include` (if given) and does not match `exclude`; kernels that are not
hooked are still profiled, without launch metadata. Under Proton 3.9
(cproton._compat) the filter sees the kernel's compiled name before its
launch metadata is computed, so a filtered kernel's ``launch_metadata``
function is never called, then the name the metadata gives.

Under Proton 3.9 the metadata is computed under the state
``__proton_launch_metadata:<kernel>`` (frames ``__proton_launch_metadata`` /
``<kernel>``), under 3.6 under ``__proton_launch_metadata``.
"""
import re
from contextvars import ContextVar
from typing import Optional

from .. import _cproton
from ..state import COMPUTE_METADATA_SCOPE_NAME  # noqa: F401 (Proton 3.6's place for it)
from . import facts
from .hook import Hook

op_name = ContextVar("op_name", default=None)
id = ContextVar("id", default=None)
_cproton.set_launch_vars(op_name, id)


_lazy_registered = False


def _lazy_get(self):
    # Triton's LazyDict.get (3.4-3.9), which _cproton runs in C without a
    # Python frame per launch when Triton's own is this very code.
    for func, args in self.extras:
        self.data = self.data | func(*args)
    self.extras.clear()
    return self.data


def _register_lazy_dict() -> None:
    """At the first activation (Triton is imported only once a hook is)."""
    global _lazy_registered
    if _lazy_registered:
        return
    _lazy_registered = True
    try:
        from triton.compiler.compiler import LazyDict
    except ImportError:
        return
    code, ref = getattr(LazyDict.get, "__code__", None), _lazy_get.__code__
    if code is not None and (code.co_code, code.co_names, code.co_varnames) == (ref.co_code, ref.co_names,
                                                                                ref.co_varnames):
        _cproton.set_lazy_dict(LazyDict, LazyDict.get)



def set_filter(include: Optional[str] = None, exclude: Optional[str] = None, *, anchored: bool = False) -> None:
    """Restricts the launch hook to kernels whose name matches `include`
    and not `exclude` (regular expressions; None: no restriction).
    `anchored`: match at the start of the name (``re.match``, Proton 3.9's
    ``LaunchHook.configure``) instead of anywhere (``re.search``)."""
    for what, value in (("include", include), ("exclude", exclude)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{what} must be a str regular expression or None")
    try:
        inc = re.compile(include) if include is not None else None
        exc = re.compile(exclude) if exclude is not None else None
    except re.error as e:
        raise ValueError(f"bad kernel-name regular expression: {e}") from None
    if inc is None and exc is None:
        _cproton.set_launch_filter(None)
        return

    find = (lambda r, name: r.match(name)) if anchored else (lambda r, name: r.search(name))

    def admit(name: str) -> bool:
        return (inc is None or find(inc, name) is not None) and (exc is None or find(exc, name) is None)

    _cproton.set_launch_filter(admit)


class LaunchHook(Hook):
    # Highest priority
    priority = 100
    # This is a singleton class
    _instance = None
    flops_width = [8, 16, 32, 64]
    metrics = [f"flops{width}" for width in flops_width] + ["bytes"] + ["flops"]

    def __init__(self, *args, **kwargs):
        pass

    def __new__(cls, *args, **kwargs):
        if cls._instance is None:
            cls._instance = super(LaunchHook, cls).__new__(cls)
        return cls._instance

    # Proton 3.9's LaunchHook helpers, with its semantics (cproton's hook
    # does this work in C, _cproton.launch_enter).
    _reserved_metadata_keys = {"name", "function", "stream"}

    def _matches_kernel_name(self, kernel_name) -> bool:
        """Whether the configured filter admits `kernel_name` (None: yes)."""
        return kernel_name is None or _cproton.launch_admits(kernel_name)

    @staticmethod
    def _is_supported_metric_value(value) -> bool:
        """A number (bools included) or a tensor (anything with data_ptr)."""
        from numbers import Number
        return value is not None and (hasattr(value, "data_ptr") or isinstance(value, Number))

    @staticmethod
    def _extract_metrics(lazy_metadata: dict) -> dict:
        """The metric entries of a launch's metadata, as Proton 3.9 picks them."""
        return {k: v for k, v in lazy_metadata.items()
                if k not in LaunchHook._reserved_metadata_keys and LaunchHook._is_supported_metric_value(v)}

    def configure(self, *, include: Optional[str] = None, exclude: Optional[str] = None) -> None:
        """Proton 3.9's kernel filter: hook only kernels whose compiled name
        matches `include` and not `exclude` (``re.match``); None, None
        removes it. The filter belongs to the hook (a singleton), so it
        holds for every session until configured again."""
        set_filter(include, exclude, anchored=True)

    def init_handle(self, module, function, name: str, metadata_group: dict, hash: str) -> None:
        """Once per loaded kernel: its compile facts for the advisor
        (hooks/facts.py, docs/advisor.md); nothing per launch."""
        facts.record(name, metadata_group)

    def activate(self):
        _register_lazy_dict()

    def deactivate(self):
        pass

    enter = staticmethod(_cproton.launch_enter)
    exit = staticmethod(_cproton.launch_exit)
