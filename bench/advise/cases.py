"""The builders of the advisor benchmark's cases (catalog.py holds the table):
each builds a variant ("planted" or "fixed"; tuned cases only "planted") into
(step, result): step() runs the workload once on the current stream, result()
returns a tensor to compare the variants by."""
import torch
import torch.nn.attention  # noqa: F401  (sdpa_kernel)
import torch.nn.functional as F

import cuda_lib
import triton_kernels as tk
from catalog import BY_NAME

SEED = 20261127


def build(name, variant, ctx):
    """(step, result) of case `name`'s variant; ctx: {"sms", "build_dir"}.
    Every variant of a case draws the same inputs: the generator is reseeded
    before each build, else the same_result check compares the planted
    variant's output on one random input with the fix's on another (the first
    H100 run, 2026-11-27, failed it at ~1.4 max rel diff for every case whose
    inputs come from torch.randn)."""
    torch.manual_seed(SEED)
    return globals()[BY_NAME[name].build](variant, ctx)


def _stream():
    return torch.cuda.current_stream().cuda_stream


def _cuda(ctx):
    return cuda_lib.load(ctx["build_dir"])


def b_strided(v, ctx):
    lib, n = _cuda(ctx), 4096
    x = torch.randn(n, n, device="cuda")
    y = torch.empty_like(x)
    return (lambda: cuda_lib.call(lib.launch_strided, x.data_ptr(), y.data_ptr(), n, n, v == "fixed", _stream()),
            lambda: y)


def b_half(v, ctx):
    lib, n = _cuda(ctx), 1 << 27
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    return (lambda: cuda_lib.call(lib.launch_half_copy, x.data_ptr(), y.data_ptr(), n, v == "fixed", _stream()),
            lambda: y.float())


def b_transpose(v, ctx):
    lib, n = _cuda(ctx), 8192
    x = torch.randn(n, n, device="cuda")
    y = torch.empty_like(x)
    return (lambda: cuda_lib.call(lib.launch_transpose, x.data_ptr(), y.data_ptr(), n, v == "fixed", _stream()),
            lambda: y)


def b_smem(v, ctx):
    lib, n = _cuda(ctx), 1 << 26
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    return (lambda: cuda_lib.call(lib.launch_smem, x.data_ptr(), y.data_ptr(), n, v == "fixed", _stream()),
            lambda: y)


