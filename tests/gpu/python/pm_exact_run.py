"""One fresh-process run of the PM-sampling kernels (pm_kernels.py: a Triton
matmul, a cuBLAS matmul, a Triton vector add, each >= 50 us, one warm-up and
REPEAT launches) for tests/gpu/pmexact.sh. argv[1] is the mode: "none"
(cproton not imported), "kernel" (cproton's kernel-level profile) or "exact"
(mode="pmsampling:exact", issue 27 item 2); argv[2] the profile's path stem.
Prints the wall time of the region from session start to finalize
(RESULT pm_exact_wall)."""
import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402

import pm_kernels  # noqa: E402


def main(mode, stem):
    proton = None
    # the mode's info lines (passes, range names, counts) on stderr
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    if mode != "none":
        import cproton as proton
    torch.cuda.init()
    t0 = time.perf_counter()
    if proton:
        proton.start(stem, backend="cupti", mode="pmsampling:exact" if mode == "exact" else None)
    pm_kernels.main()
    torch.cuda.synchronize()
    if proton:
        proton.finalize()
    print(f"RESULT pm_exact_wall mode={mode} s={time.perf_counter() - t0:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
