"""CPU cost of hook="triton" per launch: the calls Triton 3.6's launcher
makes around each kernel launch, without a GPU.

Per launch Triton builds the launch metadata (CompiledKernel.launch_metadata:
a LazyDict of name/function/stream plus the kernel's launch_metadata
function and its arguments) and its generated launcher calls
knobs.runtime.launch_enter_hook(metadata), launches (GIL released), then
knobs.runtime.launch_exit_hook(metadata). This loop does the same, with the
kernel launch left out (it is the same with or without a profiler), for:

  none      no hook in the chains (Triton still builds the LazyDict)
  cproton   cproton.start(hook="triton", backend="fake"): a live session
  proton    Proton 3.6's LaunchHook registered in its HookManager with no
            session (Proton needs a GPU to start one): its Python body runs
            in full, libproton's enter_op/add_metrics/exit_op record
            nothing, so this is a lower bound of Proton's cost

Each variant runs N launches per round, rounds interleaved, medians of the
calling thread's CPU time (time.thread_time_ns: on a shared machine, time
spent waiting for a core drops out); the "added" column subtracts "none". Two kernels: one with a launch_metadata
function ({"flops": 1.0, "bytes": 4}, as tests/gpu/python/launch_overhead.py)
and one without.
usage: python bench/hook_cost.py [N] [ROUNDS]"""
import os
import statistics
import sys
import tempfile
import time

import triton.knobs as knobs
from triton.compiler.compiler import LazyDict

import cproton


class Kernel:
    """What CompiledKernel.launch_metadata reads: name, function, the JIT
    function's launch_metadata and arg_names, the compiled metadata."""

    def __init__(self, name, meta_fn):
        self.name = name
        self.function = 0x7F0000001000
        self.metadata = {"num_warps": 4, "num_ctas": 1, "shared": 0}
        self.arg_names = ["x", "n"]
        self.meta_fn = meta_fn

    def launch_metadata(self, grid, stream, *args):
        # Triton 3.6's CompiledKernel.launch_metadata, step by step
        if knobs.runtime.launch_enter_hook is None:
            return None
        ret = LazyDict({"name": self.name, "function": self.function, "stream": stream})
        if self.meta_fn is None:
            return ret
        arg_dict = {name: arg for name, arg in zip(self.arg_names, args)}
        ret.add(self.meta_fn, (grid, self.metadata, arg_dict))
        return ret


def loop(kernel, n):
    rt = knobs.runtime
    grid = (1, 1, 1)
    t0 = time.thread_time_ns()  # CPU time: a loaded machine's waits drop out
    for _ in range(n):
        md = kernel.launch_metadata(grid, 0, 1234, 128)
        enter, exit_ = rt.launch_enter_hook, rt.launch_exit_hook
        enter(md)  # the launcher: PyObject_CallOneArg(launch_enter_hook, md)
        exit_(md)
    return (time.thread_time_ns() - t0) / n


def run_none(kernel, n, tmp):
    return loop(kernel, n)


def run_cproton(kernel, n, tmp):
    sid = cproton.start(os.path.join(tmp, "hook_cost"), backend="fake", hook="triton")
    try:
        return loop(kernel, n)
    finally:
        cproton.finalize(sid)


def proton_runner():
    try:
        from triton.profiler.hooks import HookManager, LaunchHook
        from triton.profiler import flags
    except ImportError:
        return None

    def run_proton(kernel, n, tmp):
        flags.profiling_on = True
        HookManager.register(LaunchHook(), 1 << 20)
        try:
            return loop(kernel, n)
        finally:
            HookManager.unregister(1 << 20)
            flags.profiling_on = False

    return run_proton


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    variants = {"none": run_none, "cproton": run_cproton}
    if proton_runner():
        variants["proton"] = proton_runner()
    kernels = {"launch_metadata": Kernel("k_meta", lambda g, m, a: {"flops": 1.0, "bytes": 4}),
               "no launch_metadata": Kernel("k_plain", None)}
    tmp = tempfile.mkdtemp(prefix="cproton-hook-cost-")
    print(f"hook='triton' CPU cost, {n} launches x {rounds} interleaved rounds, median ns/launch")
    for kname, kernel in kernels.items():
        times = {v: [] for v in variants}
        for v, fn in variants.items():  # warm-up (node creation, caches)
            fn(kernel, 1000, tmp)
        for r in range(rounds):
            order = list(variants)[r % len(variants):] + list(variants)[:r % len(variants)]
            for v in order:
                times[v].append(variants[v](kernel, n, tmp))
        base = statistics.median(times["none"])
        print(f"  kernel with {kname}:")
        for v, t in times.items():
            med = statistics.median(t)
            added = "" if v == "none" else f"  added {med - base:7.1f}"
            print(f"    {v:8s} {med:7.1f} (spread {min(t):.0f}-{max(t):.0f}){added}")
        if "proton" in times:
            c = statistics.median(times["cproton"]) - base
            p = statistics.median(times["proton"]) - base
            print(f"    cproton added / proton added = {c / p:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
