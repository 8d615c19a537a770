#!/usr/bin/env python3
"""Python scope overhead: one `with scope(name):` enter+exit pair, with a
session active and no GPU work, for cproton and (when it can start without a
GPU) Proton. Also `enter_scope`/`exit_scope` and a prebuilt scope object.
Prints ns per pair and the ratio to a bare `with nullcontext()` baseline
measured in the same run. Target: cproton < 500 ns per pair.

With --growth M: M million scopes of distinct names (a new node and a new
name each), ns per new scope for each million (issue 24.15 target: the
tenth million within 2x of the first); the process then ends without
writing the profile of 10^7 nodes, which is not what is measured.

usage: bench/python_scope_bench.py [OUT_DIR] [--n N] [--growth M]
"""
import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
import warnings


def timeit(fn, n, repeat=15):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn(n)
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def bench_module(proton, n, backend):
    scope, enter_scope, exit_scope = proton.scope, proton.enter_scope, proton.exit_scope

    def with_scope(k):
        for _ in range(k):
            with scope("step"):
                pass

    def prebuilt(k):
        s = scope("step")
        for _ in range(k):
            with s:
                pass

    def free_fns(k):
        for _ in range(k):
            enter_scope("step")
            exit_scope()

    def with_metrics(k):
        m = {"flops": 1.0}
        for _ in range(k):
            with scope("step", m):
                pass

    kw = {"backend": backend} if backend else {}
    sid = proton.start(os.path.join(tempfile.mkdtemp(), "bench"), **kw)
    out = {
        "with scope(name)": timeit(with_scope, n),
        "with prebuilt scope": timeit(prebuilt, n),
        "enter_scope/exit_scope": timeit(free_fns, n),
        "with scope(name, metrics)": timeit(with_metrics, n),
    }
    proton.finalize(sid)
    return out


def baseline(n):

    def loop(k):
        for _ in range(k):
            with contextlib.nullcontext():
                pass

    return timeit(loop, n)


def growth(millions, out):
    import cproton
    scope = cproton.scope
    cproton.start(os.path.join(tempfile.mkdtemp(), "growth"), backend="none")
    cpu_rows, wall_rows = [], []
    # CPU time of this thread: on a loaded machine wall time also counts the
    # time other processes held the core.
    print("new scopes, per new scope per million nodes\n"
          "            CPU ns   wall ns   CPU vs the first million")
    for m in range(millions):
        names = [f"s{i}" for i in range(m * 1000000, (m + 1) * 1000000)]
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        for name in names:
            with scope(name):
                pass
        cpu = (time.thread_time_ns() - c0) / len(names)
        wall = (time.perf_counter_ns() - t0) / len(names)
        cpu_rows.append(cpu)
        wall_rows.append(wall)
        print(f"  million {m + 1:2d}  {cpu:6.0f}  {wall:8.0f}   {cpu / cpu_rows[0]:.2f}x", flush=True)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "python_scope_growth.json"), "w") as f:
            json.dump({"python": sys.version.split()[0], "cpu_ns_per_new_scope": cpu_rows,
                       "wall_ns_per_new_scope": wall_rows}, f, indent=1)
    os._exit(0)  # no profile of 10^7 nodes at exit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default=os.environ.get("OUT"))
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--growth", type=int, metavar="M", help="M million new scopes")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.growth:
        growth(args.growth, args.out)
    results = {"python": sys.version.split()[0], "baseline_nullcontext_ns": baseline(args.n)}
    import cproton
    results["cproton"] = bench_module(cproton, args.n, None)
    try:
        import triton.profiler as proton
        results["proton"] = bench_module(proton, args.n, None)
    except Exception as e:  # Proton needs a GPU (CUPTI) to start a session
        results["proton"] = f"unavailable: {type(e).__name__}: {e}"
    base = results["baseline_nullcontext_ns"]
    print(f"baseline with nullcontext(): {base:.0f} ns")
    for lib in ("cproton", "proton"):
        r = results[lib]
        if isinstance(r, str):
            print(f"{lib}: {r}")
            continue
        for k, v in r.items():
            print(f"{lib:8s} {k:28s} {v:7.0f} ns/pair  ({v / base:.1f}x baseline)")
    c = results["cproton"]["with scope(name)"]
    print(f"target < 500 ns: {'PASS' if c < 500 else 'FAIL'} ({c:.0f} ns)")
    if isinstance(results["proton"], dict):
        print(f"cproton/proton: {c / results['proton']['with scope(name)']:.2f}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "python_scope_bench.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
