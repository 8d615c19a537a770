#!/usr/bin/env python3
"""realworld_report.py -- the tables of bench/realworld.py, from its
children's results: per variant the paired ratios ("x own base": profiled /
unprofiled loop of one block in one process) with their spreads, what the
profilers wrote (finalize time, profile size, kernel counts per block, where
the kernels landed), issue 15's targets, and the per-launch breakdown.

Numbers per child: the median over its blocks; per variant: the median of
its children's medians ("x own base"), their spread (max - min), and the
quartiles of all its blocks. Added time is (x - 1) times the workload's
pooled unprofiled step (the median over every child of every variant), so
that a process that happened to run slower does not weigh more; the
breakdown divides that by the kernels per step.

  python bench/realworld_report.py OUT/runs.json [OUT2/runs.json ...]

re-reads saved runs; several (the same command run twice) are pooled, each
child still one process.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

median = statistics.median


def child_stats(r):
    """One child's blocks summarised (None if it finished none)."""
    bl = r.get("blocks") or []
    if not bl:
        return None
    bases = [b["base_s"] for b in bl]
    fin = [b["finalize_s"] for b in bl]
    sizes = [b["profile_bytes"] for b in bl if "profile_bytes" in b]
    return {"x": median(b["prof_s"] / b["base_s"] for b in bl),
            "ratios": [b["prof_s"] / b["base_s"] for b in bl],
            "x_step": median(b["prof_step_s"] / b["base_step_s"] for b in bl),
            "base_step_s": median(bases) / bl[0]["steps"],
            "noise": (max(bases) - min(bases)) / median(bases),
            "drift": median(bases[1:]) / bases[0] if len(bases) > 1 else None,
            "finalize_s": median(fin), "profile_bytes": median(sizes) if sizes else None,
            "kernels": {b["kernels"] for b in bl if b.get("kernels") is not None},
            "steps": bl[0]["steps"], "settle": bl[0]["settle"]}


def variant_stats(results):
    """A variant's children summarised (None if none finished a block)."""
    cs = [c for c in map(child_stats, results) if c]
    if not cs:
        return None
    xs = [c["x"] for c in cs]
    blocks = sorted(x for c in cs for x in c["ratios"])
    q = statistics.quantiles(blocks, n=4, method="inclusive") if len(blocks) > 1 \
        else blocks * 3
    drifts = [c["drift"] for c in cs if c["drift"] is not None]
    sizes = [c["profile_bytes"] for c in cs if c["profile_bytes"] is not None]
    return {"x": median(xs), "per_process": xs, "spread": max(xs) - min(xs),
            "blocks": len(blocks), "q1": q[0], "q3": q[2],
            "x_step": median(c["x_step"] for c in cs),
            "base_steps_s": [c["base_step_s"] for c in cs],
            "noise": median(c["noise"] for c in cs),
            "drift": median(drifts) if drifts else None,
            "finalize_s": median(c["finalize_s"] for c in cs),
            "profile_bytes": median(sizes) if sizes else None,
            "kernels": sorted(set().union(*(c["kernels"] for c in cs))),
            "steps": cs[0]["steps"], "settle": cs[0]["settle"],
            "errors": [r["error"] for r in results if r.get("error")]}


def added(s, v):
    return s[v]["x"] - 1


def relative(s, v, ref):
    """v's added time over ref's (nan where ref added nothing measurable)."""
    if ref not in s or v not in s or added(s, ref) <= 0:
        return float("nan")
    return added(s, v) / added(s, ref)


def fmt(value, spec, missing="-"):
    return missing if value is None else format(value, spec)


