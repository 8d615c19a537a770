"""Per-launch CPU cost of the "python" context (issue 28), without a GPU: a
Python loop at call depth 30 launching fake-backend kernels, under no
profiler, context="shadow" and context="python". One fresh process per
variant and round, rounds interleaved, medians of the best of 5 loops.

usage: context_python_cpu.py [ROUNDS] [DEPTH]
Prints RESULT lines: microseconds per launch and the excess over shadow."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
from fresh_worker import interleaved, median_of  # noqa: E402

VARIANTS = ("none", "shadow", "python")
N = int(os.environ.get("CPY_BENCH_N", "20000"))


def child(variant, depth):
    import cproton as proton
    from cproton import _cproton as C

    def rec(d):
        if d == 0:
            for _ in range(N):
                C._fake_launch("k")
        else:
            rec(d - 1)

    if variant != "none":
        out = tempfile.mkdtemp() + "/p"
        proton.start(out, context=variant, backend="fake")
        C._fake_add_device(0)
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        rec(depth)
        best = min(best, (time.perf_counter() - t) / N)
    if variant != "none":
        proton.finalize()
    print("JSON " + json.dumps({"us_per_launch": best * 1e6}))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    depth = sys.argv[2] if len(sys.argv) > 2 else "30"
    med = median_of(interleaved(__file__, VARIANTS, [depth], rounds), "us_per_launch")
    for v, m in med.items():
        extra = f" (+{m - med['shadow']:.3f} over shadow)" if v == "python" and "shadow" in med else ""
        print(f"RESULT cpu depth {depth} {v}: {m:.3f} us per launch{extra}")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