def b_chase(v, ctx):
    lib, size = _cuda(ctx), 1 << 20            # 4 MB table: stays in L2
    j = torch.arange(size, device="cuda", dtype=torch.int64)
    nxt = ((((j // 32) * 977 + 131) % (size // 32)) * 32 + j % 32).to(torch.int32)
    n_threads = ctx["sms"] * 2048 * 2
    y = torch.empty(n_threads, device="cuda")
    return (lambda: cuda_lib.call(lib.launch_chase, nxt.data_ptr(), y.data_ptr(), n_threads, 2000, size - 1,
                                  v == "fixed", _stream()),
            lambda: y)


def b_tail(v, ctx):
    lib, sms = _cuda(ctx), ctx["sms"]
    total = 100000 * (sms + 1)         # about 1 ms per step
    y = torch.zeros((sms + 1) * 1024, device="cuda")
    return (lambda: cuda_lib.call(lib.launch_tail, y.data_ptr(), sms, total, v == "fixed", _stream()),
            lambda: torch.ones(1, device="cuda"))   # the split differs; the work is equal


def b_poly(v, ctx):
    lib = _cuda(ctx)
    w = torch.rand(32, device="cuda") * 0.5 + 0.25
    n_threads = ctx["sms"] * 2048
    y = torch.empty(n_threads, device="cuda")
    return (lambda: cuda_lib.call(lib.launch_poly, w.data_ptr(), y.data_ptr(), n_threads, 4096, v == "fixed",
                                  _stream()),
            lambda: y)


def b_spills(v, ctx):
    rows, cols = 4096, 8192
    x = torch.randn(rows, cols, device="cuda")
    y = torch.empty_like(x)
    warps = 16 if v == "fixed" else 1
    return (lambda: tk.softmax_wide[(rows,)](x, y, rows, cols, BLOCK=cols, num_warps=warps), lambda: y)


def _mm_inputs(n, dtype):
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    return a, b, torch.empty(n, n, device="cuda", dtype=dtype)


def b_pipeline(v, ctx):
    a, b, c = _mm_inputs(4096, torch.float16)
    stages = 3 if v == "fixed" else 1
    return (lambda: tk.matmul(a, b, c, 128, 128, 64, 8, stages), lambda: c.float())


def b_tensor_cores(v, ctx):
    a, b, c = _mm_inputs(2048, torch.float32)
    prec = "tf32" if v == "fixed" else "ieee"
    return (lambda: tk.matmul(a, b, c, 64, 64, 32, 4, 3, prec), lambda: c)


def b_autotune(v, ctx):
    """The program runs a slow config of matmul_kernel 10 times per step and a
    faster one, seen in the same run (a tuning pass, another call site), once;
    the fix pins the faster config for all 11."""
    a, b, c = _mm_inputs(2048, torch.float16)
    fast = (128, 128, 64, 8, 3)

    def step():
        for _ in range(10):
            tk.matmul(a, b, c, *(fast if v == "fixed" else (32, 32, 32, 4, 2)))
        tk.matmul(a, b, c, *fast)
    return step, lambda: c.float()


def b_small_grid(v, ctx):
    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    progs = 2048 if v == "fixed" else 16
    chunk = n // progs
    return (lambda: tk.scale_chunks[(progs,)](x, y, n, chunk, BLOCK=1024, num_warps=4), lambda: y)


def b_roofline(v, ctx):
    n = 1 << 26
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    block, warps = (4096, 4) if v == "fixed" else (32, 1)
    return (lambda: tk.add_narrow[(n // block,)](x, y, z, n, BLOCK=block, num_warps=warps), lambda: z)


def b_launch_bound(v, ctx):
    """200 launches of a tiny kernel per step; the fix replays them as one CUDA graph."""
    x = torch.randn(1024, device="cuda")
    y = torch.zeros(1024, device="cuda")

    def eager():
        for _ in range(200):
            tk.tiny_add[(1,)](x, y, BLOCK=1024)
    if v != "fixed":
        return eager, lambda: y
    eager()                                   # compile before capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        eager()
    y.zero_()
    return g.replay, lambda: y


def b_host_sync(v, ctx):
    """A loop that reads a loss with .item() each step vs once at the end."""
    x = torch.randn(1 << 20, device="cuda")
    out = {}

    def step():
        vals = []
        for i in range(50):
            s = (x * (1.0 + i * 1e-3)).square().mean()
            vals.append(s.item() if v != "fixed" else s)
        out["r"] = vals if v != "fixed" else torch.stack(vals).tolist()
    return step, lambda: torch.tensor(out["r"])


def b_tuned_matmul(v, ctx):
    a, b, c = _mm_inputs(4096, torch.float16)
    return (lambda: tk.matmul(a, b, c, 128, 256, 64, 8, 3), lambda: c.float())


def b_cublas(v, ctx):
    a, b, c = _mm_inputs(4096, torch.bfloat16)
    return (lambda: torch.matmul(a, b, out=c), lambda: c.float())


def b_sdpa(v, ctx):
    q, k, w = (torch.randn(4, 16, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = {}

    def step():
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
            out["o"] = F.scaled_dot_product_attention(q, k, w, is_causal=True)
    return step, lambda: out["o"].float()


def b_vadd(v, ctx):
    n = 1 << 26
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    return (lambda: tk.add_kernel[(n // 1024,)](x, y, z, n, BLOCK=1024, num_warps=4), lambda: z)


def b_softmax(v, ctx):
    rows, cols = 8192, 4096
    x = torch.randn(rows, cols, device="cuda")
    y = torch.empty_like(x)
    return (lambda: tk.softmax_kernel[(rows,)](x, y, rows, cols, BLOCK=cols, num_warps=8), lambda: y)

