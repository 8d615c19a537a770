"""Builds the cproton package: the C library sources and the CPython
extension (python/cproton/_cproton.c, python/cproton/_pyframes.c) are
compiled into one extension module, so `pip install .` needs only a C
compiler and zlib headers (no CMake, works offline with
--no-build-isolation). The CUPTI backend is compiled in when the CUDA and
CUPTI headers are found (CUDA_HOME, CUDA_PATH or /usr/local/cuda), exactly
as the CMake build decides; libcuda and libcupti are dlopen'ed at run time.
"""
import glob
import os

from setuptools import Extension, setup

ROOT = os.path.dirname(os.path.abspath(__file__))


def rel(*parts):
    return os.path.join(*parts)


def library_sources():
    dirs = ["src/core", "src/io", "src/instrument", "src/backend",
            "src/backend/fake", "src/backend/instrumentation"]
    srcs = []
    for d in dirs:
        srcs += sorted(glob.glob(os.path.join(ROOT, d, "*.c")))
    return srcs


def cuda_includes():
    """The include dirs holding cuda.h and cupti.h, or None (CMake's rule)."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    cupti = cuda = None
    for r in filter(None, roots):
        for sub in ("include", "extras/CUPTI/include"):
            d = os.path.join(r, sub)
            if cupti is None and os.path.exists(os.path.join(d, "cupti.h")):
                cupti = d
            if cuda is None and os.path.exists(os.path.join(d, "cuda.h")):
                cuda = d
    return (cupti, cuda) if cupti and cuda else None


def library_build():
    """Sources, include dirs and macros of the C library (CMake's rule)."""
    srcs = library_sources()
    macros = [("_GNU_SOURCE", "1")]
    incs = [os.path.join(ROOT, "include"), os.path.join(ROOT, "src")]
    cupti_srcs = sorted(glob.glob(os.path.join(ROOT, "src/backend/cupti/*.c")))
    cuda = cuda_includes()
    if cuda and cupti_srcs:
        srcs += cupti_srcs
        macros.append(("CPROTON_HAVE_CUPTI", "1"))
        incs += list(dict.fromkeys(cuda))
    return [os.path.relpath(s, ROOT) for s in srcs], incs, macros


COMMON = dict(libraries=["z", "dl", "m", "pthread"],
              extra_compile_args=["-std=gnu11", "-O2", "-fvisibility=hidden",
                                  "-Wall", "-Wno-unused-parameter"])


def extension():
    srcs, incs, macros = library_build()
    srcs += ["python/cproton/_cproton.c", "python/cproton/_pyframes.c", "python/cproton/_testing.c",
             "python/cproton/_instrument.c"]
    return Extension("cproton._cproton", sources=srcs, include_dirs=incs,
                     define_macros=macros, **COMMON)


def injection_library():
    """The C library alone, exporting cproton_* and InitializeInjection:
    what `cproton -- ./native_program` hands to CUDA_INJECTION64_PATH. It
    uses no Python symbols, so any process can load it."""
    srcs, incs, macros = library_build()
    return Extension("cproton.libcproton", sources=srcs, include_dirs=incs,
                     define_macros=macros + [("CPROTON_BUILDING", "1")], **COMMON)


# setuptools builds under build-python/, away from the CMake build/ folder.
setup(ext_modules=[extension(), injection_library()],
      options={"build": {"build_base": "build-python"}})
