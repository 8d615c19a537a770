"""A Proton example script, unchanged except for the import line: scopes,
a decorator, launch metadata with hook="triton", cpu_timed_scope, states."""
import torch
import triton
import triton.language as tl

import cproton as proton  # was: import triton.profiler as proton


def metadata_fn(grid, metadata, args):
    n = args["n_elements"]
    return {"name": f"add_{n}", "flops32": n, "bytes": 3 * 4 * n}


@triton.jit(launch_metadata=metadata_fn)
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


def add(x, y):
    output = torch.empty_like(x)
    n = output.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, output, n, BLOCK_SIZE=1024)
    return output


@proton.scope("test0", {"foo": 1.0})
def test0(x, y):
    return add(x, y)


session = proton.start("add", hook="triton")
size = 98432
x = torch.rand(size, device="cuda")
y = torch.rand(size, device="cuda")
for i in range(3):
    with proton.scope(f"iter{i}"):
        test0(x, y)
        with proton.cpu_timed_scope("torch_add"):
            x + y
proton.deactivate(session)
add(x, y)  # not recorded
proton.activate(session)
with proton.state("final"):
    add(x, y)
proton.finalize()
