"""cproton demo: a Triton matmul and a PyTorch epilogue under scopes, with
launch metadata (FLOPs, bytes) from hook="triton". Run directly, or without
start/finalize lines under the command: `cproton -k triton matmul_profile.py`.
View: cproton-viewer -m time/ms,tflop16/s,util matmul.hatchet"""
import torch
import triton
import triton.language as tl

import cproton as proton  # drop-in for: import triton.profiler as proton


def metadata(grid, meta, args):
    M, N, K = args["M"], args["N"], args["K"]
    return {"name": f"matmul_{M}x{N}x{K}", "flops16": 2.0 * M * N * K, "bytes": 2 * (M * K + K * N + M * N)}


@triton.jit(launch_metadata=metadata)
def matmul(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid = tl.program_id(0)
    pid_m, pid_n = pid // tl.cdiv(N, BN), pid % tl.cdiv(N, BN)
    rm, rn, rk = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(x, y, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def step(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    with proton.scope("matmul"):
        matmul[(M // 128 * (N // 128),)](a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
    with proton.scope("epilogue"):
        torch.relu_(c)


if __name__ == "__main__":
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    c = torch.empty(4096, 4096, device="cuda", dtype=torch.float16)
    step(a, b, c)  # compile before profiling
    session = proton.start("matmul", hook="triton")
    for i in range(10):
        with proton.scope(f"iteration{i % 2}"):
            step(a, b, c)
    proton.finalize(session)
