#!/usr/bin/env python3
"""fresh_process.py -- profiler overhead the way a user sees it: each
variant in a fresh process, the session started after warm-up, the wall
time of N steps, interleaved rounds, medians (issue 23).

Variants (one fresh process per variant and round; each child runs every
workload asked for, one session per workload):

  none            no profiler
  none-after      no profiler, but the CUPTI floor subscribed and stopped
                  once before the timed steps: what a process that was
                  profiled once carries afterwards (bench/realworld.py's
                  in-process blocks time their unprofiled loops in such a
                  process; docs/benchmarks.md, "Two methods")
  floor           bench/cupti_floor.c: kernel activity + a no-op launch
                  callback (the CUPTI floor)
  proton          triton.profiler (Proton 3.6), cupti backend
  cproton         import cproton as proton (defaults)
  cproton-graph   cproton with CPROTON_CUPTI_GRAPHS=graph (one record per
                  graph launch, timed by CUDA events: docs/cupti.md,
                  "Graph-level mode"; target <= 1.01x none)
  cproton-eager   cproton with CPROTON_CUPTI_LAZY=0
  cproton-pm      cproton with mode="pmsampling" (hardware metrics, the
                  default counters and interval; docs/hardware-metrics.md)
  cproton-graphonly  CPROTON_CUPTI_GRAPHS=graph-only: graph launches timed by
                  events, no kernel records at all (the <= 1.01x candidate)
  cproton-graph-eager  graph-level mode with CPROTON_CUPTI_LAZY=0
  floor-act       the floor without its launch callback (activity only)
  floor-graph     the floor plus CUPTI's graph trace (FLOOR_GRAPH_TRACE=1;
                  crashes on the compiled GPT: bench/graph_crash.py)
  floor-graphonly CUPTI's graph trace alone (no kernel records, no callback;
                  bench/graph_crash.py)
  abl-<name>      cproton with CPROTON_CUPTI_ABLATE=<name>: notimestamp
                  (CUPTI's clock), nographs (no graph-node or capture
                  callbacks), norecords (buffers recycled unread),
                  nocallback (no launch callbacks); --variants breakdown
                  runs these with none, floor, floor-act, cproton and
                  cproton-eager

In a child, per workload: build it, run --warmup steps (compilation,
autotuning, graph capture), synchronise, collect garbage; then start the
profiler (the floor, Proton or cproton), run the timed steps with the
collector off, synchronise, and take the wall time from just after start
returns to just after the synchronisation ("steps_s", the ratio reported);
start and finalize are timed apart ("start_s", "finalize_s"; "total_s" is
all three: the program profiled start to finish). Rounds are interleaved: round r runs the
variants rotated by r, so slow drift of the machine falls on every variant.
Reported per variant and workload: the median of the rounds, its ratio to
none, and the spread (min..max ratio).

  python bench/fresh_process.py --workloads gpt_graph,matmul_graph \
      --variants none,floor,proton,cproton,cproton-graph --rounds 3 \
      --budget 300 --out $OUT/fresh
  python bench/fresh_process.py --workloads cpu --variants none,cproton \
      --rounds 1 --steps cpu=200                       # no GPU needed

Output: a table, RESULT lines (`RESULT fresh <workload> <variant> x_none=R
steps_ms=M ...`), OUT/fresh.json (every child's numbers), OUT/logs/*.err.
"""
import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import graph_workloads  # noqa: E402
import workloads  # noqa: E402

VARIANTS = ["none", "floor", "proton", "cproton", "cproton-graph"]
ENV = {"cproton-graph": {"CPROTON_CUPTI_GRAPHS": "graph"},
       "cproton-graphonly": {"CPROTON_CUPTI_GRAPHS": "graph-only"},
       "cproton-graph-eager": {"CPROTON_CUPTI_GRAPHS": "graph", "CPROTON_CUPTI_LAZY": "0"},
       "cproton-eager": {"CPROTON_CUPTI_LAZY": "0"},
       "floor-act": {"FLOOR_NO_CALLBACK": "1"},
       "floor-graph": {"FLOOR_GRAPH_TRACE": "1"},
       "floor-graphonly": {"FLOOR_GRAPH_TRACE": "1", "FLOOR_NO_ACTIVITY": "1",
                           "FLOOR_NO_CALLBACK": "1"}}
