"""Nsight Compute's ``--csv --page raw`` output, read in one place for the
hardware-metric parts (pm_ncu_table.py, pm_compare.py, pm_exact_table.py):
the kernel class of a launch, and each metric's mean over a class's
launches. Kernel classes: triton_matmul (matmul_kernel), vector_add
(pm_add_kernel), cublas_matmul (any other kernel whose name says
gemm/xmma/nvjet/cutlass)."""
import csv
from collections import defaultdict


def klass(name):
    if "matmul_kernel" in name:
        return "triton_matmul"
    if "pm_add_kernel" in name:
        return "vector_add"
    low = name.lower()
    if any(w in low for w in ("gemm", "xmma", "nvjet", "cutlass")):
        return "cublas_matmul"
    return None


def means(path, wanted=lambda column: "__" in column):
    """{(kernel class, metric column): (mean, launches)} over the launches
    of each class in ncu's table in ``path``, for the columns ``wanted``
    picks (default: every metric, a name with '__'); cells that are not
    numbers are skipped. None when the file holds no ncu table."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None:
        return None
    cols = rows[head]
    kcol = cols.index("Kernel Name")
    sums = defaultdict(lambda: [0.0, 0])
    for r in rows[head + 2:]:  # the row after the header holds units
        k = klass(r[kcol]) if len(r) == len(cols) else None
        for i, c in enumerate(cols):
            if k is None or not wanted(c):
                continue
            try:
                v = float(r[i].replace(",", ""))
            except ValueError:
                continue
            sums[(k, c)][0] += v
            sums[(k, c)][1] += 1
    return {key: (s / n, n) for key, (s, n) in sums.items() if n}
