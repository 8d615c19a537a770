"""Which Proton cproton behaves like: the one place that decides it.

Proton 3.9 (Triton 3.9's ``triton.profiler``) changed some of Proton 3.6's
behaviour: integer metrics are int64 in type errors, string metric values
are refused, user metrics may be named like kernel metrics ("count"), the
launch hook computes a kernel's metadata under the state
``__proton_launch_metadata:<kernel>`` (two frames), ``LaunchHook.configure``
filters kernels by name before their metadata is computed, the roofline
metrics have fixed types, ``start`` takes a Hook object, ``_select_backend``
takes no argument. cproton follows the Proton of the installed Triton:

- ``CPROTON_PROTON_VERSION`` ("3.6" or "3.9"; "3.7" and "3.8" mean 3.6) when
  set: Proton 3.9's tests run on a machine that has only Triton 3.6;
- else the installed Triton's version (read from its package metadata,
  without importing Triton): 3.9 or later gives 3.9, anything older 3.6;
- without Triton, 3.6.

The C library is told once, here (``cproton_set_proton_compat``); the
Python modules ask :func:`is_39`. docs/compatibility.md lists every
difference and why.
"""
import re
from typing import Optional, Tuple

from . import _config, _cproton

ENV = "CPROTON_PROTON_VERSION"
# the C library's cproton_proton_version values
_C_VALUE = {(3, 6): 306, (3, 9): 309}


def _parse(text: str, where: str) -> Tuple[int, int]:
    """(major, minor) of a version string; ValueError naming `where`."""
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    if not m:
        raise ValueError(f"{where}: '{text}' is not a version (expected e.g. 3.6 or 3.9)")
    return int(m.group(1)), int(m.group(2))


def installed_triton() -> Optional[str]:
    """The installed Triton's version string, or None without Triton."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("triton")
    except PackageNotFoundError:
        return None


def decide(env: Optional[str], triton_version: Optional[str]) -> Tuple[int, int]:
    """The Proton version to follow, (3, 6) or (3, 9), from the value of
    CPROTON_PROTON_VERSION (None: unset) and the installed Triton's version
    (None: no Triton). ValueError for a value that is not 3.6 to 3.9."""
    if env is not None and env.strip():
        wanted = _parse(env, ENV)
        if not (3, 6) <= wanted <= (3, 9):
            raise ValueError(f"{ENV}={env!r}: cproton follows Proton 3.6 to 3.9")
        return (3, 9) if wanted >= (3, 9) else (3, 6)
    if triton_version is None:
        return (3, 6)
    return (3, 9) if _parse(triton_version, "triton's version") >= (3, 9) else (3, 6)


def apply(version: Tuple[int, int]) -> None:
    """Makes `version` the one followed, here and in the C library."""
    global PROTON_VERSION
    _cproton.set_proton_compat(_C_VALUE[version])
    PROTON_VERSION = version


def is_39() -> bool:
    """Whether cproton behaves like Proton 3.9."""
    return PROTON_VERSION >= (3, 9)


PROTON_VERSION = (3, 6)
apply(decide(_config.get(ENV), installed_triton()))
