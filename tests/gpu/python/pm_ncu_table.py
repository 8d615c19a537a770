"""Reads ncu's --csv --page raw output (argv[1]) and prints one RESULT line
per kernel class and metric: the mean over its launches (ncu_csv.py reads
the table and names the classes). argv[2] labels the clock setting."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ncu_csv  # noqa: E402


def main(path, label):
    table = ncu_csv.means(path)
    if table is None:
        print(f"FAIL pm_ncu {label}: no ncu table in {path}")
        return 1
    for (k, c), (mean, n) in sorted(table.items()):
        print(f"RESULT pm_ncu clocks={label} kernel={k} metric={c} value={mean:.2f} launches={n}")
    print(f"{'PASS' if table else 'FAIL'} pm_ncu {label}")
    return 0 if table else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
