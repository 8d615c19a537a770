"""The installed package is the one CMake built through scikit-build-core:
it carries the extension, libcproton.so for CUDA injection, the two tools and
the `cproton` console script, and `pip wheel` makes the same wheel offline."""
import ctypes
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import cproton
from cproton import _cproton
from cproton.proton import _injection_library

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_extension_and_injection_library_in_package():
    pkg = Path(cproton.__file__).parent
    assert Path(_cproton.__file__).parent == pkg
    lib = _injection_library()
    assert lib and Path(lib).parent == pkg and Path(lib).name == "libcproton.so"
    so = ctypes.CDLL(lib)
    assert so.InitializeInjection and so.cproton_session_start


def test_tools_installed_and_standalone():
    for tool in ("cproton-viewer", "cproton-instrument", "cproton"):
        assert (BIN / tool).exists(), f"{tool} not installed beside {sys.executable}"
    for tool in ("cproton-viewer", "cproton-instrument"):
        r = subprocess.run([str(BIN / tool), "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "usage" in r.stdout.lower(), r.stderr
        ldd = subprocess.run(["ldd", str(BIN / tool)], capture_output=True, text=True).stdout
        assert "libcproton" not in ldd  # linked statically: bin/ is away from the package


def test_pip_wheel_offline(tmp_path):
    """`pip wheel --no-build-isolation` works offline and packs everything."""
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_FIND_LINKS="")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                        "--no-deps", "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = tmp_path.glob("cproton-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "cproton/libcproton.so" in names
    assert any(n.startswith("cproton/_cproton.") and n.endswith(".so") for n in names)
    for tool in ("cproton-viewer", "cproton-instrument"):
        assert any(n.endswith(f".data/scripts/{tool}") for n in names), names
    assert not any(n.endswith((".c", ".h")) for n in names)
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert b"cproton = cproton.proton:main" in zipfile.ZipFile(wheel).read(entry[0])
    # test code stays out of the product (issue 25): no fake backend in the
    # library, no _testing.c bindings in the extension
    z = zipfile.ZipFile(wheel)
    ext = next(n for n in names if n.startswith("cproton/_cproton.") and n.endswith(".so"))
    assert b"_fake_launch" not in z.read(ext)
    assert b"cp_fake_launch" not in z.read("cproton/libcproton.so")
    assert b"cp_fake_backend" not in z.read(ext)
