"""The cases of the advisor's validation benchmark (issue 26 item 4), as data:
planted kernels, each with one problem (`cause`, an advisor rule id) and a
fixed variant, and well-tuned kernels that should draw no finding worth 10%.
No GPU module is imported here, so the scoring can be tested on the CPU.

`fixes` maps each rule whose suggestion the bench can apply to the variant
that applies it; any other top finding counts as no change (speedup 1.00).
`kernel` is the kernel name a finding must name (None: the rule is about the
program, not one kernel). `build` names the builder in cases.py."""
from dataclasses import dataclass, field
from typing import Dict, Optional


@dataclass
class Case:
    name: str
    kind: str                      # "planted" or "tuned"
    cause: Optional[str]           # the planted rule
    kernel: Optional[str]          # kernel name a finding must name
    build: str                     # builder in cases.py: (variant, ctx) -> (step, result)
    fixes: Dict[str, str] = field(default_factory=dict)
    iters: int = 10                # steps per timed measurement
    rtol: float = 1e-5             # fixed vs planted: |a-b| <= rtol * max|a|


CASES = [
    Case("cu_strided", "planted", "uncoalesced", "strided_scale", "b_strided", {"uncoalesced": "fixed"}),
    Case("cu_scalar_half", "planted", "uncoalesced", "half_copy_scalar", "b_half", {"uncoalesced": "fixed"}),
    Case("cu_bank_conflicts", "planted", "bank_conflicts", "transpose_conflicted", "b_transpose",
         {"bank_conflicts": "fixed"}),
    Case("cu_smem_occupancy", "planted", "occupancy_smem", "scale_big_smem", "b_smem", {"occupancy_smem": "fixed"}),
    Case("cu_reg_occupancy", "planted", "occupancy_regs", "chase_many_live", "b_chase", {"occupancy_regs": "fixed"},
         iters=3),
    Case("cu_tail_wave", "planted", "tail_wave", "fma_split", "b_tail", {"tail_wave": "fixed"}, iters=3),
    Case("cu_local_array", "planted", "spills", "poly_local", "b_poly", {"spills": "fixed"}, iters=3, rtol=1e-4),
    Case("tr_spills", "planted", "spills", "softmax_wide", "b_spills", {"spills": "fixed"}, iters=3, rtol=1e-4),
    Case("tr_not_pipelined", "planted", "not_pipelined", "matmul_kernel", "b_pipeline", {"not_pipelined": "fixed"},
         iters=5, rtol=1e-2),
    Case("tr_no_tensor_cores", "planted", "no_tensor_cores", "matmul_kernel", "b_tensor_cores",
         {"no_tensor_cores": "fixed"}, iters=3, rtol=2e-2),
    # the slow config's tiles (32x32, 4 warps) also get the old MMA; the fast config is the wgmma fix
    Case("tr_autotune_slower", "planted", "autotune_slower", "matmul_kernel", "b_autotune",
         {"autotune_slower": "fixed", "old_mma": "fixed"}, iters=2, rtol=1e-2),
    Case("tr_small_grid", "planted", "small_grid", "scale_chunks", "b_small_grid", {"small_grid": "fixed"}, iters=5),
    # the fixed BLOCK also gives 128-bit accesses, what the uncoalesced rule suggests
    Case("tr_memory_roofline", "planted", "memory_roofline", "add_narrow", "b_roofline",
         {"memory_roofline": "fixed", "uncoalesced": "fixed"}, iters=5),
    Case("launch_bound", "planted", "launch_bound", "tiny_add", "b_launch_bound", {"launch_bound": "fixed"}, iters=3),
    Case("host_sync", "planted", "host_sync", None, "b_host_sync", {"host_sync": "fixed"}, iters=2, rtol=1e-4),
    Case("tuned_tr_matmul", "tuned", None, None, "b_tuned_matmul", iters=5),
    Case("tuned_cublas", "tuned", None, None, "b_cublas", iters=5),
    Case("tuned_sdpa_flash", "tuned", None, None, "b_sdpa", iters=5),
    Case("tuned_vector_add", "tuned", None, None, "b_vadd", iters=10),
    Case("tuned_softmax", "tuned", None, None, "b_softmax", iters=10),
]
BY_NAME = {c.name: c for c in CASES}
