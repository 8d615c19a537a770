"""Compile facts of Triton kernels for the performance advisor
(docs/advisor.md): read once per compiled kernel when Triton loads it
(``knobs.runtime.kernel_load_end_hook``, the launch hook's ``init_handle``;
kernels loaded before ``start`` once at ``start``), never per launch, and handed to the C core (``_cproton.kernel_fact``), which
writes them on every frame of the kernel in the profile.

From the kernel's metadata (``<name>.json`` of its ``metadata_group``):
num_warps, num_stages, num_ctas, shared; from the ``CompiledKernel`` that
calls the hook (Triton passes no register counts to it): n_regs, n_spills;
from its PTX and TTGIR: the MMA kind (wgmma / mma / tcgen05 / fma when a
``tt.dot`` got no tensor-core instruction / none), TMA use, the widest
global load (``ld.global`` or ``cp.async`` into shared memory) and store per
thread in bits (absent when there is none, e.g. TMA only), and the local
memory declared.
Triton's MLIR remarks are not collected (they go to stderr while compiling,
before any hook runs); ``triton.remarks`` stays absent.
"""
import json
import re
import sys
from typing import Dict, Optional

from .. import _cproton, _log

_ACCESS = re.compile(r"\b(ld|st)\.global((?:\.[\w:]+)*)")
_CP_ASYNC = re.compile(r"\bcp\.async\.c[ag]\.shared(?:::\w+)?\.global[.\w:]*\s+\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)")
_LOCAL = re.compile(r"\.local\s+(?:\.align\s+\d+\s+)?\.\w+\s+\w+\[(\d+)\]")
_DOT = re.compile(r"\btt\.dot\b|warp_group_dot|tc_gen5_mma|\btt\.dot_scaled\b")
_warned = False


def _access_bits(ptx: str, kind: str) -> int:
    """The widest global `kind` ("ld"/"st") per thread, in bits (0: none)."""
    best = 0
    for op, suffix in _ACCESS.findall(ptx):
        if op != kind:
            continue
        parts = suffix.split(".")
        vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d+", p)), 1)
        width = next((int(p[1:]) for p in reversed(parts) if re.fullmatch(r"[bfsu]\d+", p)), 0)
        best = max(best, vec * width)
    if kind == "ld":  # loads pipelined through shared memory: cp.async of N bytes
        best = max([best] + [8 * int(n, 0) for n in _CP_ASYNC.findall(ptx)])
    return best


def mma_kind(ptx: str, ttgir: str) -> str:
    if "wgmma.mma_async" in ptx:
        return "wgmma"
    if "tcgen05.mma" in ptx:
        return "tcgen05"
    if re.search(r"\bmma\.sync\b", ptx):
        return "mma"
    return "fma" if _DOT.search(ttgir) else "none"


def from_ir(ptx: str, ttgir: str) -> Dict[str, object]:
    """The facts the PTX and TTGIR of one kernel give."""
    out = {
        "triton.mma": mma_kind(ptx, ttgir),
        "triton.tma": int("cp.async.bulk.tensor" in ptx),
        "triton.local_bytes": sum(int(n) for n in _LOCAL.findall(ptx)),
    }
    for kind in ("ld", "st"):  # absent when the kernel has none (TMA only)
        bits = _access_bits(ptx, kind)
        if bits:
            out[f"triton.{kind}_bits"] = bits
    return out


def from_metadata(md: dict) -> Dict[str, object]:
    out: Dict[str, object] = {}
    for key in ("num_warps", "num_stages", "num_ctas", "shared"):
        if isinstance(md.get(key), int):
            out["triton." + key] = md[key]
    out["triton.config"] = ",".join(f"{k}={md[k]}" for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                                    if md.get(k) is not None) + f",hash={str(md.get('hash', ''))[:12]}"
    return out


def _compiled_kernel(metadata_group) -> Optional[object]:
    """The CompiledKernel whose _init_handles called the hook (n_regs and
    n_spills are set just before the call)."""
    f = sys._getframe(1)
    for _ in range(8):
        if f is None:
            return None
        obj = f.f_locals.get("self")
        if obj is not None and getattr(obj, "metadata_group", None) is metadata_group:
            return obj
        f = f.f_back
    return None


def _read(metadata_group, suffix: str) -> str:
    for key, path in metadata_group.items():
        if key.endswith(suffix):
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
    return ""


def collect(name: str, metadata_group: Dict[str, str], kernel=None) -> Dict[str, object]:
    """Only what the files give: a kernel without PTX (another backend) or
    without metadata gets no guessed facts."""
    md_text = _read(metadata_group, ".json")
    facts = from_metadata(json.loads(md_text)) if md_text else {}
    ptx = _read(metadata_group, ".ptx")
    if ptx:
        facts.update(from_ir(ptx, _read(metadata_group, ".ttgir")))
    ck = kernel if kernel is not None else _compiled_kernel(metadata_group)
    for attr in ("n_regs", "n_spills"):
        value = getattr(ck, attr, None)
        if isinstance(value, int):
            facts["triton." + attr] = value
    return facts


def record(name: str, metadata_group: Dict[str, str], kernel=None) -> None:
    """Hands kernel `name`'s facts to the core. A failure never reaches the
    launch: it is reported once as a warning (the advisor then lists the
    rules that need these facts as unavailable)."""
    global _warned
    try:
        for fact, value in collect(name, metadata_group, kernel).items():
            _cproton.kernel_fact(name, fact, value)
    except Exception as e:  # noqa: BLE001 - the user's launch must go on
        if not _warned:
            _warned = True
            _log.warn(f"compile facts of kernel {name!r} not recorded ({type(e).__name__}: {e}); "
                      "the advisor lists the rules that need them as unavailable")


def loaded_kernels():
    """Every CompiledKernel Triton has loaded onto a device, found in one pass
    over the garbage collector's objects (Triton keeps no list of them);
    nothing when Triton's compiler was never imported."""
    import gc
    compiler = sys.modules.get("triton.compiler.compiler")
    kind = getattr(compiler, "CompiledKernel", None) if compiler else None
    if kind is None:
        return
    for obj in gc.get_objects():
        if type(obj) is kind and getattr(obj, "module", None) is not None:
            yield obj


def record_loaded() -> None:
    """Kernels Triton loaded before the hook was installed never reach
    init_handle: at start() with the launch hook, every loaded
    CompiledKernel gives its facts once."""
    for obj in loaded_kernels():
        group = getattr(obj, "metadata_group", None)
        name = getattr(obj, "name", None)
        if isinstance(group, dict) and isinstance(name, str):
            record(name, group, obj)
