"""The kernels of the PM-sampling comparison (issue 27): a Triton matmul (bench/kernels/pcs_kernels.py), a
cuBLAS matmul (torch.mm) and a Triton vector add, each sized to run >= 50 us
on an H100, each launched REPEAT times after one warm-up. Run under ncu by
tests/gpu/pmsampling.sh; prints its kernels' mean times so the sizes can be
checked (RESULT lines)."""
import os
import sys

import torch
import triton
import triton.language as tl

# The Triton matmul is the PC-sampling benchmarks' (Proton's reference kernel).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "kernels"))
from pcs_kernels import matmul_kernel  # noqa: E402

REPEAT = 20


@triton.jit
def pm_add_kernel(x, y, z, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    tl.store(z + o, tl.load(x + o, mask=m) + tl.load(y + o, mask=m), mask=m)


def timed(name, fn):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(REPEAT):
        fn()
    e.record()
    torch.cuda.synchronize()
    print(f"RESULT pm_kernels {name} mean_us={s.elapsed_time(e) * 1000 / REPEAT:.1f}")


def main():
    n = 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    grid = (n // 128, n // 128)
    timed("triton_matmul", lambda: matmul_kernel[grid](a, b, c, n, n, n, BM=128, BN=128, BK=64))
    timed("cublas_matmul", lambda: torch.mm(a, b, out=c))
    v = 64 * 1024 * 1024
    x = torch.randn(v, device="cuda")
    y = torch.randn(v, device="cuda")
    z = torch.empty_like(x)
    timed("vector_add", lambda: pm_add_kernel[(triton.cdiv(v, 1024),)](x, y, z, v, B=1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
