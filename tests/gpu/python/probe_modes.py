"""Issue 25 on a GPU: the C probe finds the device (Python no longer loads
libcuda itself), a session's mode is parsed once and compared parsed
(same meaning joins, another mode is refused), the session says whether
it wants loaded cubins, and the instrumentation backend starts from its
parsed configuration. Prints PASS/FAIL lines; exits non-zero on a failure."""
import sys

import torch
import triton
import triton.language as tl

import cproton as proton
from cproton import _cproton
from common import find, load

profile = sys.modules["cproton.profile"]
failed = []


def check(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name}{'' if ok else ': ' + str(detail)}")
    if not ok:
        failed.append(name)


@triton.jit
def vadd(x, y, z, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    tl.store(z + off, tl.load(x + off, mask=m) + tl.load(y + off, mask=m), mask=m)


def run(iters=3):
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    for _ in range(iters):
        vadd[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)
    torch.cuda.synchronize()


def main():
    backend, runs, devices = _cproton.probe(None)
    check("probe_default", backend == "cupti" and runs and devices >= 1, (backend, runs, devices))
    check("probe_instrumentation", _cproton.probe("instrumentation")[1:] == (1, devices),
          _cproton.probe("instrumentation"))
    check("select_backend_gpu", profile._select_backend(None) is None)

    run(1)  # compiled and loaded before the sessions: its cubin is handed over
    sid = proton.start("pcs_once", mode="pcsampling")
    check("wants_cubins_pcsampling", _cproton.session_wants_loaded_cubins(sid))
    joined = proton.start("pcs_joined", mode="PCSampling:interval=1000")  # same meaning, parsed
    try:
        proton.start("pcs_other", mode="pcsampling:exact")
        check("other_mode_refused", False, "a different mode joined")
    except Exception as e:  # noqa: BLE001 -- the type is the library's choice
        check("other_mode_refused", "different mode" in str(e), e)
    run()
    proton.finalize(joined)
    proton.finalize(sid)
    root = load("pcs_once.hatchet")[0]
    check("pcsampling_profile", len(find(root, "vadd")) >= 1, [c["frame"]["name"] for c in root["children"]])

    sid = proton.start("timing")
    check("wants_cubins_timing", not _cproton.session_wants_loaded_cubins(sid))
    run()
    proton.finalize(sid)
    m = find(load("timing.hatchet")[0], "vadd")[0]["metrics"]
    check("timing_profile", m["count"] == 3 and m["time (ns)"] > 0, m)

    sid = proton.start("instr", backend="instrumentation", mode=proton.mode.Default(granularity="warp_group"))
    check("instrumentation_started", sid is not None)
    proton.finalize(sid)

    print(f"RESULT probe_modes {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
