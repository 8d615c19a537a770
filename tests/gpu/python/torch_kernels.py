"""PyTorch kernels under scopes, states and cpu_timed_scope; counts match
the launches; the device info is present."""
import torch

import cproton as proton
from common import find, load


def main():
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    torch.cuda.synchronize()
    sid = proton.start("torch")
    for _ in range(10):
        with proton.scope("matmul", {"flops16": 2.0 * 1024 ** 3}):
            c = a @ b
        with proton.state("elementwise"):
            c = c + a
        with proton.cpu_timed_scope("timed"):
            c = torch.relu(c)
    torch.cuda.synchronize()
    proton.finalize(sid)
    lit = load("torch.hatchet")
    root, dev = lit
    mm = find(root, "matmul")[0]
    kernels = mm["children"]
    assert kernels and sum(k["metrics"]["count"] for k in kernels) >= 10
    assert mm["metrics"]["flops16"] == 10 * 2.0 * 1024 ** 3
    assert find(root, "elementwise"), "state node missing"
    assert "CUDA" in dev and dev["CUDA"]
    print("torch_kernels: ok")


if __name__ == "__main__":
    main()