# Variants that differ by their mode string (issue 27: hardware metrics).
MODES = {"cproton-pm": "pmsampling"}
# The per-node breakdown (docs/benchmarks.md): one part of cproton removed
# each (CPROTON_CUPTI_ABLATE; lazy callbacks are off under an ablation, so
# compare them with cproton-eager).
ABLATIONS = ("notimestamp", "nographs", "norecords", "nocallback")
ENV.update({f"abl-{a}": {"CPROTON_CUPTI_ABLATE": a} for a in ABLATIONS})
BREAKDOWN = ["none", "floor", "floor-act", "cproton", "cproton-eager"] + \
    [f"abl-{a}" for a in ABLATIONS]


def _workload(name, prof):
    if name in graph_workloads.WORKLOADS:
        return graph_workloads.WORKLOADS[name](prof)
    return workloads.WORKLOADS[name](lambda n: prof.scope(n))


class Profiler:
    """One variant inside a child: start(name, kw) / stop(); `scope` works
    as a context manager and a decorator, also while stopped."""

    def __init__(self, variant, args):
        self.variant, self.mod, self.floor = variant, None, None
        self.scope = graph_workloads.NoScope
        if variant.startswith("floor") or variant == "none-after":
            import ctypes
            self.floor = ctypes.CDLL(args.floor_lib)
            self.floor.floor_stop.restype = ctypes.c_longlong
            self.cupti = args.cupti.encode()
        elif variant != "none":
            if variant.startswith("proton"):
                import triton.profiler as mod
            else:
                import cproton as mod
            self.mod, self.scope = mod, mod.scope

    def before_timing(self):
        """none-after: one subscription of the floor, stopped at once."""
        if self.variant == "none-after":
            if self.floor.floor_start(self.cupti):
                raise RuntimeError("floor_start failed")
            self.floor.floor_stop()

    def start(self, name, kw):
        self.name = name
        if self.variant.startswith("floor"):
            if self.floor.floor_start(self.cupti):
                raise RuntimeError("floor_start failed")
        elif self.mod is not None:
            self.mod.start(name, **kw)

    def stop(self):
        if self.variant.startswith("floor"):
            return {"kernels": self.floor.floor_stop()}
        if self.mod is None:
            return {}
        self.mod.finalize()
        path = self.name + ".hatchet"
        if not os.path.exists(path):
            return {}
        from cupti_overhead import kernel_count
        return {"kernels": kernel_count(path), "profile_bytes": os.path.getsize(path)}


def child(args):
    prof = Profiler(args.child, args)
    results = {}
    for w in args.workloads:
        steps = args.steps.get(w, graph_workloads.STEPS.get(w, workloads.STEPS.get(w, 100)))
        warm = args.warmup.get(w, graph_workloads.WARMUP.get(w, 10))
        step, sync = _workload(w, prof)
        for _ in range(warm):
            step()
        sync()
        prof.before_timing()
        gc.collect()
        gc.disable()
        name = os.path.join(args.out, "profiles", f"{w}_{args.child}_{args.round}")
        kw = {}
        if prof.mod is not None:
            kw = dict(graph_workloads.START_KW.get(w, {}))
            if w != "cpu":
                kw["backend"] = "cupti"
            if args.child in MODES:
                kw["mode"] = MODES[args.child]
        try:
            t0 = time.perf_counter()
            prof.start(name, kw)
            t1 = time.perf_counter()
            for _ in range(steps):
                step()
            sync()
            t2 = time.perf_counter()
            info = prof.stop()
            t3 = time.perf_counter()
        finally:
            gc.enable()
        results[w] = dict(info, steps=steps, start_s=t1 - t0, steps_s=t2 - t1,
                          finalize_s=t3 - t2, total_s=t3 - t0)
    print("RESULT " + json.dumps(results), flush=True)


def run_child(variant, rnd, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", variant, "--round", str(rnd),
           "--workloads", ",".join(args.workloads), "--out", args.out,
           "--steps", ",".join(f"{k}={v}" for k, v in args.steps.items()),
           "--warmup", ",".join(f"{k}={v}" for k, v in args.warmup.items())]
    if args.floor_lib:
        cmd += ["--floor-lib", args.floor_lib, "--cupti", args.cupti]
    env = dict(os.environ, PYTHONHASHSEED="0", **ENV.get(variant, {}))
    if args.cupti:
        env.setdefault("CPROTON_CUPTI_LIB", args.cupti)
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    with open(os.path.join(args.out, "logs", f"{variant}_{rnd}.err"), "w") as f:
        f.write(p.stderr)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:]), time.time() - t0
    sys.stderr.write(f"{variant} round {rnd} failed (exit {p.returncode}):\n{p.stderr[-2000:]}\n")
    return None, time.time() - t0