def print_tables(w, s, base_step):
    some = next(iter(s.values()))
    print(f"\n== {w}: {some['steps']} steps per loop (+{some['settle']} settle), "
          f"pooled unprofiled step {base_step * 1e6:.1f} us; x own base = profiled / "
          f"unprofiled loop of one block\n")
    print(f"{'variant':15} {'procs':>5} {'blocks':>6} {'x own base':>10} {'per process':>20} "
          f"{'spread':>7} {'blocks q1-q3':>13} {'x step med':>10} {'+us/step':>9} "
          f"{'added/floor':>11} {'added/Proton':>12}")
    for v, st in s.items():
        ref = "proton-hook" if v.endswith("-hook") and "proton-hook" in s else "proton"
        per = " ".join(f"{x:.3f}" for x in st["per_process"][:4])
        print(f"{v:15} {len(st['per_process']):5} {st['blocks']:6} {st['x']:10.3f} {per:>20} "
              f"{st['spread']:7.1%} {st['q1']:6.3f}-{st['q3']:.3f} {st['x_step']:10.3f} "
              f"{added(s, v) * base_step * 1e6:9.1f} {relative(s, v, 'floor'):11.2f} "
              f"{relative(s, v, ref):12.2f}")
    print(f"\n{'variant':15} {'base us/step':>20} {'base noise':>10} {'base drift':>10} "
          f"{'finalize ms':>11} {'profile B':>10} {'kernels/block':>14}  errors")
    for v, st in s.items():
        base = " ".join(f"{b * 1e6:.1f}" for b in st["base_steps_s"][:3])
        kern = ",".join(str(k) for k in st["kernels"][:3]) or "-"
        print(f"{v:15} {base:>20} {st['noise']:10.1%} {fmt(st['drift'], '10.3f'):>10} "
              f"{st['finalize_s'] * 1e3:11.1f} {fmt(st['profile_bytes'], '10.0f'):>10} "
              f"{kern:>14}  {'; '.join(st['errors'])}")


def complete(v):
    """Variants whose every block counts every kernel."""
    return v in ("floor", "floor-act") or v.startswith(("proton", "cproton"))


def check_kernels(w, s):
    """Prints whether every complete profiler counted the same kernels in
    every block; returns the count per block (None if they differ)."""
    counts = {v: st["kernels"] for v, st in s.items() if complete(v) and st["kernels"]}
    values = set().union(*counts.values()) if counts else set()
    if len(values) == 1:
        n = values.pop()
        print(f"kernels per profiled block: {n} in every profiler ({', '.join(counts)})")
        return n
    if values:
        msg = f"!! KERNEL COUNT MISMATCH in {w}: " + "; ".join(
            f"{v} {k}" for v, k in counts.items())
        print(msg, flush=True)
        print(msg, file=sys.stderr, flush=True)
    return None


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
    the same places with the same counts as `ref`'s (last profiles compared:
    each child keeps its last block's)."""
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


# Issue 15's targets: (workload or None for every one, what, (value, limit)
# from the variants' stats; met when value <= limit).
TARGETS = [
    ("train", "cproton x own base <= floor's + 0.02",
     lambda s: (s["cproton"]["x"], s["floor"]["x"] + 0.02)),
    ("train", "cproton added <= 1/2 of Proton's", lambda s: (added(s, "cproton"),
                                                             added(s, "proton") / 2)),
    ("train", "cproton (lazy, below-floor design) x own base <= 1.05", lambda s: (s["cproton"]["x"], 1.05)),
    ("train", "cproton-eager x own base <= floor's + 0.02",
     lambda s: (s["cproton-eager"]["x"], s["floor"]["x"] + 0.02)),
    ("launch", "cproton added <= floor's", lambda s: (added(s, "cproton"), added(s, "floor"))),
    ("launch", "cproton-eager added <= floor's", lambda s: (added(s, "cproton-eager"), added(s, "floor"))),
    ("launch", "cproton-hook added <= 1/3 of proton-hook's",
     lambda s: (added(s, "cproton-hook"), added(s, "proton-hook") / 3)),
    ("launch", "cproton finalize ms < 20 (40k launches)",
     lambda s: (s["cproton"]["finalize_s"] * 1e3, 20)),
    (None, "cproton profile bytes <= Proton's",
     lambda s: (s["cproton"]["profile_bytes"], s["proton"]["profile_bytes"])),
]


def check_targets(w, s):
    out = {}
    for where, what, f in TARGETS:
        if where not in (None, w):
            continue
        try:
            value, limit = f(s)
            verdict = "met" if value <= limit else "MISSED"
            line = f"{value:.4g} vs {limit:.4g}: {verdict}"
        except (KeyError, TypeError):
            verdict, line = None, "not measured"
        out[what] = verdict
        print(f"target {w}: {what}: {line}")
    return out


