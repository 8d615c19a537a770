#!/usr/bin/env python3
"""realworld.py -- kernel-level profiler overhead on real programs (issue 15).

Workloads (bench/workloads.py): a compiled GPT training step, CUDA-graph
inference, an eager training loop with scopes, and the launch-bound loop.
Variants, each run in a fresh process (CUPTI allows one subscriber per
process), interleaved over ROUNDS rounds with the order rotated every round:

  none            no profiler (scopes are no-ops)
  floor           bench/cupti_floor.c: kernel activity + a no-op launch callback
  proton          triton.profiler (Proton 3.6), cupti backend, its scopes
  proton-hook     Proton with hook="triton"
  cproton         import cproton as proton: shadow context, scopes
  cproton-hook    cproton with hook="triton"
  cproton-python  cproton with context="python"
  cproton-lazy    cproton with CPROTON_CUPTI_LAZY=1: launch callbacks off
                  while no launch site can change (docs/cupti.md)

The per-launch breakdown (--variants of ABLATION, on the launch workload)
adds CUPTI's two costs apart (floor-cb: callback only, floor-act: activity
records only) and cproton with one part of its launch path removed
(CPROTON_CUPTI_ABLATE: abl-nocallback, abl-nocapture, abl-noring,
abl-noactivity, abl-norecords; their profiles are incomplete by design).

Each child compiles and warms up outside the profiler, starts it, runs STEPS
steps, synchronises, and reports the loop time, finalize time, profile size
and kernel count (from the profile, or the floor's record count). The parent
prints medians, the spread (max-min over median) of each variant, the ratio
to "none", and the added time relative to the floor's added time.

  python bench/realworld.py --workloads train,graph --rounds 5 --out $OUT/rw
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import workloads  # noqa: E402
from cupti_overhead import build_floor, find_cupti, kernel_count, timed_run  # noqa: E402

VARIANTS = ["none", "floor", "proton", "cproton", "cproton-lazy", "cproton-hook",
            "cproton-python"]
ABLATION = ["none", "floor", "floor-cb", "floor-act", "proton", "cproton", "cproton-lazy",
            "cproton-hook", "abl-nocallback", "abl-nocapture", "abl-noring",
            "abl-noactivity", "abl-norecords"]
# Environment of each variant's child (the profiler reads it at start).
ENV = {"floor-cb": {"FLOOR_NO_ACTIVITY": "1"}, "floor-act": {"FLOOR_NO_CALLBACK": "1"},
       "cproton-lazy": {"CPROTON_CUPTI_LAZY": "1", "CPROTON_LOG": "debug"}}
ENV.update({f"abl-{a}": {"CPROTON_CUPTI_ABLATE": a}
            for a in ("nocallback", "nocapture", "noring", "noactivity", "norecords")})


# ---- the child -------------------------------------------------------------------

def profiler_for(variant, args, out):
    """(module or None, start(), finalize() -> profile path or None)."""
    name = os.path.join(out, variant)
    if variant == "none":
        return None, (lambda: None), (lambda: None)
    if variant.startswith("floor"):
        import ctypes
        lib = ctypes.CDLL(args.floor_lib)
        lib.floor_stop.restype = ctypes.c_longlong
        state = {}

        def start():
            if lib.floor_start(args.cupti.encode()):
                raise RuntimeError("floor_start failed")

        def stop():
            state["records"] = lib.floor_stop()
            return state
        return None, start, stop
    if variant.startswith("proton"):
        import triton.profiler as mod
    else:
        import cproton as mod
    kw = {"backend": "cupti"}
    if variant.endswith("-hook"):
        kw["hook"] = "triton"
    if variant.endswith("-python"):
        kw["context"] = "python"

    def fin():
        mod.finalize()
        return name + ".hatchet"
    return mod, (lambda: mod.start(name, **kw)), fin


def loops(step, sync, n, steps):
    out = []
    for _ in range(n):
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        out.append(time.perf_counter() - t0)
    return out


def best_of(step, sync, start, finalize, args):
    """warm-up, `paired` unprofiled loops, start, settle, `loops` profiled
    loops, finalize: (best profiled loop, finalize s, profile, base loops)."""
    for _ in range(args.warmup):
        step()
    base = loops(step, sync, args.paired if args.child != "none" else 0, args.steps)
    start()
    for _ in range(max(1, args.warmup // 4)):
        step()
    prof_loops = loops(step, sync, args.loops, args.steps)
    t1 = time.perf_counter()
    result = finalize()
    return min(prof_loops), time.perf_counter() - t1, result, base


def child(args):
    if os.environ.get("CPROTON_LOG") in ("info", "debug"):  # the backend's lines
        import logging
        logging.basicConfig(level=logging.DEBUG, format="cproton %(message)s")
    out = os.path.join(args.out, f"{args.workload}_{args.child}_{os.getpid()}")
    os.makedirs(out, exist_ok=True)
    workloads.configure_caches(args.out)
    mod, start, finalize = profiler_for(args.child, args, out)
    scope = mod.scope if mod is not None else (lambda name: contextlib.nullcontext())
    step, sync = workloads.WORKLOADS[args.workload](scope)
    # --paired N: N unprofiled loops in this process before the profiler
    # starts, a baseline paired with the profiled loops (same compile, same
    # memory layout); --loops K: K profiled loops. With either, each side
    # reports its best loop: interference from the rest of the machine only
    # ever slows a loop down, so the minimum is the steadiest estimate.
    base = []
    if args.paired or args.loops > 1:
        loop_s, finalize_s, prof, base = best_of(step, sync, start, finalize, args)
    else:
        loop_s, finalize_s, prof = timed_run(step, sync, start, finalize,
                                             warmup=args.warmup,
                                             settle=max(1, args.warmup // 4),
                                             steps=args.steps)
    res = {"variant": args.child, "workload": args.workload, "loop_s": loop_s,
           "finalize_s": finalize_s, "steps": args.steps}
    if base:
        res["base_s"] = min(base)
    if isinstance(prof, dict):
        res["kernels"] = prof["records"]
    elif prof and os.path.exists(prof):
        res["profile_bytes"] = os.path.getsize(prof)
        res["kernels"] = kernel_count(prof)
        res["profile"] = prof
    print("RESULT " + json.dumps(res), flush=True)


# ---- the parent --------------------------------------------------------------------

def run_child(workload, variant, steps, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", variant,
           "--workload", workload, "--steps", str(steps), "--warmup", str(args.warmup),
           "--out", args.out, "--floor-lib", args.floor_lib, "--cupti", args.cupti,
           "--paired", str(args.paired), "--loops", str(args.loops)]
    env = dict(os.environ, CPROTON_CUPTI_LIB=args.cupti, **ENV.get(variant, {}))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=args.timeout)
    except subprocess.TimeoutExpired:
        sys.stderr.write(f"{workload}/{variant}: timed out\n")
        return None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            res["log"] = [x for x in p.stderr.splitlines()
                          if "cproton" in x and ("lazy" in x or "Warning" in x)][:40]
            return res
    sys.stderr.write(f"{workload}/{variant} failed (exit {p.returncode}):\n"
                     f"{p.stderr[-3000:]}\n")
    return None


def summarise(workload, runs):
    """Prints one table; returns {variant: summary} for results.json."""
    med = {v: statistics.median(r["loop_s"] for r in rs) for v, rs in runs.items() if rs}
    base, floor = med.get("none"), med.get("floor")
    floor_add = floor - base if base and floor else None
    print(f"\n== {workload}: medians over {min((len(r) for r in runs.values()), default=0)}"
          f"+ rounds\n")
    print(f"{'variant':15} {'loop ms':>9} {'spread':>7} {'x none':>7} {'added/floor':>11} "
          f"{'fin ms':>7} {'profile B':>10} {'kernels':>9} {'x own base':>10}")
    out = {}
    for v, rs in runs.items():
        if not rs:
            print(f"{v:15} (failed)")
            continue
        loops = [r["loop_s"] for r in rs]
        m = med[v]
        spread = (max(loops) - min(loops)) / m
        ratio = m / base if base else float("nan")
        xf = (m - base) / floor_add if floor_add and base else float("nan")
        fin = statistics.median(r["finalize_s"] for r in rs)
        size = statistics.median(r.get("profile_bytes", 0) for r in rs)
        k = rs[-1].get("kernels")
        pairs = [r["loop_s"] / r["base_s"] for r in rs if r.get("base_s")]
        paired = statistics.median(pairs) if pairs else float("nan")
        print(f"{v:15} {m * 1e3:9.1f} {spread:7.1%} {ratio:7.3f} {xf:11.2f} "
              f"{fin * 1e3:7.1f} {size:10.0f} {str(k):>9} {paired:10.3f}")
        out[v] = {"median_s": m, "spread": spread, "x_none": ratio,
                  "added_over_floor": xf, "finalize_s": fin, "profile_bytes": size,
                  "kernels": k, "loops_s": loops, "x_own_base": paired,
                  "own_base_ratios": pairs}
    return out


def placement(path):
    """{kernel node path: count} of a hatchet profile: where every kernel
    landed, for comparing profilers (and cproton's modes) run by run."""
    out = {}

    def walk(n, prefix):
        for c in n.get("children", []):
            p = prefix + "/" + c.get("frame", {}).get("name", "?")
            m = c.get("metrics", {})
            if "device_id" in m:
                out[p] = out.get(p, 0) + m.get("count", 0)
            walk(c, p)
    try:
        with open(path) as f:
            walk(json.load(f)[0], "")
    except (OSError, ValueError, IndexError):
        return None
    return out


def compare_placement(workload, runs, ref="cproton"):
    """Prints, for each variant with a profile, whether its kernels sit at
    the same places with the same counts as `ref`'s (last runs compared)."""
    base = runs.get(ref) and runs[ref][-1].get("profile")
    base = placement(base) if base else None
    if base is None:
        return {}
    out = {}
    for v, rs in runs.items():
        if v == ref or not rs or not rs[-1].get("profile") or v.startswith("abl-"):
            continue
        other = placement(rs[-1]["profile"]) or {}
        diff = sorted(k for k in set(base) | set(other) if base.get(k) != other.get(k))
        out[v] = len(diff)
        print(f"placement {workload} {v} vs {ref}: "
              + ("identical" if not diff else f"{len(diff)} paths differ, e.g. "
                 + "; ".join(f"{k}: {base.get(k)} vs {other.get(k)}" for k in diff[:4])),
              flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="train,graph,eager,launch")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma list, or 'ablation' for the per-launch breakdown")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=0, help="0: the workload's default")
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/cproton-realworld"))
    ap.add_argument("--cupti", default=None)
    ap.add_argument("--floor-lib", default=None)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--loops", type=int, default=1,
                    help="profiled loops per child; the best one is reported")
    ap.add_argument("--paired", type=int, default=0,
                    help="unprofiled loops run in each child before its profiler starts")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--workload", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.child:
        return child(args)
    args.cupti = args.cupti or find_cupti()
    args.floor_lib = args.floor_lib or build_floor(args.out)
    variants = ABLATION if args.variants == "ablation" else args.variants.split(",")
    results = {}
    for w in args.workloads.split(","):
        steps = args.steps or workloads.STEPS[w]
        run_child(w, "none", min(steps, 20), args)  # fills the compile caches
        runs = {v: [] for v in variants}
        for rnd in range(args.rounds):
            k = rnd % len(variants)
            for v in variants[k:] + variants[:k]:
                r = run_child(w, v, steps, args)
                if r:
                    runs[v].append(r)
                    b = f" (own base {r['base_s'] * 1e3:.1f})" if r.get("base_s") else ""
                    print(f"  {w} round {rnd} {v:15} {r['loop_s'] * 1e3:9.1f} ms{b}"
                          f" kernels {r.get('kernels')}", flush=True)
                    for x in r.get("log", []):
                        print("    " + x, flush=True)
        results[w] = summarise(w, runs)
        results[w]["placement_diffs"] = compare_placement(w, runs)
    with open(os.path.join(args.out, "realworld.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
