"""A Triton kernel under cproton PC sampling with hook="triton".
usage: triton_pcs.py OUT_NAME MODE WHEN   (MODE: a cproton mode string;
WHEN: cold = compiled and loaded under the session, warm = before start).
The kernel is bench/kernels/pcs_kernels.py's chase_kernel: its
dependent-load loop is the line marked `# pcs: load`, its FMA loop `# pcs:
fma` (pcs_check.py --source finds them)."""
import os
import sys

import torch
import cproton as proton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "kernels"))
from pcs_kernels import chase_kernel  # noqa: E402


def main(name, mode, when):
    import logging
    debug = os.environ.get("CPROTON_LOG") == "debug"
    logging.basicConfig(level=logging.DEBUG if debug else logging.INFO)
    n = 1 << 20
    x = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    y = torch.empty(n, device="cuda")
    run = lambda: chase_kernel[(n // 256,)](x, y, n, ITERS=512, BLOCK=256)
    if when == "warm":
        run(); torch.cuda.synchronize()
    proton.start(name, hook="triton", backend="cupti", mode=mode)
    with proton.scope("test"):
        for _ in range(3):
            run()
    torch.cuda.synchronize()
    proton.finalize()


main(*sys.argv[1:])
