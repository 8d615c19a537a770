#!/usr/bin/env python3
"""realworld.py -- kernel-level profiler overhead on real programs (issue 15).

Workloads (bench/workloads.py): a compiled GPT training step (train),
CUDA-graph inference (graph), an eager training loop with scopes (eager), the
launch-bound loop (launch), and pure-Python scopes without a GPU (cpu, for
checking this harness anywhere). Variants, one fresh process each (CUPTI
allows one subscriber per process; each child runs every workload asked for):

  none            no profiler (scopes are no-ops): the method's null
  floor           bench/cupti_floor.c: kernel activity + a no-op launch callback
  proton          triton.profiler (Proton 3.6), cupti backend, its scopes
  proton-hook     Proton with hook="triton"
  cproton         import cproton as proton: shadow context, scopes; lazy
                  launch callbacks (the default: off while no launch site
                  can change, docs/cupti.md)
  cproton-eager   cproton with CPROTON_CUPTI_LAZY=0: a launch callback for
                  every launch (the default before 2026-11-26)
  cproton-hook    cproton with hook="triton"
  cproton-python  cproton with context="python"
  cproton-lazy    cproton with CPROTON_CUPTI_LAZY=1 and its debug log (the
                  default, with the switches logged)

--variants ablation (on --workloads launch) adds the per-launch breakdown:
CUPTI's two costs apart (floor-cb: callback only, floor-act: activity records
only) and cproton with one part of its launch path removed
(CPROTON_CUPTI_ABLATE: abl-nocallback, abl-nocapture, abl-noring,
abl-noactivity, abl-norecords; their profiles are incomplete by design).

The method: alternating blocks inside each process. Between fresh processes
the unprofiled loop of a CPU-bound workload varied 10-30% on the H100 host
(docs/benchmarks.md), more than any profiler costs, while everything that
differs between processes (where the threads and their memory landed, hash
and heap layout, the clocks the process started under) is fixed for a
process's life. So each child compiles and warms up once, then runs
--blocks blocks, each = one unprofiled loop of S steps and one profiled loop
(start, --settle steps, S timed steps, sync, finalize), the unprofiled loop
first in even blocks and second in odd ones, so that slow drift falls on
both sides equally. Each loop: --settle untimed steps, gc.collect(), the
collector off, S steps with a clock read after each, one sync at the end.
Per block: profiled / unprofiled loop ("x own base"); per child: the median
over its blocks; per variant: the median and spread of the children's
medians over --rounds fresh processes, interleaved (the order of variants
rotates every round). Children get PYTHONHASHSEED=0 and, with --cpus, a fixed
CPU set. Each profiled block writes its own profile, so finalize time,
profile size and kernel count are per block (kernel counts must match
between profilers; a mismatch is printed loudly). --budget S stops starting
children that would end past S seconds and prints what it has.

  python bench/realworld.py --workloads train,eager,launch --rounds 2 \
      --blocks 6 --steps train=60,eager=60 --budget 390 --out $OUT/rw
  python bench/realworld.py --workloads launch --variants ablation \
      --rounds 2 --blocks 6 --budget 270 --out $OUT/rw
  python bench/realworld.py --workloads cpu --variants none,cproton \
      --rounds 1 --blocks 2 --steps 200        # no GPU needed

or through tests/gpu/run.sh (after a build; PYTHONPATH then finds cproton):
BENCH=realworld WORKLOADS=train,eager,launch REPS=2 RW_BLOCKS=6
RW_STEPS=train=60,eager=60 RW_BUDGET=390 PART_TIMEOUT=450 bash tests/gpu/run.sh
build bench. Output: tables on stdout, OUT/runs.json (every block of every
child), OUT/realworld.json (the summaries), OUT/profiles (each child's last
profile per workload), OUT/logs (each child's stderr);
`python bench/realworld_report.py OUT/runs.json` prints the tables again.
"""
import argparse
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import realworld_report as report  # noqa: E402
import workloads  # noqa: E402
from cupti_overhead import build_floor, find_cupti, kernel_count  # noqa: E402

# The order of round 0; round r starts r places later, so a --budget that
# cuts the last round short still gives the first variants a second process.
VARIANTS = ["none", "floor", "proton", "cproton", "cproton-eager", "proton-hook",
            "cproton-hook", "cproton-python"]
# The ablations switch lazy mode off: they are measured against cproton-eager.
ABLATION = ["none", "floor", "cproton", "proton", "floor-cb", "floor-act", "abl-nocallback",
            "abl-nocapture", "abl-noring", "abl-noactivity", "abl-norecords", "cproton-eager",
            "cproton-hook", "proton-hook"]
