"""A script for `cproton -k triton script.py`: no start/finalize of its own
(the command profiles it), scopes and a Triton kernel with launch metadata."""
import torch
import triton
import triton.language as tl

import cproton as proton


def meta(grid, metadata, args):
    return {"name": f"cli_add_{args['n']}", "bytes": 12 * args["n"]}


@triton.jit(launch_metadata=meta)
def add(x, y, z, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    tl.store(z + off, tl.load(x + off, mask=m) + tl.load(y + off, mask=m), mask=m)


n = 1 << 16
x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
z = torch.empty_like(x)
for i in range(4):
    with proton.scope(f"step{i % 2}"):
        add[(n // 1024,)](x, y, z, n, BLOCK=1024)
torch.cuda.synchronize()
