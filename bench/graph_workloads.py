"""bench/graph_workloads.py -- the CUDA-graph workloads of issue 23, shared by
bench/fresh_process.py (overhead) and bench/graph_check.py (placement, RSS).

  gpt_graph     torch.compile(mode="reduce-overhead") inference of a small
                GPT (bench/workloads.py's `graph`: 77 kernels per replay on
                an H100), one replay per step
  matmul_graph  triton.testing.do_bench_cudagraph over 8 problem sizes of a
                cuBLAS matmul (a function decorated with
                @proton.scope("cublas", metrics=...)) and an autotuned Triton
                matmul (under proton.scope("triton")), all under a
                matmul_{M}_{N}_{K} scope; the profiler is started with
                hook="triton". One sweep of the 8 sizes per step.

`make(name, prof)` returns (step, sync); `prof` is the harness's profiler
object: `prof.scope(name, metrics=None)` must work as a context manager and
as a decorator (a no-op object for the unprofiled variant).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads  # noqa: E402

SIZES = [(256, 256, 256), (512, 512, 512), (768, 768, 768), (1024, 1024, 1024),
         (1536, 1536, 1536), (2048, 2048, 2048), (512, 2048, 1024), (2048, 512, 1024)]
# do_bench_cudagraph's rep (ms): short, so one sweep of 16 benchmarks takes
# about a second; what matters here is the replays, not the timing.
REP_MS = int(os.environ.get("GRAPH_BENCH_REP_MS", "5"))


class NoScope:
    """An unprofiled scope: a context manager and a decorator doing nothing."""

    def __init__(self, name=None, metrics=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        return fn


def _triton_matmul():
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=3),
               triton.Config({"BM": 128, "BN": 64, "BK": 32}, num_warps=4, num_stages=3)]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m, pid_n = tl.program_id(0), tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            am = (rm[:, None] < M) & (rk[None, :] + k < K)
            bm = (rk[:, None] + k < K) & (rn[None, :] < N)
            x = tl.load(a + rm[:, None] * sam + (rk[None, :] + k) * sak, mask=am, other=0.0)
            y = tl.load(b + (rk[:, None] + k) * sbk + rn[None, :] * sbn, mask=bm, other=0.0)
            acc += tl.dot(x, y)
        cm = (rm[:, None] < M) & (rn[None, :] < N)
        tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16), mask=cm)

    def run(a, b, c):
        M, K = a.shape
        N = b.shape[1]
        grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))  # noqa: E731
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1))

    return run


def make_matmul_graph(prof):
    import torch
    from triton.testing import do_bench_cudagraph

    tmm = _triton_matmul()
    data = []
    for m, n, k in SIZES:
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        c = torch.empty(m, n, device="cuda", dtype=torch.float16)
        flops = 2.0 * m * n * k

        @prof.scope("cublas", metrics={"flops": flops})
        def cublas(a=a, b=b, c=c):
            torch.matmul(a, b, out=c)

        def triton_fn(a=a, b=b, c=c):
            with prof.scope("triton"):
                tmm(a, b, c)

        data.append((f"matmul_{m}_{n}_{k}", cublas, triton_fn))

    def step():
        for name, cublas, triton_fn in data:
            with prof.scope(name):
                do_bench_cudagraph(cublas, rep=REP_MS)
                do_bench_cudagraph(triton_fn, rep=REP_MS)

    return step, torch.cuda.synchronize


def make_gpt_graph(prof):
    return workloads.make_graph(lambda name: prof.scope(name))


WORKLOADS = {"gpt_graph": make_gpt_graph, "matmul_graph": make_matmul_graph}
# Timed steps per workload (the method: 150 GPT replays; a matmul
# sweep is ~1 s, so 3 sweeps) and warm-up steps before the session starts
# (compilation, autotuning, graph capture of the GPT).
STEPS = {"gpt_graph": 150, "matmul_graph": 3}
WARMUP = {"gpt_graph": 30, "matmul_graph": 1}
# The profiler's start arguments per workload (the issue's: hook="triton"
# for the matmul sweep).
START_KW = {"gpt_graph": {}, "matmul_graph": {"hook": "triton"}}
