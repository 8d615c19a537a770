"""Triton kernels of the PC-sampling benchmarks and GPU tests
(bench/pcsampling_overhead.py, bench/pcsampling_contexts.py,
tests/gpu/pcs/triton_pcs.py). Lines that a check looks for carry a marker
comment `# pcs: NAME`; `line_of(NAME)` gives their line in this file, so
editing the file never breaks a check's line numbers.

  matmul_kernel     C = A @ B, fp16 in, fp32 accumulation (Proton's reference)
  chase_kernel      a dependent-load loop, then an FMA loop (Proton's reference)
  mix_kernel        the same two loops with run-time trip counts: one compiled
                    kernel whose line mix depends on its arguments
  attention_kernel  fused attention forward (softmax(Q K^T * scale) V, one
                    pass over K/V per block of queries, online softmax)
"""
import triton
import triton.language as tl


def line_of(marker):
    """The line of this file carrying `# pcs: <marker>`."""
    tag = f"# pcs: {marker}"
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if line.rstrip().endswith(tag):
                return i
    raise KeyError(f"no line marked {tag!r} in {__file__}")


@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@triton.jit
def chase_kernel(x, y, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = offs
    acc = offs.to(tl.float32)
    for _ in range(ITERS):
        idx = tl.load(x + idx) % n  # pcs: load
    for _ in range(ITERS):
        acc = acc * 1.0001 + 0.5  # pcs: fma
    tl.store(y + offs, acc + idx.to(tl.float32))


@triton.jit
def mix_kernel(x, y, n, n_load, n_fma, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = offs
    acc = offs.to(tl.float32)
    for _ in range(n_load):
        idx = tl.load(x + idx) % n  # pcs: mix-load
    for _ in range(n_fma):
        acc = acc * 1.0001 + 0.5  # pcs: mix-fma
    tl.store(y + offs, acc + idx.to(tl.float32))


@triton.jit
def attention_kernel(q, k, v, o, qk_scale, N, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # q, k, v, o: (batch * heads, N, D) contiguous; one program per
    # (block of BM queries, batch * head). qk_scale includes log2(e), so
    # the softmax runs on exp2.
    head = tl.program_id(1).to(tl.int64) * N * D
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, D)
    q_blk = tl.load(q + head + rows[:, None] * D + cols[None, :])
    row_max = tl.full((BM,), float("-inf"), tl.float32)
    row_sum = tl.zeros((BM,), tl.float32)
    out = tl.zeros((BM, D), tl.float32)
    for start in range(0, N, BN):
        keys = start + tl.arange(0, BN)
        k_t = tl.load(k + head + keys[None, :] * D + cols[:, None])  # (D, BN)
        scores = tl.dot(q_blk, k_t) * qk_scale  # pcs: attn-qk
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        p = tl.math.exp2(scores - new_max[:, None])  # pcs: attn-softmax
        rescale = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        v_blk = tl.load(v + head + keys[:, None] * D + cols[None, :])
        out = out * rescale[:, None] + tl.dot(p.to(tl.float16), v_blk)  # pcs: attn-pv
        row_max = new_max
    out = out / row_sum[:, None]
    tl.store(o + head + rows[:, None] * D + cols[None, :], out.to(tl.float16))


def attention(q, k, v, o, BM=128, BN=64):
    """Launches attention_kernel on (batch*heads, N, D) fp16 tensors."""
    bh, n, d = q.shape
    scale = (d ** -0.5) * 1.4426950408889634
    attention_kernel[(n // BM, bh)](q, k, v, o, scale, n, D=d, BM=BM, BN=BN, num_warps=4, num_stages=2)
