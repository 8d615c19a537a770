"""cproton demo: intra-kernel instrumentation of a Triton kernel. Scopes
inside the kernel (cproton.language) become per-warp cycle counts under the
kernel's node, and a per-warp timeline with data="trace".
View: cproton-viewer -m normalized_cycles,count intra_kernel.hatchet
      (and open intra_kernel_trace.chrome_trace in Perfetto)"""
import torch
import triton
import triton.language as tl

import cproton as proton
import cproton.language as pl


@triton.jit
def softmax(x, y, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    with pl.scope("load"):
        v = tl.load(x + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    with pl.scope("reduce"):
        v = v - tl.max(v, 0)
        e = tl.exp(v)
        s = tl.sum(e, 0)
    with pl.scope("store"):
        tl.store(y + row * n_cols + cols, e / s, mask=cols < n_cols)


if __name__ == "__main__":
    x = torch.randn(4096, 1024, device="cuda")
    y = torch.empty_like(x)
    for data, name in (("tree", "intra_kernel"), ("trace", "intra_kernel_trace")):
        session = proton.start(name, backend="instrumentation", data=data, mode="default:buffer_type=global")
        for _ in range(5 if data == "tree" else 1):
            softmax[(x.shape[0],)](x, y, x.shape[1], BLOCK=1024, num_warps=4)  # one CTA per row
        proton.finalize(session)
    torch.testing.assert_close(y, torch.softmax(x, 1))
