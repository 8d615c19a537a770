"""cproton: a lightweight multi-level GPU profiler (C library) with the
Python API of Triton's Proton profiler (``triton.profiler``, Triton 3.6 to
3.9; cproton._compat decides whose behaviour it follows).

    import cproton as proton
    proton.start("run", hook="triton")
    with proton.scope("fwd"):
        ...
    proton.finalize()
"""
# ruff: noqa
from . import _cproton
from . import _compat  # decides which Proton (3.6 or 3.9) cproton follows
from ._log import CprotonWarning
from .scope import scope, cpu_timed_scope, enter_scope, exit_scope
from .state import state, enter_state, exit_state, metadata_state
from .profile import (
    start,
    activate,
    deactivate,
    finalize,
    profile,
    DEFAULT_PROFILE_NAME,
)
from . import context, specs, mode, data, knobs, metric, _rocm
from .advise import advise  # the performance advisor (docs/advisor.md)
from ._rocm import configure_runtime  # Proton 3.9 exports it (ROCm setup; nothing to do here)

__version__ = _cproton.version
