"""Checks the profiles of tests/gpu/ranks.sh: every rank's file exists once,
holds its own all-reduce (an NCCL kernel under "allreduce") and matmul
kernels on its own device, and no process left a second or empty file.
Usage: ranks_check.py OUT_DIR PREFIX (files OUT_DIR/PREFIX_<rank>.hatchet)."""
import glob
import os
import sys

from common import find, load


def kernels_under(nodes):
    """Kernel nodes (those with kernel time) anywhere below `nodes`: NCCL's
    own NVTX ranges may sit between a scope and its kernels."""
    out, stack = [], [c for n in nodes for c in n["children"]]
    while stack:
        n = stack.pop()
        if "time (ns)" in n["metrics"] and "device_id" in n["metrics"]:
            out.append(n)
        stack += n["children"]
    return out


def check_rank(path, rank):
    root = load(path)[0]
    ar = find(root, "allreduce")
    assert ar, f"{path}: no allreduce scope"
    kernels = kernels_under(ar)
    nccl = [k for k in kernels if "nccl" in k["frame"]["name"].lower()]
    assert nccl, f"{path}: no NCCL kernel under allreduce: {[k['frame']['name'] for k in kernels]}"
    assert sum(k["metrics"]["count"] for k in nccl) >= 3, f"{path}: fewer than 3 all-reduce kernels"
    mm = kernels_under(find(root, "matmul"))
    assert mm, f"{path}: no kernel under matmul"
    devices = {k["metrics"]["device_id"] for k in kernels + mm}
    assert devices == {str(rank)}, f"{path}: kernels on devices {devices}, expected {{{rank}}}"
    return sum(k["metrics"]["count"] for k in nccl)


def main():
    out, prefix = sys.argv[1], sys.argv[2]
    ok = True
    for rank in (0, 1):
        path = os.path.join(out, f"{prefix}_{rank}.hatchet")
        try:
            n = check_rank(path, rank)
            print(f"PASS {prefix} rank {rank}: {n} NCCL all-reduce kernels on device {rank}")
        except (AssertionError, OSError, KeyError) as e:
            print(f"FAIL {prefix} rank {rank}: {e}")
            ok = False
    # every file the profilers could have written (not ranks.sh's own logs)
    written = {f for f in glob.glob(os.path.join(out, f"{prefix}_*")) if not f.endswith(".log")}
    extra = sorted(written -
                   {os.path.join(out, f"{prefix}_{r}.hatchet") for r in (0, 1)})
    if extra:
        print(f"FAIL {prefix} files: unexpected {extra} (a process without kernels wrote, or names collided)")
        ok = False
    else:
        print(f"PASS {prefix} files: exactly one profile per rank")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
