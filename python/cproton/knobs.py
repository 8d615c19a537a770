"""Triton's Proton knobs and environment variables: the one place the Python
package reads the knobs (their variables are rows of the C configuration
table, src/core/config_table.c, read through cproton._config; docs/python.md
has both).

| knob (``triton.knobs.proton.``) | environment | default | effect |
|---|---|---|---|
| ``disable`` | ``TRITON_PROTON_DISABLE`` | off | ``start`` returns None and records nothing |
| ``enable_nvtx`` | ``TRITON_ENABLE_NVTX`` | on | NVTX ranges become scopes (read at each backend start) |
| ``cupti_lib_dir`` | ``TRITON_CUPTI_LIB_PATH`` | see below | the directory searched first for libcupti.so |

As Proton's ``start`` does, :func:`export` copies every knob that has a
value into its environment variable when that variable is unset, so the C
library (which reads the environment) sees what the knobs say. One
difference: Triton's default for ``cupti_lib_dir`` (the CUPTI bundled in
Triton's wheel) is exported only when set explicitly; otherwise cproton's
own search (docs/cupti.md) picks the CUPTI of the installed CUDA.

Without Triton the knobs are read from the environment alone, with Proton's
boolean spelling: "1", "true", "on" (any case) are true.

One setting follows the Proton version rather than a knob: inside CUDA
graphs, Proton 3.9 names a kernel launched under the launch hook by the
hook's name, Proton 3.6 by the kernel's own. :func:`export` sets
``CPROTON_GRAPH_KERNEL_NAMES`` ("hook" or "kernel", read by the C library at
each backend start) when unset, from :func:`graph_kernel_names`.
"""
import os
from typing import Any, Optional

from . import _config, _cproton


def _default(kind: str, text: str):
    if kind == "bool":
        return text == "1"
    return text or None


# knob attribute -> (environment variable, default without Triton): the rows
# of the C configuration table (src/core/config_table.c) that name a knob.
KNOBS = {knob: (name, _default(kind, default))
         for name, kind, default, knob, _reader, _doc, _role in _cproton.config_table() if knob}

# knobs whose Triton default is not exported (see the module docstring)
_EXPORT_ONLY_IF_SET = {"cupti_lib_dir"}


def _triton_knobs():
    """triton.knobs.proton, or None when Triton (3.4+) is not importable."""
    try:
        from triton import knobs
    except ImportError:
        return None
    return getattr(knobs, "proton", None)


def _env_bool(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "on")


def get(name: str) -> Any:
    """The value of knob `name` ("disable", "enable_nvtx", "cupti_lib_dir"):
    Triton's knob when Triton is importable, else its environment variable."""
    env, default = KNOBS[name]
    knobs = _triton_knobs()
    if knobs is not None and hasattr(knobs, name):
        return getattr(knobs, name)
    value = _config.get(env)
    if value is None:
        return default
    return _env_bool(value) if isinstance(default, bool) else value


def disabled() -> bool:
    """Whether profiling is switched off (``triton.knobs.proton.disable``)."""
    return bool(get("disable"))


def _explicit(knobs, name: str) -> Optional[Any]:
    """The knob's value when it differs from Triton's default, else None."""
    value = getattr(knobs, name)
    desc = getattr(knobs, "knob_descriptors", {}).get(name)
    default = getattr(desc, "default", None) if desc is not None else None
    return None if value == default else value


def graph_kernel_names() -> str:
    """How kernels launched under the launch hook are named inside CUDA
    graphs: "hook" (the hook's name, Proton 3.9) or "kernel" (the kernel's
    own name, Proton 3.6)."""
    from . import _compat  # the one place that decides the Proton version
    return "hook" if _compat.is_39() else "kernel"


def export() -> None:
    """Copies the knobs into their unset environment variables (Proton's
    ``_check_env``), so the C library reads the same settings; sets
    CPROTON_GRAPH_KERNEL_NAMES from the Proton version followed when unset."""
    if _config.get("CPROTON_GRAPH_KERNEL_NAMES") is None:
        os.environ["CPROTON_GRAPH_KERNEL_NAMES"] = graph_kernel_names()
    knobs = _triton_knobs()
    if knobs is None:
        return
    for name, (env, _) in KNOBS.items():
        if _config.get(env) is not None or not hasattr(knobs, name):
            continue
        value = _explicit(knobs, name) if name in _EXPORT_ONLY_IF_SET else getattr(knobs, name)
        if value is None:
            continue
        os.environ[env] = ("true" if value else "false") if isinstance(value, bool) else str(value)
