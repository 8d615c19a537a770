"""Per-launch CPU cost of the "python" context (issue 28), without a GPU: a
Python loop at call depth 30 launching fake-backend kernels, under no
profiler, context="shadow" and context="python". One fresh process per
variant and round, rounds interleaved; each process times 5 loops in CPU
time of its thread (time.thread_time: on a shared, loaded machine wall time
counts other processes' turns) and keeps the best; medians and minimums
over the rounds.

usage: context_python_cpu.py [ROUNDS] [DEPTH]
Prints RESULT lines: microseconds per launch and the excess over shadow."""
import statistics
import subprocess
import sys
import tempfile
import time

VARIANTS = ("none", "shadow", "python")
N = int(__import__("os").environ.get("CPY_BENCH_N", "20000"))


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
    print(f"US {best * 1e6:.4f}")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    depth = sys.argv[2] if len(sys.argv) > 2 else "30"
    got = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for v in VARIANTS:
            p = subprocess.run([sys.executable, __file__, "--child", v, depth], capture_output=True, text=True)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("US ")]
            if p.returncode or not lines:
                print(f"FAIL {v}: {p.stderr[-300:]}")
                continue
            got[v].append(float(lines[-1].split()[1]))
    med = {v: statistics.median(t) for v, t in got.items() if t}
    low = {v: min(t) for v, t in got.items() if t}
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
