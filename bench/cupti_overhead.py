#!/usr/bin/env python3
"""cupti_overhead.py -- the launch-bound benchmark of issue 3 (GPU, not a test).

Workload: STEPS steps (default 20,000) of two tiny kernels each -- one Triton
kernel and one PyTorch op -- so 40,000 launches that do almost no GPU work:
the run time is launch overhead, which is what a kernel profiler adds to.

Variants, each in a fresh process (CUPTI allows one subscriber per process),
interleaved over REPS rounds (the order rotates every round):
  none     no profiler
  floor    bench/cupti_floor.c: CONCURRENT_KERNEL activity + a no-op launch
           callback -- what any CUPTI activity-based profiler pays
  cproton  libcproton.so through ctypes (cproton_session_start/finalize,
           backend "cupti"), independent of the Python package
  proton   triton.profiler (Proton 3.6), backend cupti, data tree
  torch    torch.profiler with CPU+CUDA activities, exported as chrome trace

Reported per variant: median loop time, added time per launch over "none",
ratio to "none", added time relative to the floor's, median finalize time
(flush + write for 40k launches) and the profile size.

Targets (issue 3): cproton added/launch <= floor's + 10% and below Proton's;
finalize < 50 ms; profile < 64 KB.

  python bench/cupti_overhead.py --lib build/libcproton.so --out /tmp/bench
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ["none", "floor", "cproton", "proton", "torch"]


# ---- the child: one measured run ------------------------------------------------

def make_workload():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def inc(x_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)

    x = torch.zeros(32, device="cuda")
    y = torch.zeros(32, device="cuda")

    def step():
        inc[(1,)](x, BLOCK=32)
        y.add_(1.0)

    return step, torch.cuda.synchronize


class Profiler:
    """start() / finalize() -> path of the profile written."""

    def __init__(self, kind, out, args):
        self.kind, self.out, self.args = kind, out, args

    def start(self):
        getattr(self, "start_" + self.kind)()

    def finalize(self):
        return getattr(self, "finalize_" + self.kind)()

    def start_none(self):
        pass

    def finalize_none(self):
        return None

    def start_floor(self):
        import ctypes
        self.lib = ctypes.CDLL(self.args.floor_lib)
        self.lib.floor_stop.restype = ctypes.c_longlong
        rc = self.lib.floor_start(self.args.cupti.encode())
        if rc:
            raise RuntimeError(f"floor_start failed: {rc}")

    def finalize_floor(self):
        self.records = self.lib.floor_stop()
        return None

    def start_cproton(self):
        import ctypes

        class Options(ctypes.Structure):
            _fields_ = [("name", ctypes.c_char_p), ("context", ctypes.c_char_p),
                        ("data", ctypes.c_char_p), ("backend", ctypes.c_char_p),
                        ("mode", ctypes.c_char_p), ("rank", ctypes.c_int),
                        ("local_rank", ctypes.c_int), ("gzip", ctypes.c_int)]

        self.lib = ctypes.CDLL(self.args.lib)
        self.lib.cproton_last_error.restype = ctypes.c_char_p
        o = Options()
        self.lib.cproton_session_options_init(ctypes.byref(o))
        self.name = os.path.join(self.out, "cproton")
        o.name, o.backend = self.name.encode(), b"cupti"
        self.sid = ctypes.c_int(-1)
        if self.lib.cproton_session_start(ctypes.byref(o), ctypes.byref(self.sid)):
            raise RuntimeError(self.lib.cproton_last_error().decode())

    def finalize_cproton(self):
        if self.lib.cproton_session_finalize(self.sid, None):
            raise RuntimeError(self.lib.cproton_last_error().decode())
        return self.name + ".hatchet"

    def start_proton(self):
        import triton.profiler as proton
        self.proton = proton
        self.name = os.path.join(self.out, "proton")
        proton.start(self.name, backend="cupti")

    def finalize_proton(self):
        self.proton.finalize()
        return self.name + ".hatchet"

    def start_torch(self):
        import torch
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        self.prof = torch.profiler.profile(activities=acts)
        self.prof.__enter__()

    def finalize_torch(self):
        self.prof.__exit__(None, None, None)
        path = os.path.join(self.out, "torch.json")
        self.prof.export_chrome_trace(path)
        return path


def kernel_count(path):
    """Kernels recorded in a hatchet profile (sum of kernel-node counts)."""
    def walk(n):
        m = n.get("metrics", {})
        own = m.get("count", 0) if "device_id" in m else 0
        return own + sum(walk(c) for c in n.get("children", []))
    try:
        with open(path) as f:
            return walk(json.load(f)[0])
    except (OSError, ValueError, IndexError):
        return None


def timed_run(step, sync, start, finalize, warmup, settle, steps):
    """One measured run: `warmup` steps (compile, autotune) outside the
    profiler, start, `settle` steps for the profiler's own first-use costs,
    then `steps` timed steps and finalize.
    Returns (loop seconds, finalize seconds, finalize's result)."""
    for _ in range(warmup):
        step()
    sync()
    start()
    for _ in range(settle):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    t1 = time.perf_counter()
    result = finalize()
    return t1 - t0, time.perf_counter() - t1, result


def child(args):
    out = os.path.join(args.out, f"run_{args.child}_{os.getpid()}")
    os.makedirs(out, exist_ok=True)
    step, sync = make_workload()
    prof = Profiler(args.child, out, args)
    loop_s, finalize_s, path = timed_run(step, sync, prof.start, prof.finalize,
                                         warmup=200, settle=100, steps=args.steps)
    size = os.path.getsize(path) if path and os.path.exists(path) else 0
    res = {"variant": args.child, "loop_s": loop_s, "finalize_s": finalize_s,
           "profile_bytes": size}
    if path and path.endswith(".hatchet"):
        res["kernels"] = kernel_count(path)
    if args.child == "floor":
        res["kernels"] = prof.records
    print("RESULT " + json.dumps(res), flush=True)


# ---- the parent: interleaved runs and the table ---------------------------------

def find_cupti():
    if os.environ.get("CPROTON_CUPTI_LIB"):
        return os.environ["CPROTON_CUPTI_LIB"]
    import site
    roots = site.getsitepackages() + [site.getusersitepackages()]
    for r in roots:
        hits = sorted(glob.glob(os.path.join(r, "nvidia", "**", "libcupti.so*"),
                                recursive=True))
        if hits:
            return hits[0]
    for d in ("/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64"):
        if os.path.exists(os.path.join(d, "libcupti.so")):
            return os.path.join(d, "libcupti.so")
    return "libcupti.so"


def build_floor(out):
    lib = os.path.join(out, "libcupti_floor.so")
    inc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")
    cc = shutil.which("cc") or "gcc"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-I" + inc,
                    os.path.join(HERE, "cupti_floor.c"), "-o", lib, "-ldl"],
                   check=True)
    return lib


