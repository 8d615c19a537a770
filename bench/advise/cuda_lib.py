"""Builds bench/advise/kernels.cu once with nvcc (sm_90, -lineinfo for PC
sampling's source lines) and loads it through ctypes."""
import ctypes
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
_lib = None


def load(build_dir):
    """The loaded library; compiled into build_dir unless already there and newer."""
    global _lib
    if _lib is not None:
        return _lib
    src = HERE / "kernels.cu"
    so = Path(build_dir) / "advise_kernels.so"
    if not so.exists() or so.stat().st_mtime < src.stat().st_mtime:
        so.parent.mkdir(parents=True, exist_ok=True)
        tmp = so.with_suffix(f".{os.getpid()}.so")
        subprocess.run([os.environ.get("NVCC", "nvcc"), "-O3", "-lineinfo", "-arch=sm_90", "-shared",
                        "-Xcompiler", "-fPIC", "-o", str(tmp), str(src)], check=True)
        tmp.replace(so)
    _lib = ctypes.CDLL(str(so))
    P, I, S, L = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_longlong
    sigs = {"launch_strided": [P, P, I, I, I, P], "launch_half_copy": [P, P, S, I, P],
            "launch_transpose": [P, P, I, I, P], "launch_smem": [P, P, S, I, P],
            "launch_chase": [P, P, I, I, I, I, P], "launch_tail": [P, I, L, I, P],
            "launch_poly": [P, P, I, I, I, P]}
    for name, args in sigs.items():
        getattr(_lib, name).argtypes = args
        getattr(_lib, name).restype = I
    return _lib


def call(fn, *args):
    """Calls a launcher; a CUDA error code becomes an exception."""
    rc = fn(*args)
    if rc != 0:
        raise RuntimeError(f"{fn.__name__}: CUDA error {rc}")
