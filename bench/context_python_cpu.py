"""Per-launch CPU cost of the "python" context (issue 28), without a GPU: a
Python loop at call depth 30 launching fake-backend kernels, under no
profiler, context="shadow" and context="python". One fresh process per
variant and round, rounds interleaved; each process times 5 loops in CPU
time of its thread (time.thread_time: on a shared, loaded machine wall time
counts other processes' turns) and keeps the best; medians and minimums
over the rounds.

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
        t = time.thread_time()
        rec(depth)
        best = min(best, (time.thread_time() - t) / N)
    if variant != "none":
        proton.finalize()
    print("JSON " + json.dumps({"us_per_launch": best * 1e6}))


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    depth = sys.argv[2] if len(sys.argv) > 2 else "30"
    got = interleaved(__file__, VARIANTS, [depth], rounds)
    med = median_of(got, "us_per_launch")
    low = {v: min(r["us_per_launch"] for r in rs) for v, rs in got.items() if rs}
    for v, m in med.items():
        extra = ""
        if v == "python" and "shadow" in med:
            extra = f" (+{m - med['shadow']:.3f} over shadow; minimum {low[v]:.3f}, +{low[v] - low['shadow']:.3f})"
        print(f"RESULT cpu depth {depth} {v}: {m:.3f} us per launch{extra}")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