def summary(runs, variants, workloads_):
    """{workload: {variant: {median steps_s, x_none, spread, ...}}}."""
    out = {}
    for w in workloads_:
        out[w] = {}
        base = [r[w]["steps_s"] for r in runs.get("none", []) if w in r]
        b = statistics.median(base) if base else None
        for v in variants:
            rs = [r[w] for r in runs.get(v, []) if w in r]
            if not rs:
                continue
            s = [r["steps_s"] for r in rs]
            m = statistics.median(s)
            out[w][v] = {"steps_ms": m * 1e3, "n": len(rs),
                         "x_none": m / b if b else None,
                         "spread": [min(s) / b, max(s) / b] if b else None,
                         "start_ms": statistics.median(r["start_s"] for r in rs) * 1e3,
                         "finalize_ms": statistics.median(r["finalize_s"] for r in rs) * 1e3,
                         "total_ms": statistics.median(r["total_s"] for r in rs) * 1e3,
                         "kernels": rs[-1].get("kernels")}
    return out


def report(summ):
    for w, vs in summ.items():
        print(f"\n{w}: wall time of the timed steps, median over rounds (fresh processes)")
        hdr = (f"{'variant':14} {'steps ms':>10} {'x none':>7} {'spread':>15} {'start ms':>9} "
               f"{'finalize ms':>12} {'kernels':>9}")
        print(hdr + "\n" + "-" * len(hdr))
        for v, s in vs.items():
            x = f"{s['x_none']:.3f}" if s["x_none"] else "-"
            sp = f"{s['spread'][0]:.3f}..{s['spread'][1]:.3f}" if s["spread"] else "-"
            print(f"{v:14} {s['steps_ms']:10.2f} {x:>7} {sp:>15} {s['start_ms']:9.1f} "
                  f"{s['finalize_ms']:12.1f} {str(s['kernels']):>9}")
            print(f"RESULT fresh {w} {v} x_none={x} steps_ms={s['steps_ms']:.2f} "
                  f"start_ms={s['start_ms']:.1f} finalize_ms={s['finalize_ms']:.1f} "
                  f"n={s['n']} kernels={s['kernels']}")


def _kv(text):
    out = {}
    for part in filter(None, (text or "").split(",")):
        k, _, v = part.partition("=")
        out[k] = int(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="gpt_graph,matmul_graph")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", default="", help="workload=N,... (timed steps)")
    ap.add_argument("--warmup", default="", help="workload=N,... (steps before start)")
    ap.add_argument("--budget", type=float, default=0, help="seconds: start no child past it")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", default="/tmp/cproton-fresh")
    ap.add_argument("--floor-lib", default=None)
    ap.add_argument("--cupti", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    args.steps, args.warmup = _kv(args.steps), _kv(args.warmup)
    if args.child:
        return child(args)
    variants = BREAKDOWN if args.variants == "breakdown" else args.variants.split(",")
    for d in ("logs", "profiles"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    # outside --out: the caches are tens of megabytes, and tests/gpu/run.sh
    # packs the output folder
    workloads.configure_caches(os.environ.get("GRAPH_BENCH_CACHE", "/tmp/cproton-graph-caches"))
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    if any(v.startswith("floor") or v == "none-after" for v in variants):
        from cupti_overhead import build_floor, find_cupti
        args.cupti = args.cupti or find_cupti()
        args.floor_lib = args.floor_lib or build_floor(args.out)
    runs, t_start, longest = {}, time.time(), 0.0
    for rnd in range(args.rounds):
        order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
        for v in order:
            if args.budget and time.time() - t_start + longest > args.budget:
                print(f"budget: {v} round {rnd} not started", flush=True)
                continue
            res, took = run_child(v, rnd, args)
            longest = max(longest, took)
            if res:
                runs.setdefault(v, []).append(res)
    summ = summary(runs, variants, args.workloads)
    with open(os.path.join(args.out, "fresh.json"), "w") as f:
        json.dump({"runs": runs, "summary": summ}, f, indent=1)
    report(summ)


if __name__ == "__main__":
    main()