# The per-launch breakdown: (what, variant, minus variant or None); each
# variant's added time is against its own base, so "v, None" is v's whole
# cost and "a, b" is what a adds over b.
BREAKDOWN = [
    ("method's null: none against its own base", "none", None),
    ("CUPTI launch callback, empty (floor-cb)", "floor-cb", None),
    ("CUPTI kernel activity, records discarded (floor-act)", "floor-act", None),
    ("the floor: both", "floor", None),
    ("cproton (lazy launch callbacks, the default)", "cproton", None),
    ("cproton against the floor", "cproton", "floor"),
    ("cproton-eager (a callback per launch)", "cproton-eager", None),
    ("cproton-eager above the floor", "cproton-eager", "floor"),
    ("  lazy mode saves", "cproton-eager", "cproton"),
    ("cproton-eager's launch callback, all of it", "cproton-eager", "abl-nocallback"),
    ("  CUPTI calling it (callback returns at once)", "abl-nocapture", "abl-nocallback"),
    ("  capture: shadow stack, correlation", "abl-noring", "abl-nocapture"),
    ("  the correlation ring's store", "cproton-eager", "abl-noring"),
    ("kernel activity, all of it", "cproton-eager", "abl-noactivity"),
    ("  records thread: lookup and delivery", "cproton-eager", "abl-norecords"),
    ("  GPU side and CUPTI's buffer handling", "abl-norecords", "abl-noactivity"),
    ("Python hook=\"triton\", cproton (callbacks stay on)", "cproton-hook", "cproton-eager"),
    ("Python hook=\"triton\", Proton", "proton-hook", "proton"),
    ("Proton", "proton", None),
    ("Proton above the floor", "proton", "floor"),
]


def breakdown(w, s, base_step, kps):
    """Prints us per launch for each BREAKDOWN row whose variants ran, with
    the range the per-process ratios give."""
    per = base_step / kps * 1e6

    def us(v, pick):
        return (pick(s[v]["per_process"]) - 1) * per

    print(f"\nper-launch breakdown ({w}, {kps:g} kernels per step, us per launch; "
          f"range: from the per-process ratios)")
    out = {}
    for what, v, minus in BREAKDOWN:
        if v not in s or (minus and minus not in s):
            continue
        mid = (s[v]["x"] - (s[minus]["x"] if minus else 1)) * per
        lo = us(v, min) - (us(minus, max) if minus else 0)
        hi = us(v, max) - (us(minus, min) if minus else 0)
        out[what] = mid
        print(f"  {what:54} {mid:7.3f}   [{lo:.3f}, {hi:.3f}]")
    return out


def kernels_per_step(w, s, n_block):
    if n_block is not None:
        some = next(iter(s.values()))
        return n_block / (some["steps"] + some["settle"])
    return workloads.KERNELS_PER_STEP.get(w)


def workload(w, runs):
    """Prints every table of one workload; returns its summary (JSON)."""
    s = {v: st for v, st in ((v, variant_stats(rs)) for v, rs in runs.items()) if st}
    failed = [v for v in runs if v not in s]
    if not s:
        print(f"\n== {w}: no variant finished a block")
        return {"failed": failed}
    base_step = median(b for st in s.values() for b in st["base_steps_s"])
    print_tables(w, s, base_step)
    for v in failed:
        print(f"{v:15} (failed: no block)")
    n_block = check_kernels(w, s)
    out = {"variants": s, "failed": failed, "base_step_s": base_step,
           "kernels_per_block": n_block,
           "placement_diffs": compare_placement(w, runs),
           "targets": check_targets(w, s)}
    kps = kernels_per_step(w, s, n_block)
    if kps and (w == "launch" or any(v.startswith(("abl-", "floor-")) for v in s)):
        out["breakdown_us_per_launch"] = breakdown(w, s, base_step, kps)
    return out


def main(paths):
    runs = {}
    for path in paths:
        with open(path) as f:
            for w, by_variant in json.load(f).items():
                for v, children in by_variant.items():
                    runs.setdefault(w, {}).setdefault(v, []).extend(children)
    for w, r in runs.items():
        workload(w, r)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
