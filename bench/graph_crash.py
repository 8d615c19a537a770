#!/usr/bin/env python3
"""graph_crash.py -- where graph-level mode crashes, in one GPU call (issue
23: CPROTON_CUPTI_GRAPHS=graph died with SIGSEGV in every round of the
compiled GPT, torch.compile(mode="reduce-overhead")).

Runs bench/fresh_process.py's child (warm-up, start after it, timed steps,
finalize) once per variant, each in a fresh process with Python's
faulthandler on and bench/segv_backtrace.c preloaded, so a crash leaves the
Python stacks of every thread and a native backtrace of the thread that
crashed (frames in libcproton.so are named from its symbol table). When a
variant crashes and gdb is installed, one crashed variant (a cproton-graph
one first) is run once more under `gdb -batch`, after all the others, for
every thread's native stack.

Variants (default: all, the most telling first, so that a run cut short
still answers):

  cproton-graph       graph-level mode (lazy launch callbacks, the default)
  floor-graph         graph trace + kernel records + a no-op launch callback:
                      what graph-level mode asks of CUPTI, without cproton
                      (bench/cupti_floor.c, FLOOR_GRAPH_TRACE=1)
  cproton-graph-eager graph-level mode with CPROTON_CUPTI_LAZY=0
  floor-graphonly     CUPTI's graph trace alone (no kernel records, no
                      callback)
  cproton             cproton per node (control: known to run)

Reading it: a crash in floor-graph* is CUPTI's (its graph trace beside the
program's graphs); one only in cproton-graph* with libcproton.so frames on
top is cproton's; one in cproton-graph but not -eager points at lazy mode's
callback switching.

  python bench/graph_crash.py --out $OUT/crash              # GPU
  python bench/graph_crash.py --workloads cpu --variants cproton --out /tmp/c

Prints `RESULT graphcrash <variant> rc=.. signal=.. records=..`, the native
backtraces of crashed variants, a verdict line, and `PASS graphcrash` when no
cproton-graph variant crashed (else `FAIL graphcrash: ...`).
"""
import argparse
import bisect
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fresh_process  # noqa: E402
import workloads  # noqa: E402

VARIANTS = ["cproton-graph", "floor-graph", "cproton-graph-eager",
            "floor-graphonly", "cproton"]


def build_segv(out):
    lib = os.path.join(out, "libsegv_bt.so")
    cc = shutil.which("cc") or "gcc"
    subprocess.run([cc, "-O1", "-g", "-shared", "-fPIC",
                    os.path.join(HERE, "segv_backtrace.c"), "-o", lib], check=True)
    return lib


def child_cmd(variant, args):
    cmd = [sys.executable, os.path.join(HERE, "fresh_process.py"), "--child", variant,
           "--round", "0", "--workloads", ",".join(args.workloads), "--out", args.out]
    if args.steps:
        cmd += ["--steps", args.steps]
    if args.floor_lib:
        cmd += ["--floor-lib", args.floor_lib, "--cupti", args.cupti]
    return cmd


def child_env(variant, args, preload):
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONFAULTHANDLER="1",
               **fresh_process.ENV.get(variant, {}))
    if preload:
        env["LD_PRELOAD"] = preload + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    if args.cupti:
        env.setdefault("CPROTON_CUPTI_LIB", args.cupti)
    return env