def run_child(variant, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", variant,
           "--steps", str(args.steps), "--out", args.out, "--lib", args.lib,
           "--floor-lib", args.floor_lib, "--cupti", args.cupti]
    env = dict(os.environ, CPROTON_CUPTI_LIB=args.cupti)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=args.timeout)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.stderr.write(f"{variant} failed (exit {p.returncode}):\n{p.stderr[-2000:]}\n")
    return None


def table(runs, steps):
    launches = 2 * steps
    med = {v: statistics.median(r["loop_s"] for r in rs) for v, rs in runs.items() if rs}
    base = med.get("none")
    floor_add = (med["floor"] - base) / launches if base and "floor" in med else None
    print(f"\n{launches} launches per run; medians over {min(len(r) for r in runs.values())}+ runs\n")
    hdr = f"{'variant':8} {'loop ms':>9} {'x none':>7} {'+us/launch':>11} {'x floor add':>12} " \
          f"{'finalize ms':>12} {'profile B':>10} {'kernels':>8}"
    print(hdr)
    print("-" * len(hdr))
    for v, rs in runs.items():
        if not rs:
            print(f"{v:8} (failed)")
            continue
        m = med[v]
        add = (m - base) / launches if base else float("nan")
        xf = add / floor_add if floor_add else float("nan")
        fin = statistics.median(r["finalize_s"] for r in rs)
        size = statistics.median(r["profile_bytes"] for r in rs)
        k = rs[-1].get("kernels")
        print(f"{v:8} {m * 1e3:9.1f} {m / base if base else 0:7.3f} {add * 1e6:11.3f} "
              f"{xf:12.2f} {fin * 1e3:12.1f} {size:10.0f} {str(k):>8}")
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/cproton-bench-cupti"))
    ap.add_argument("--lib", default=os.path.join(HERE, "..", "build", "libcproton.so"))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--cupti", default=None, help="libcupti for floor and cproton")
    ap.add_argument("--floor-lib", default=None)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    args.lib = os.path.abspath(args.lib)
    if args.child:
        return child(args)
    args.cupti = args.cupti or find_cupti()
    args.floor_lib = args.floor_lib or build_floor(args.out)
    variants = args.variants.split(",")
    print(f"libcproton: {args.lib}\nlibcupti (floor, cproton): {args.cupti}")
    runs = {v: [] for v in variants}
    for rep in range(args.reps):
        order = variants[rep % len(variants):] + variants[:rep % len(variants)]
        for v in order:
            r = run_child(v, args)
            if r:
                runs[v].append(r)
                print(f"  round {rep} {v:8} loop {r['loop_s'] * 1e3:8.1f} ms  "
                      f"finalize {r['finalize_s'] * 1e3:7.1f} ms", flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(runs, f, indent=1)
    table(runs, args.steps)


if __name__ == "__main__":
    sys.exit(main())
