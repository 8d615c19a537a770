"""One worker of a 2-GPU torchrun job: an NCCL all-reduce and a matmul, each
inside a scope. --api: scopes are cproton scopes and the profile is written
through the Python API (name argv[2]; cproton fills "{rank}" from RANK);
--plain: an unmodified PyTorch program whose scopes are NVTX ranges
(profiled by injection: CUDA_INJECTION64_PATH=libcproton.so)."""
import os
import sys

import torch
import torch.distributed as dist


def work(scope):
    rank = dist.get_rank()
    x = torch.full((1 << 20,), float(rank + 1), device="cuda")
    for _ in range(3):
        with scope("allreduce"):
            dist.all_reduce(x)
    a = torch.randn(512, 512, device="cuda")
    with scope("matmul"):
        for _ in range(4):
            a = a @ a
            a = a / a.norm()
    torch.cuda.synchronize()
    assert x[0].item() == 3.0 * 4, x[0].item()  # 1 + 2, then doubled twice


def main():
    mode = sys.argv[1]
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    if mode == "--api":
        import cproton as proton
        proton.start(sys.argv[2])  # "{rank}" is filled from RANK by cproton
        work(proton.scope)
        proton.finalize()
    else:
        work(torch.cuda.nvtx.range)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