class Symbols:
    """Nearest preceding symbol of an offset in one shared library (nm -n:
    static functions too, which a backtrace cannot name under -fvisibility)."""

    def __init__(self, lib):
        self.addrs, self.names = [], []
        nm = shutil.which("nm")
        if not (nm and lib and os.path.exists(lib)):
            return
        out = subprocess.run([nm, "-n", "--defined-only", lib], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                self.addrs.append(int(parts[0], 16))
                self.names.append(parts[2])

    def name(self, off):
        i = bisect.bisect_right(self.addrs, off) - 1
        return f"{self.names[i]}+{off - self.addrs[i]:#x}" if i >= 0 else None


FRAME = re.compile(r"^(\S+?)\(\+0x([0-9a-f]+)\)")


def cproton_libraries():
    """cproton's C code in this process tree: the Python extension (the
    library linked in) and the injection library, each with its symbols."""
    paths = [os.environ.get("CPROTON_INJECTION_LIB")]
    spec = importlib.util.find_spec("cproton._cproton")
    paths.append(spec.origin if spec else None)
    return {p: Symbols(p) for p in paths if p and os.path.exists(p)}


def native_backtrace(stderr, syms):
    """The native backtrace section of a child's stderr, frames in cproton's
    libraries named (a bare +0x offset is a hidden symbol)."""
    lines, inside = [], False
    for line in stderr.splitlines():
        if line.startswith("native backtrace"):
            inside = True
        if inside:
            m = FRAME.match(line)
            lib = m and next((s for p, s in syms.items()
                              if os.path.realpath(p) == os.path.realpath(m.group(1))), None)
            named = lib.name(int(m.group(2), 16)) if lib else None
            lines.append(line + (f"   <- {named}" if named else ""))
        if line.startswith("end of native backtrace"):
            inside = False
    return lines


def under_gdb(variant, args, log):
    gdb = shutil.which("gdb")
    if not gdb:
        return None
    cmd = [gdb, "-batch", "-ex", "set pagination off", "-ex", "handle SIGUSR1 SIGUSR2 nostop noprint",
           "-ex", "run", "-ex", "bt 40", "-ex", "thread apply all bt 12", "--args"]
    cmd += child_cmd(variant, args)
    env = child_env(variant, args, None)  # gdb catches the signal itself
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        text = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        text += "\n(gdb run timed out)\n"
    with open(log, "w") as f:
        f.write(text)
    # the crashing thread's stack: from gdb's signal stop to the next blank line
    m = re.search(r"received signal SIG\w+.*?(?=\n\s*\n|\Z)", text, re.S)
    return m.group(0).splitlines()[:45] if m else ["(gdb: no signal stop seen; see " + log + ")"]


def run(variant, args, preload, syms):
    log = os.path.join(args.out, "logs", f"{variant}.err")
    try:
        p = subprocess.run(child_cmd(variant, args), capture_output=True, text=True,
                           env=child_env(variant, args, preload), timeout=args.timeout)
        rc, err, out = p.returncode, p.stderr, p.stdout
    except subprocess.TimeoutExpired:
        rc, err, out = None, "(timed out)", ""
    with open(log, "w") as f:
        f.write(err)
    records = None
    for line in out.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            records = {w: r.get("kernels") for w, r in res.items()}
    sig = signal.Signals(-rc).name if rc is not None and rc < 0 else "-"
    print(f"RESULT graphcrash {variant} rc={rc} signal={sig} records={records}", flush=True)
    if rc != 0:
        print(f"--- {variant}: last lines of stderr ({log})")
        tail = [ln for ln in err.splitlines() if not ln.startswith(("native backtrace", "/"))]
        print("\n".join(tail[-25:]))
        bt = native_backtrace(err, syms)
        if bt:
            print(f"--- {variant}: native backtrace of the crashing thread")
            print("\n".join(bt))
    return rc


def gdb_last(variant, args):
    """After every variant ran (a cut-short part keeps their lines): one
    crashed variant once more under gdb."""
    log = os.path.join(args.out, "logs", f"{variant}.gdb")
    gl = under_gdb(variant, args, log)
    if gl:
        print(f"--- {variant}: gdb, the crashing thread")
        print("\n".join(gl))


def verdict(crashed, ran):
    graph = [v for v in crashed if v.startswith("cproton-graph")]
    if not crashed:
        return "no variant crashed"
    if any(v.startswith("floor-graph") for v in crashed):
        return ("CUPTI's graph trace crashes without cproton (" + ",".join(crashed) +
                "): a mode on CUPTI's graph trace cannot be made safe by cproton on this "
                "driver (graph-level mode now times launches with CUDA events instead)")
    if "cproton-graph" in crashed and "cproton-graph-eager" in ran and \
            "cproton-graph-eager" not in crashed:
        return "only with lazy launch callbacks: lazy mode's switching"
    if graph:
        return "cproton's graph-level mode crashes where bare CUPTI does not: see its backtrace"
    return "crashed: " + ",".join(crashed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="gpt_graph")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--steps", default="", help="workload=N,... (timed steps)")
    ap.add_argument("--timeout", type=float, default=150)
    ap.add_argument("--out", default="/tmp/cproton-graph-crash")
    ap.add_argument("--cupti", default=None)
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    variants = args.variants.split(",")
    for d in ("logs", "profiles"):
        os.makedirs(os.path.join(args.out, d), exist_ok=True)
    workloads.configure_caches(os.environ.get("GRAPH_BENCH_CACHE", "/tmp/cproton-graph-caches"))
    os.environ.setdefault("TRITON_CACHE_AUTOTUNING", "1")
    args.floor_lib = None
    if any(v.startswith("floor") for v in variants):
        from cupti_overhead import build_floor, find_cupti
        args.cupti = args.cupti or find_cupti()
        args.floor_lib = build_floor(args.out)
    preload = build_segv(args.out)
    syms = cproton_libraries()
    rcs = {v: run(v, args, preload, syms) for v in variants}
    crashed = [v for v, rc in rcs.items() if rc != 0]
    signalled = [v for v, rc in rcs.items() if rc is not None and rc < 0]
    if signalled:  # one gdb run (it costs a whole child), cproton's first
        gdb_last(min(signalled, key=lambda v: not v.startswith("cproton-graph")), args)
    print(f"RESULT graphcrash verdict: {verdict(crashed, variants)}")
    graph = [v for v in crashed if v.startswith("cproton-graph")]
    if graph:
        print(f"FAIL graphcrash: {','.join(graph)} crashed")
        return 1
    print("PASS graphcrash")
    return 0


if __name__ == "__main__":
    sys.exit(main())
