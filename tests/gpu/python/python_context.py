"""context="python": Triton and PyTorch kernels land under file:line@function
frames of this file; Triton's launch machinery (jit.py, driver.py) is
dropped; launches from a second thread get that thread's frames."""
import os
import threading

import torch
import triton
import triton.language as tl

import cproton as proton
from common import load, names

HERE = os.path.abspath(__file__)


@triton.jit
def add(x, y, z, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    tl.store(z + off, tl.load(x + off, mask=m) + tl.load(y + off, mask=m), mask=m)


def step(x, y, z):
    add[(x.numel() // 1024,)](x, y, z, x.numel(), BLOCK=1024)
    return x + y


def main():
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    z = torch.empty_like(x)
    step(x, y, z)
    torch.cuda.synchronize()
    sid = proton.start("pyctx", context="python")
    for _ in range(20):
        step(x, y, z)
    t = threading.Thread(target=lambda: [step(x, y, z) for _ in range(5)])
    t.start()
    t.join()
    torch.cuda.synchronize()
    proton.finalize(sid)
    root = load("pyctx.hatchet")[0]
    all_names = names(root)
    assert any(n.startswith(HERE) and n.endswith("@step") for n in all_names), sorted(all_names)[:20]
    assert "add" in all_names
    assert not any("triton/runtime/jit.py" in n or "backends/nvidia/driver.py" in n for n in all_names)
    assert any("threading.py" in n for n in all_names)
    print("python_context: ok")


if __name__ == "__main__":
    main()
