"""The Triton kernels of the advisor's validation benchmark (issue 26 item 4).
Planted and fixed variants differ only in launch configuration or a constexpr,
so each case's fix is the change the advisor's suggestion names."""
import triton
import triton.language as tl


def _name(kernel, what):
    """The op scope's name starts with the kernel's own, so either frame names it."""
    return f"{getattr(kernel, 'name', 'kernel')}_{what}"


def _mm_meta(grid, kernel, args):
    return {"name": _name(kernel, f"{args['M']}x{args['N']}x{args['K']}"),
            "flops": 2.0 * args["M"] * args["N"] * args["K"]}


def _bytes_meta(grid, kernel, args):
    return {"name": _name(kernel, args["n"]), "bytes": 3 * 4 * args["n"]}


def _softmax_meta(grid, kernel, args):
    return {"name": _name(kernel, f"{args['rows']}x{args['cols']}"), "bytes": 2 * 4 * args["rows"] * args["cols"]}


@triton.jit(launch_metadata=_mm_meta)
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  GROUP: tl.constexpr, PRECISION: tl.constexpr):
    """The tutorial's grouped-order matmul with block pointers (row-major A[M,K],
    B[K,N], C[M,N]; M, N, K multiples of the tiles)."""
    pid = tl.program_id(0)
    n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP * n_n)
    first_m = group * GROUP
    size_m = min(n_m - first_m, GROUP)
    pm = first_m + (pid % (GROUP * n_n)) % size_m
    pn = (pid % (GROUP * n_n)) // size_m
    pa = tl.make_block_ptr(a, (M, K), (K, 1), (pm * BM, 0), (BM, BK), (1, 0))
    pb = tl.make_block_ptr(b, (K, N), (N, 1), (0, pn * BN), (BK, BN), (1, 0))
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(pa), tl.load(pb), acc, input_precision=PRECISION)
        pa = tl.advance(pa, (0, BK))
        pb = tl.advance(pb, (BK, 0))
    pc = tl.make_block_ptr(c, (M, N), (N, 1), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(pc, acc.to(c.dtype.element_ty))


def matmul(a, b, c, bm, bn, bk, warps, stages, precision="tf32"):
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    matmul_kernel[grid](a, b, c, M, N, K, BM=bm, BN=bn, BK=bk, GROUP=8, PRECISION=precision,
                        num_warps=warps, num_stages=stages)


@triton.jit(launch_metadata=_softmax_meta)
def softmax_kernel(x, y, rows, cols, BLOCK: tl.constexpr):
    """One row per program: the whole row stays live across two reductions."""
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + r * cols + offs, mask=offs < cols, other=-float("inf"))
    v = v - tl.max(v, 0)
    e = tl.exp(v)
    tl.store(y + r * cols + offs, e / tl.sum(e, 0), mask=offs < cols)


@triton.jit(launch_metadata=_softmax_meta)
def softmax_wide(x, y, rows, cols, BLOCK: tl.constexpr):
    """softmax_kernel's twin under its own name (the spills case)."""
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + r * cols + offs, mask=offs < cols, other=-float("inf"))
    v = v - tl.max(v, 0)
    e = tl.exp(v)
    tl.store(y + r * cols + offs, e / tl.sum(e, 0), mask=offs < cols)


@triton.jit(launch_metadata=_bytes_meta)
def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
    """The tutorial's vector add; it declares the bytes it moves."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit(launch_metadata=_bytes_meta)
def add_narrow(x, y, z, n, BLOCK: tl.constexpr):
    """add_kernel's twin under its own name (the roofline case)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(z + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def scale_chunks(x, y, n, CHUNK, BLOCK: tl.constexpr):
    """Each program scales its CHUNK of elements, BLOCK at a time (grid = n / CHUNK)."""
    start = tl.program_id(0) * CHUNK
    for i in range(0, CHUNK, BLOCK):
        offs = start + i + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y + offs, tl.load(x + offs, mask=m) * 3.0 + 1.0, mask=m)


@triton.jit
def tiny_add(x, y, BLOCK: tl.constexpr):
    """A 1024-element update: microseconds of GPU time, launch-bound."""
    offs = tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(y + offs) + tl.load(x + offs) * 0.5)
