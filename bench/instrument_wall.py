#!/usr/bin/env python3
"""instrument_wall.py -- what an instrumentation session costs end to end
(issue 12; GPU, not a test): wall time per launch in steady state, from the
first of N back-to-back launches until every launch's profile is decoded and
delivered (cproton's decoder threads flushed), against N plain launches
until the GPU is idle, and against Proton 3.6 instrumenting the same kernels
(its `pl`; until the GPU is idle: Proton keeps its buffers until finalize,
whose time is printed beside).

Each `--mode` is one cproton variant; by default "default" (tree profiles
sum in the kernel: no records) and "default:reduce=device" (records,
reduced by a second kernel on the copy stream); `default:reduce=host`
measures host decoding.

Kernels (bench/kernels/instrumented.py.in): the 64M-element vector add
(65,536 CTAs x 4 warps, 2 scopes) and the 4096^3 fp16 matmul (scope around
the dot in the K loop). After a warm-up (compilation, the buffer pool),
variants are interleaved over REPS rounds; medians. Also prints the records
dropped by full buffers and the session's finalize time, and where an
instrumented launch's time goes (cproton's runtime counters, per launch):
the launching thread's wait for a pool buffer (back-pressure), the time from
the launch call until a decoder thread saw its copy-back done (GPU kernel,
reduction and copy, plus queueing), and the decoder's time per launch.

Target (issue 12): <= 1.2x plain per launch.

  python bench/instrument_wall.py [--reps 3] [--launches 1000] [--mode M ...] [--no-proton]
                                  [--proton-launches 10]
"""
import argparse
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from instrument_overhead import load_kernels  # noqa: E402
from instrument_overhead import workloads as overhead_workloads  # noqa: E402


def workloads(k):
    fns, _, _ = overhead_workloads(k, n=1 << 26)
    return {"vadd64M": fns["vadd"], "matmul4096": fns["matmul"]}


def wall_per_launch(fn, launches, instrumented):
    """`instrumented`: flush cproton's decoders before stopping the clock."""
    from cproton import _cproton
    for _ in range(10):  # warm: compiled, buffers pooled
        fn()
    torch.cuda.synchronize()
    if instrumented:
        _cproton.instr_flush()
    t0 = time.perf_counter()
    for _ in range(launches):
        fn()
    loop = time.perf_counter() - t0
    torch.cuda.synchronize()
    if instrumented:
        _cproton.instr_flush()
    return (time.perf_counter() - t0) / launches * 1e3, loop / launches * 1e3


def breakdown(before, after):
    """Per launch, from cproton's runtime counters (cproton_instr_stats)."""
    n = after["launches"] - before["launches"]
    if not n:
        return ""
    per = {k: (after[k] - before[k]) / n / 1e3 for k in ("alloc_wait_ns", "inflight_ns", "decode_ns")}
    waits = after["alloc_waits"] - before["alloc_waits"]
    return (f"; per launch: waited for a buffer {per['alloc_wait_ns']:.1f} us ({waits} of {n} launches),"
            f" in flight {per['inflight_ns']:.1f} us, decoding {per['decode_ns']:.1f} us")


def profile_launches(fns, mode, launches=500):
    """Where the launching thread's time goes (cProfile: Triton's launcher,
    the hooks, cproton's C calls), per kernel."""
    import cProfile
    import cproton
    import pstats
    for name, fn in fns.items():
        sid = cproton.start(f"/tmp/cproton-wall-profile-{name}", backend="instrumentation", mode=mode)
        wall_per_launch(fn, 20, True)
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(launches):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        cproton.finalize(sid)
        print(f"== launching thread, {name}, mode '{mode}', {launches} launches (cProfile, tottime):")
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--launches", type=int, default=1000)
    ap.add_argument("--mode", action="append", help="a cproton variant's mode (repeatable)")
    ap.add_argument("--no-proton", action="store_true")
    # Proton 3.6 synchronises on every instrumented launch (hundreds of ms
    # each on these grids): fewer launches keep the run short.
    ap.add_argument("--proton-launches", type=int, default=10)
    ap.add_argument("--profile", action="store_true",
                    help="also profile the first cproton variant's launch loop (cProfile, 500 launches)")
    args = ap.parse_args()
    import cproton
    from cproton import _cproton
    fns = workloads(load_kernels("cproton.language", "cproton"))
    modes = {f"cproton[{m}]": m for m in (args.mode or ["default", "default:reduce=device"])}
    profilers = {name: (cproton, fns) for name in modes}
    if not args.no_proton:
        import triton.profiler as proton
        profilers["proton"] = (proton, workloads(load_kernels("triton.profiler.language", "proton")))
    variants = ["plain"] + list(profilers)
    res = {}
    for rep in range(args.reps):
        for name in fns:
            for variant in (variants if rep % 2 == 0 else variants[::-1]):
                session, before = None, _cproton.instr_stats()
                prof, vfns = profilers.get(variant, (None, fns))
                if prof is not None:
                    session = prof.start(f"/tmp/cproton-wall-{len(res)}", backend="instrumentation",
                                         mode=modes.get(variant))
                try:
                    n = args.proton_launches if variant == "proton" else args.launches
                    wall, loop = wall_per_launch(vfns[name], n, variant in modes)
                finally:
                    t0 = time.perf_counter()
                    if session is not None:
                        prof.finalize(session)
                    fin = (time.perf_counter() - t0) * 1e3
                after = _cproton.instr_stats()
                drops = after["dropped"] - before["dropped"]
                res.setdefault((name, variant), []).append((wall, loop, fin, drops))
                print(f"rep {rep} {name} {variant}: {wall:.4f} ms/launch wall, {loop:.4f} ms/launch loop, "
                      f"finalize {fin:.1f} ms, dropped {drops}{breakdown(before, after)}", flush=True)
    if args.profile:
        profile_launches(fns, next(iter(modes.values())))
    print(f"wall per launch, steady state, {args.launches} launches, {args.reps} reps, "
          f"medians [device: {torch.cuda.get_device_name()}]")
    for name in fns:
        p = statistics.median(r[0] for r in res[(name, "plain")])
        parts = []
        for variant in modes:
            c = statistics.median(r[0] for r in res[(name, variant)])
            loop = statistics.median(r[1] for r in res[(name, variant)])
            fin = statistics.median(r[2] for r in res[(name, variant)])
            drops = max(r[3] for r in res[(name, variant)])
            parts.append(f"{variant} {c:.4f} ms ({c / p:.2f}x plain; loop {loop:.4f} ms, finalize {fin:.1f} ms, "
                         f"dropped {drops})")
        line = f"RESULT {name}: plain {p:.4f} ms; " + "; ".join(parts)
        if (name, "proton") in res:
            pr = statistics.median(r[0] for r in res[(name, "proton")])
            pf = statistics.median(r[2] for r in res[(name, "proton")])
            line += f"; Proton {pr:.4f} ms ({pr / p:.2f}x plain), finalize {pf:.1f} ms"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
