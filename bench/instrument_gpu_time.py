#!/usr/bin/env python3
"""instrument_gpu_time.py -- where the GPU time of instrumented launches goes
(issue 12; GPU, not a test): the user's kernel, the device reduction
(`cproton_reduce`), the copies and memsets of the copy stream, per launch,
from a torch.profiler (CUPTI activity) trace of N launches of the 64M vector
add and the 4096^3 matmul under an instrumentation session, next to the
same launches without one.

  python bench/instrument_gpu_time.py [--launches 20] [--mode default]
"""
import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from instrument_overhead import load_kernels  # noqa: E402
from instrument_wall import workloads  # noqa: E402


def gpu_table(fn, launches, session_mode):
    import cproton
    from cproton import _cproton
    sid = None
    if session_mode is not None:
        sid = cproton.start("/tmp/cproton-gpu-time", backend="instrumentation", mode=session_mode)
    for _ in range(5):  # compiled, buffers pooled
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(launches):
            fn()
        torch.cuda.synchronize()
        if sid is not None:
            _cproton.instr_flush()
    if sid is not None:
        cproton.finalize(sid)
    rows = {}
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if us and e.count:
            rows[e.key] = (e.count, us)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--mode", default="default")
    args = ap.parse_args()
    fns = workloads(load_kernels("cproton.language", "cproton_gpu_time"))
    for name, fn in fns.items():
        for label, mode in (("plain", None), (args.mode, args.mode)):
            rows = gpu_table(fn, args.launches, mode)
            total = sum(us for _, us in rows.values()) / args.launches
            print(f"RESULT {name} [{label}]: GPU busy {total:.1f} us per launch")
            for key, (count, us) in sorted(rows.items(), key=lambda kv: -kv[1][1])[:8]:
                print(f"  {us / args.launches:9.1f} us/launch  {count:5d} x  {key[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
