"""Proton's TTGIR-override workflow, for either profiler (tests/gpu/override.sh).

usage: override_app.py OUT_DIR PROFILER DATA
  PROFILER: proton (triton.profiler) or cproton; DATA: tree or trace.
Runs a vector add (the kernel of Proton's override_helper.py) once under
proton.start(OUT_DIR/override, backend="instrumentation", data=DATA). Run it
first with TRITON_KERNEL_DUMP=1 to dump the IR, edit the .ttgir
(override_check.py edit), then with TRITON_KERNEL_OVERRIDE=1."""
import pathlib
import sys

import torch
import triton
import triton.language as tl

out, profiler, data = sys.argv[1], sys.argv[2], sys.argv[3]
if profiler == "proton":
    import triton.profiler as proton
else:
    import cproton as proton


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


size = 98432
x = torch.rand(size, device="cuda")
y = torch.rand(size, device="cuda")
z = torch.empty_like(x)
proton.start(str(pathlib.Path(out) / "override"), backend="instrumentation", data=data)
add_kernel[(triton.cdiv(size, 1024), )](x, y, z, size, BLOCK_SIZE=1024, num_warps=1)
proton.finalize()
torch.testing.assert_close(z, x + y)
print(f"PASS {profiler} {data}: ran")
