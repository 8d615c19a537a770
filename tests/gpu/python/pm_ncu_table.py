"""Reads ncu's --csv --page raw output (argv[1]) and prints one RESULT line
per kernel class and metric: the mean over its launches. Kernel classes:
triton_matmul (matmul_kernel), vector_add (pm_add_kernel), cublas_matmul
(any other kernel whose name says gemm/xmma/nvjet/cutlass). argv[2] labels
the clock setting."""
import csv
import sys
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


def main(path, label):
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None:
        print(f"FAIL pm_ncu {label}: no ncu table in {path}")
        return 1
    cols = rows[head]
    kcol = cols.index("Kernel Name")
    sums = defaultdict(lambda: [0.0, 0])
    for r in rows[head + 2:]:  # the row after the header holds units
        k = klass(r[kcol]) if len(r) == len(cols) else None
        for i, c in enumerate(cols):
            if k is None or "__" not in c:
                continue
            try:
                v = float(r[i].replace(",", ""))
            except ValueError:
                continue
            sums[(k, c)][0] += v
            sums[(k, c)][1] += 1
    for (k, c), (s, n) in sorted(sums.items()):
        print(f"RESULT pm_ncu clocks={label} kernel={k} metric={c} value={s / n:.2f} launches={n}")
    print(f"{'PASS' if sums else 'FAIL'} pm_ncu {label}")
    return 0 if sums else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