# Environment of each variant's child (the profiler reads it at start).
ENV = {"floor-cb": {"FLOOR_NO_ACTIVITY": "1"}, "floor-act": {"FLOOR_NO_CALLBACK": "1"},
       "cproton-lazy": {"CPROTON_CUPTI_LAZY": "1", "CPROTON_LOG": "debug"},
       "cproton-eager": {"CPROTON_CUPTI_LAZY": "0"}}
ENV.update({f"abl-{a}": {"CPROTON_CUPTI_ABLATE": a}
            for a in ("nocallback", "nocapture", "noring", "noactivity", "norecords")})


# ---- the child -------------------------------------------------------------------

class Profiler:
    """One variant's profiler inside a child, started and stopped once per
    block: start(name, gpu) before a profiled loop, stop() after it returns
    {"finalize_s", and where known "kernels", "profile", "profile_bytes"}.
    `scope(name)` is what the workloads' steps enter (also while stopped)."""

    def __init__(self, variant, args):
        self.variant, self.mod, self.floor = variant, None, None
        self.scope = lambda name: contextlib.nullcontext()
        if variant.startswith("floor"):
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
            self.kw = {"hook": "triton"} if variant.endswith("-hook") else {}
            if variant.endswith("-python"):
                self.kw["context"] = "python"

    def start(self, name, gpu):
        self.name = name
        if self.floor is not None:
            rc = self.floor.floor_start(self.cupti)
            if rc:
                raise RuntimeError(f"floor_start failed ({rc})")
        elif self.mod is not None:
            self.mod.start(name, **self.kw, **({"backend": "cupti"} if gpu else {}))

    def stop(self):
        t0 = time.perf_counter()
        if self.floor is not None:
            records = self.floor.floor_stop()
        elif self.mod is not None:
            self.mod.finalize()
        out = {"finalize_s": time.perf_counter() - t0}
        if self.floor is not None and os.environ.get("FLOOR_NO_ACTIVITY") != "1":
            out["kernels"] = records
        elif self.mod is not None and os.path.exists(self.name + ".hatchet"):
            path = out["profile"] = self.name + ".hatchet"
            out["profile_bytes"] = os.path.getsize(path)
            out["kernels"] = kernel_count(path)
        return out


def timed_loop(step, sync, lead_in, steps):
    """`lead_in` untimed steps, then `steps` timed ones with the collector
    off: (loop seconds, median step seconds). Synchronises only at the
    loop's ends, so asynchronous launches stay asynchronous; the step times
    are CPU times between returns (back-pressure where the GPU is behind)."""
    for _ in range(lead_in):
        step()
    sync()
    gc.collect()
    gc.disable()
    clock = time.perf_counter
    marks = [0.0] * (steps + 1)
    try:
        marks[0] = t0 = clock()
        for i in range(1, steps + 1):
            step()
            marks[i] = clock()
        sync()
        loop = clock() - t0
    finally:
        gc.enable()
    return loop, statistics.median(b - a for a, b in zip(marks, marks[1:]))


