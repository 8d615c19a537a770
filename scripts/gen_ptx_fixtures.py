#!/usr/bin/env python3
"""gen_ptx_fixtures.py -- PTX of Triton kernels with cproton markers, for the
PTX pass's tests (tests/data/ptx/). No GPU is needed: Triton compiles for
sm_90 ahead of time.

  python scripts/gen_ptx_fixtures.py OUT_DIR

writes OUT_DIR/{vadd,softmax,mm_pipelined,ws_events}_sm90.ptx and
OUT_DIR/fixtures.json (per kernel: shared memory, warps, stages, profile
scratch size, kernel name), the same set of kernels as the committed
fixtures: an elementwise kernel, a row softmax (reductions, shared memory), a
software-pipelined matmul loop with a scope inside the pipelined loop (the
hard case: markers interleaved with asynchronous copies), and a
warp-specialized Gluon kernel with events (pl.start_event in one partition,
pl.end_event in another; tests/gpu/python/ws_events.py).

The committed tests/data/ptx/ files were made the same way with an earlier
marker text (`// @cproton record start|end`), which the pass still accepts; the
golden outputs in tests/data/instrument/ are derived from those files, so
regenerating them means updating the goldens too
(`CPROTON_UPDATE_GOLDEN=1 build/tests/instrument_pass_test`, review the diff).
"""
import json
import os
import sys

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import cproton.language as pl
from cproton.flags import flags

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu", "python"))
import ws_events  # noqa: E402  (the warp-specialized Gluon kernel with events)


@triton.jit
def vadd(x, y, z, n, BLOCK: tl.constexpr):
    pl.enter_scope("kernel")
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = off < n
    pl.enter_scope("load")
    a = tl.load(x + off, mask=mask)
    b = tl.load(y + off, mask=mask)
    pl.exit_scope("load")
    tl.store(z + off, a + b, mask=mask)
    pl.exit_scope("kernel")


@triton.jit
def softmax(out, inp, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    pl.enter_scope("load")
    x = tl.load(inp + row * stride + cols, mask=mask, other=-float("inf"))
    pl.exit_scope("load")
    pl.enter_scope("reduce")
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    pl.exit_scope("reduce")
    tl.store(out + row * stride + cols, y, mask=mask)


@triton.jit
def mm(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        pl.enter_scope("loop")
        x = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak)
        y = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc = tl.dot(x, y, acc)
        pl.exit_scope("loop")
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))


I32 = "i32"
KERNELS = {
    "vadd_sm90": (vadd, {"x": "*fp32", "y": "*fp32", "z": "*fp32", "n": I32, "BLOCK": "constexpr"},
                  {"BLOCK": 1024}, {"num_warps": 4}),
    "softmax_sm90": (softmax, {"out": "*fp32", "inp": "*fp32", "stride": I32, "n_cols": I32,
                               "BLOCK": "constexpr"}, {"BLOCK": 1024}, {"num_warps": 8}),
    "mm_pipelined_sm90": (mm, dict({"a": "*fp16", "b": "*fp16", "c": "*fp16"},
                                   **{k: I32 for k in ("M", "N", "K", "sam", "sak", "sbk", "sbn",
                                                       "scm", "scn")},
                                   **{k: "constexpr" for k in ("BM", "BN", "BK")}),
                          {"BM": 128, "BN": 128, "BK": 64}, {"num_warps": 4, "num_stages": 3}),
    "ws_events_sm90": (ws_events.ws_events, ws_events.SIGNATURE, ws_events.CONSTANTS, ws_events.OPTIONS),
}


def compile_one(fn, signature, constexprs, options):
    """PTX with markers: the instrumentation flag on, no PTX pass (its own
    instrumentation_mode keeps it apart from plain binaries in Triton's cache)."""
    flags.instrumentation_on = True
    try:
        opts = dict(options, instrumentation_mode="cproton-fixture:" + pl.marker_text(True, "x"))
        src = ws_events.source() if fn is ws_events.ws_events else ASTSource(fn, signature, constexprs)
        return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
    finally:
        flags.instrumentation_on = False


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    meta = {}
    for name, (fn, sig, consts, opts) in KERNELS.items():
        k = compile_one(fn, sig, consts, opts)
        with open(os.path.join(out, name + ".ptx"), "w") as f:
            f.write(k.asm["ptx"])
        md = k.metadata
        meta[name] = {"shared": md.shared, "num_warps": md.num_warps,
                      "num_stages": md.num_stages,
                      "profile_scratch_size": getattr(md, "profile_scratch_size", 0),
                      "kernel": fn.__name__}
        print(f"{name}: {len(k.asm['ptx'])} bytes of PTX, {md.shared} B shared")
    with open(os.path.join(out, "fixtures.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
