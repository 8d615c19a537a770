"""Proton 3.9's ``triton.profiler._rocm``: on AMD machines whose ROCm comes
from TheRock wheels (the ``rocm_sdk`` package), Proton points Triton at one
coherent set of ROCm libraries before its own library loads. cproton has no
ROCm backend, so it only answers the question: ``find_therock_rocm_libraries``
says which TheRock libraries exist (None without TheRock) and
``configure_runtime`` changes nothing and returns None, as Proton's does when
TheRock is absent."""
import functools
from pathlib import Path
from typing import Dict, Optional

_THEROCK_LIBRARIES = ("amdhip64", "rocprofiler-sdk", "rocprofiler-sdk-roctx", "roctracer64", "roctx64")


@functools.lru_cache
def find_therock_rocm_libraries() -> Optional[Dict[str, str]]:
    """{library: path} of TheRock's ROCm runtime libraries, None when the
    rocm_sdk package or one of them (HSA included) is missing."""
    try:
        import rocm_sdk
        found = {name: str(rocm_sdk.find_libraries(name)[0]) for name in _THEROCK_LIBRARIES}
    except (ImportError, FileNotFoundError, IndexError):
        return None
    hsa = Path(found["amdhip64"]).parent / "libhsa-runtime64.so.1"
    if not hsa.is_file():
        return None
    found["hsa-runtime64"] = str(hsa)
    return found


def configure_runtime():
    """Proton 3.9 returns a handle of the HSA runtime it preloaded, or None
    without TheRock. cproton profiles no ROCm device: always None, and the
    environment is left alone."""
    find_therock_rocm_libraries()
    return None