def current_cpu():
    """The CPU this thread last ran on (Linux; None elsewhere): recorded per
    block, to see whether a slow base loop goes with a placement."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rpartition(")")[2].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def run_block(b, step, sync, prof, name, gpu, args, steps):
    """One unprofiled and one profiled loop, the unprofiled first in even
    blocks: {"base_s", "prof_s", their median steps, and stop()'s keys}."""
    def profiled():
        prof.start(name, gpu)
        try:
            r = timed_loop(step, sync, args.settle, steps)
        except BaseException:
            with contextlib.suppress(Exception):
                prof.stop()
            raise
        return r, prof.stop()

    if b % 2 == 0:
        base = timed_loop(step, sync, args.settle, steps)
        (loop, step_s), info = profiled()
    else:
        (loop, step_s), info = profiled()
        base = timed_loop(step, sync, args.settle, steps)
    return dict(info, block=b, base_first=b % 2 == 0, base_s=base[0], base_step_s=base[1],
                prof_s=loop, prof_step_s=step_s, cpu=current_cpu())


def run_workload(w, prof, args, out):
    """Warm-up, then the blocks; prints a BLOCK line per block and a DONE
    line at the end (with the error that stopped it, if one did)."""
    steps = args.steps_of[w]
    step, sync = workloads.WORKLOADS[w](prof.scope)
    for _ in range(args.warmup):
        step()
    sync()
    gc.collect()
    gc.freeze()  # what the warm-up built is never scanned again
    done = {"workload": w, "steps": steps, "settle": args.settle, "profile": None}
    for b in range(args.blocks):
        name = os.path.join(out, f"{w}_{prof.variant}_{os.getpid()}_b{b}")
        try:
            blk = run_block(b, step, sync, prof, name, w not in workloads.GPU_FREE, args, steps)
        except Exception as e:  # noqa: BLE001 -- reported, the child goes on
            done["error"] = f"block {b}: {type(e).__name__}: {e}"
            break
        if blk.get("profile"):
            if done["profile"] and not args.keep_profiles:
                os.remove(done["profile"])
            done["profile"] = blk["profile"]
        print("BLOCK " + json.dumps(dict(blk, workload=w, steps=steps, settle=args.settle)),
              flush=True)
    gc.unfreeze()
    print("DONE " + json.dumps(done), flush=True)


def parse_cpus(spec):
    """"2-5,8" -> {2, 3, 4, 5, 8}."""
    cpus = set()
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def child(args):
    if args.cpus:  # before PyTorch starts its threads: they inherit it
        os.sched_setaffinity(0, parse_cpus(args.cpus))
    if os.environ.get("CPROTON_LOG") in ("info", "debug"):  # the backend's lines
        import logging
        logging.basicConfig(level=logging.DEBUG, format="cproton %(message)s")
    out = os.path.join(args.out, "profiles")
    os.makedirs(out, exist_ok=True)
    workloads.configure_caches(args.cache)
    print("CHILD " + json.dumps({"pid": os.getpid(), "cpus": sorted(os.sched_getaffinity(0)),
                                 "load": os.getloadavg()}), flush=True)
    prof = Profiler(args.child, args)
    for w in args.workload_list:
        try:
            run_workload(w, prof, args, out)
        except Exception as e:  # noqa: BLE001 -- building or warming up failed
            print("DONE " + json.dumps({"workload": w, "error": f"{type(e).__name__}: {e}"}),
                  flush=True)
        gc.collect()
    print("CHILD " + json.dumps({"load_end": os.getloadavg()}), flush=True)


# ---- the parent --------------------------------------------------------------------

def child_cmd(variant, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", variant,
           "--workloads", ",".join(args.workload_list), "--steps", args.steps,
           "--blocks", str(args.blocks), "--settle", str(args.settle),
           "--warmup", str(args.warmup), "--out", args.out, "--cache", args.cache]
    for flag, value in (("--floor-lib", args.floor_lib), ("--cupti", args.cupti),
                        ("--cpus", args.cpus)):
        if value:
            cmd += [flag, value]
    return cmd + (["--keep-profiles"] if args.keep_profiles else [])


def read_child(lines, variant, echo):
    """Parses a child's stdout as it comes: {workload: result}, where a
    result is {"variant", "workload", "blocks": [...], DONE's keys} and the
    CHILD lines' keys."""
    results, info = {}, {}
    for line in lines:
        kind, _, body = line.partition(" ")
        if kind not in ("BLOCK", "DONE", "CHILD"):
            continue
        d = json.loads(body)
        if kind == "CHILD":
            info.update(d)
            continue
        r = results.setdefault(d["workload"], {"variant": variant, "workload": d["workload"],
                                               "blocks": []})
        if kind == "BLOCK":
            r["blocks"].append(d)
            echo(r, d)
        else:
            r.update(d)
    for r in results.values():
        r.update(info)
    return results


def run_child(variant, rnd, args):
    """Runs one child to its end or its time limit; returns its results
    (those of blocks that finished, also when it failed)."""
    env = dict(os.environ, **ENV.get(variant, {}))
    env.setdefault("PYTHONHASHSEED", "0")
    if args.cupti:
        env["CPROTON_CUPTI_LIB"] = args.cupti
    err_path = os.path.join(args.out, "logs", f"r{rnd}_{variant}.err")
    os.makedirs(os.path.dirname(err_path), exist_ok=True)

    def echo(r, b):
        print(f"  {r['workload']:7} r{rnd} {variant:15} b{b['block']} "
              f"base {b['base_s'] * 1e3:8.1f} ms  prof {b['prof_s'] * 1e3:8.1f} ms  "
              f"x{b['prof_s'] / b['base_s']:6.3f}  fin {b['finalize_s'] * 1e3:6.1f} ms  "
              f"kernels {b.get('kernels')}", flush=True)

    with open(err_path, "w") as err:
        p = subprocess.Popen(child_cmd(variant, args), stdout=subprocess.PIPE, stderr=err,
                             text=True, env=env)
        timer = threading.Timer(args.timeout, p.kill)
        timer.start()
        try:
            results = read_child(p.stdout, variant, echo)
        finally:
            p.wait()
            timer.cancel()
    with open(err_path) as f:
        stderr = f.read()
    log = [x for x in stderr.splitlines()
           if "cproton" in x and ("lazy" in x or "Warning" in x)][:40]
    for w in args.workload_list:
        r = results.setdefault(w, {"variant": variant, "workload": w, "blocks": []})
        r["log"] = log
        if "steps" not in r or p.returncode:
            r.setdefault("error", f"child exit {p.returncode}"
                         + (" (killed at --timeout)" if p.returncode == -9 else ""))
        if r.get("error"):
            print(f"!! {w} r{rnd} {variant}: {r['error']}\n{stderr[-3000:]}", flush=True)
    for x in log:
        print("    " + x, flush=True)
    return results


def schedule(variants, args):
    """Rounds of fresh children, the order rotated every round, within
    --budget: {workload: {variant: [result per child]}}."""
    runs = {w: {v: [] for v in variants} for w in args.workload_list}
    t_begin, durations, skipped = time.monotonic(), [], []
    for rnd in range(args.rounds):
        k = rnd % len(variants)
        for v in variants[k:] + variants[:k]:
            # the first child compiles (cold caches): a poor estimate
            est = max(durations[1:] or durations or [0])
            if args.budget and time.monotonic() - t_begin + est > args.budget:
                skipped.append(f"r{rnd} {v}")
                continue
            t0 = time.monotonic()
            for w, r in run_child(v, rnd, args).items():
                runs[w][v].append(r)
            durations.append(time.monotonic() - t0)
            with open(os.path.join(args.out, "runs.json"), "w") as f:
                json.dump(runs, f, indent=1)
    if skipped:
        print(f"\nbudget {args.budget} s: {len(skipped)} children not started "
              f"({', '.join(skipped)})", flush=True)
    print(f"children: {len(durations)}, {time.monotonic() - t_begin:.0f} s "
          f"(each {min(durations, default=0):.0f}-{max(durations, default=0):.0f} s)", flush=True)
    return runs


def steps_of(spec, names):
    """"" -> the workloads' defaults; "80" -> 80 for every workload;
    "train=80,launch=20000" -> those, defaults for the rest."""
    out = {w: workloads.STEPS[w] for w in names}
    for part in filter(None, spec.split(",")):
        w, _, n = part.rpartition("=")
        out.update({w: int(n)} if w else {x: int(n) for x in names})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="train,graph,eager,launch")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma list, or 'ablation' for the per-launch breakdown")
    ap.add_argument("--rounds", type=int, default=2, help="fresh processes per variant")
    ap.add_argument("--blocks", type=int, default=6, help="alternating blocks per process")
    ap.add_argument("--steps", default="",
                    help="steps per loop: N for every workload or w=N,...; default "
                         + ", ".join(f"{w} {n}" for w, n in workloads.STEPS.items()))
    ap.add_argument("--settle", type=int, default=5, help="untimed steps before each loop")
    ap.add_argument("--warmup", type=int, default=40)
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds: start no child that would end later (0: no limit)")
    ap.add_argument("--cpus", default="", help="pin children to these CPUs, e.g. 2-9")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/cproton-realworld"))
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(),
                                                    "cproton-realworld-cache"),
                    help="Inductor/Triton caches, shared by the children")
    ap.add_argument("--keep-profiles", action="store_true",
                    help="keep every block's profile (default: each child's last)")
    ap.add_argument("--cupti", default=None)
    ap.add_argument("--floor-lib", default=None)
    ap.add_argument("--timeout", type=int, default=420, help="seconds per child")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.workload_list = args.workloads.split(",")
    args.steps_of = steps_of(args.steps, args.workload_list)
    os.makedirs(args.out, exist_ok=True)
    if args.child:
        return child(args)
    variants = ABLATION if args.variants == "ablation" else args.variants.split(",")
    if any(v.startswith("floor") for v in variants):
        args.cupti = args.cupti or find_cupti()
        args.floor_lib = args.floor_lib or build_floor(args.out)
    elif any(v != "none" for v in variants) and not set(args.workload_list) <= workloads.GPU_FREE:
        args.cupti = args.cupti or find_cupti()
    print(f"realworld: {args.rounds} rounds x {args.blocks} blocks, steps per loop "
          f"{args.steps_of}, settle {args.settle}, cpus {args.cpus or 'any'}", flush=True)
    runs = schedule(variants, args)
    results = {w: report.workload(w, runs[w]) for w in args.workload_list}
    with open(os.path.join(args.out, "realworld.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
