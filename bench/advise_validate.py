"""The advisor's validation benchmark (issue 26 item 4, docs/benchmarks.md):
planted kernels with one known problem and fix, and well-tuned kernels, each
profiled in a fresh process, advised by `cproton-viewer --advise --json`, its
top suggestion applied (the case's fixed variant when the top finding's rule
has one, else no change) and measured without any profiler.

usage: advise_validate.py [--quick] [--out DIR] [--viewer PATH] [--cases a,b]
       advise_validate.py --score ADVICE_DIR TIMINGS_JSON   (no GPU: the table
                          and targets from saved advice and times)
       advise_validate.py --worker-time OUT CASES ITERS_SCALE ROUNDS
       advise_validate.py --worker-profile OUT CASE STEPS

Steps: (1) one fresh process without cproton builds every variant, checks the
fixed result equals the planted one (within the case's tolerance), and times
planted vs fixed in interleaved rounds with CUDA events (median ms per step):
"PASS/FAIL fix_faster <case>" — a fix that is not faster is a bad case; (2) per
case a fresh process runs the planted variant under a kernel-time session
(hook="triton") and then a PC-sampling session, writing OUT/profiles/<case>
.hatchet and <case>_pcs.hatchet; (3) the advisor on both; (4) the table and the
targets as RESULT lines; OUT/advise_validate.json holds everything."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "advise"))
import catalog  # noqa: E402
import score  # noqa: E402


def _ctx(out):
    import torch
    return {"sms": torch.cuda.get_device_properties(0).multi_processor_count, "build_dir": str(Path(out) / "build")}


def _time_variants(cases, name, ctx, scale, rounds):
    """Median ms per step of each variant, timed in interleaved rounds."""
    import torch
    case = catalog.BY_NAME[name]
    variants = ["planted"] + sorted(set(case.fixes.values()))
    built = {v: cases.build(name, v, ctx) for v in variants}
    ref = None
    for v, (step, result) in built.items():
        step()
        torch.cuda.synchronize()
        r = result().float()
        if ref is None:
            ref = r
        else:
            err = (r - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
            ok = err <= case.rtol
            print(f"{'PASS' if ok else 'FAIL'} same_result {name} {v}: max rel diff {err:.2e} (<= {case.rtol:g})")
    iters = max(1, round(case.iters * scale))
    samples = {v: [] for v in variants}
    for _ in range(rounds):
        for v, (step, _) in built.items():
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(iters):
                step()
            b.record()
            b.synchronize()
            samples[v].append(a.elapsed_time(b) / iters)
    return {v: statistics.median(s) for v, s in samples.items()}


def worker_time(out, names, scale, rounds):
    """Step (1): every case's variants, no profiler in this process."""
    sys.path.insert(0, str(HERE / "advise"))
    import cases
    ctx, times = _ctx(out), {}
    for name in names:
        try:
            t = _time_variants(cases, name, ctx, scale, rounds)
        except Exception as e:  # one broken case must not hide the others' times
            print(f"FAIL time {name}: {type(e).__name__}: {e}")
            continue
        times[name] = t
        case = catalog.BY_NAME[name]
        if case.kind == "planted":
            ok = t["fixed"] < t["planted"]
            print(f"RESULT time {name}: planted {t['planted']:.4f} ms, fixed {t['fixed']:.4f} ms, "
                  f"{t['planted'] / t['fixed']:.2f}x")
            print(f"{'PASS' if ok else 'FAIL'} fix_faster {name}")
        else:
            print(f"RESULT time {name}: {t['planted']:.4f} ms")
    (Path(out) / "timings.json").write_text(json.dumps(times, indent=1))


def worker_profile(out, name, steps):
    """Step (2): the planted variant under a kernel-time and a PC-sampling session."""
    import torch
    import cproton as proton
    sys.path.insert(0, str(HERE / "advise"))
    import cases
    step, _ = cases.build(name, "planted", _ctx(out))
    step()                                      # compile and warm up outside the sessions
    torch.cuda.synchronize()
    prof = Path(out) / "profiles"
    prof.mkdir(exist_ok=True)
    steps = max(steps, catalog.BY_NAME[name].iters)   # short steps get more, for enough PC samples
    for suffix, kw in (("", {"hook": "triton"}), ("_pcs", {"backend": "cupti", "mode": "pcsampling"})):
        proton.start(str(prof / f"{name}{suffix}"), **kw)
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
        proton.finalize()


def _advise(viewer, out, name):
    """Step (3): the advisor's JSON for one case (None when it failed)."""
    prof = Path(out) / "profiles"
    files = [str(p) for p in (prof / f"{name}.hatchet", prof / f"{name}_pcs.hatchet") if p.exists()]
    if not files:
        print(f"FAIL advise {name}: no profile")
        return None
    r = subprocess.run([viewer, "--advise", "--json", *files], capture_output=True, text=True)
    adv_dir = Path(out) / "advice"
    adv_dir.mkdir(exist_ok=True)
    if r.returncode != 0:
        print(f"FAIL advise {name}: exit {r.returncode}: {r.stderr.strip()[:300]}")
        return None
    (adv_dir / f"{name}.json").write_text(r.stdout)
    return json.loads(r.stdout)


def _evidence(out, name):
    """What the case's profiles hold for the rules that need more than kernel
    times: source-line frames with PC samples, kernel.stack_bytes, host_syncs,
    frames with kernel.variant_* facts (a RESULT line per case, to tell a
    missing fact from a rule that judged)."""
    seen = {"line frames": 0, "stack_bytes": 0, "host_syncs": 0, "variant facts": 0}

    def walk(n):
        m = n.get("metrics", {})
        seen["line frames"] += "@" in n.get("frame", {}).get("name", "") and "num_samples" in m
        seen["stack_bytes"] += "kernel.stack_bytes" in m
        seen["host_syncs"] += int(m.get("host_syncs", 0) or 0)
        seen["variant facts"] += "kernel.variants" in m
        for c in n.get("children", []):
            walk(c)
    for suffix in ("", "_pcs"):
        p = Path(out) / "profiles" / f"{name}{suffix}.hatchet"
        if p.exists():
            walk(json.loads(p.read_text())[0])
    print(f"RESULT advise evidence {name}: " + ", ".join(f"{k} {v}" for k, v in seen.items()))


def report(names, advice, times):
    """Step (4): rows, the table and the targets; returns (rows, targets)."""
    rows = []
    for name in names:
        case = catalog.BY_NAME[name]
        if case.kind == "planted":
            rows.append(score.judge_planted(case, advice.get(name), times.get(name, {})))
        else:
            rows.append(score.judge_tuned(case, advice.get(name)))
    print(score.table(rows))
    tg = score.targets(rows)
    for label, value, goal, met in tg:
        shown = f"{value:.2f}x" if "speedup" in label else f"{value:.0%}"
        print(f"RESULT advise target {label}: {shown} (goal {goal}) {'met' if met else 'NOT met'}")
    for r in rows:
        if r["kind"] == "planted":
            print(f"RESULT advise {r['case']}: cause {r['cause']}, top {r['top']}, top3 {','.join(r['top3'])}, "
                  f"applied {r['applied'] or '-'} {r['speedup']:.2f}x, estimated {r['estimated']}")
        else:
            print(f"RESULT advise {r['case']}: {r['n_findings']} findings, largest gain {r['max_gain']:.1%} "
                  f"({r['worst']})")
    return rows, tg


def _run(cmd, timeout):
    """(exit status, seconds) of a child; 124 when it ran past timeout s."""
    t0 = time.time()
    try:
        rc = subprocess.run(cmd, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = 124
    return rc, time.time() - t0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds and steps (about half the time)")
    ap.add_argument("--out", default="out/advise")
    ap.add_argument("--viewer", default=os.environ.get("CPROTON_VIEWER", "cproton-viewer"))
    ap.add_argument("--cases", default=",".join(c.name for c in catalog.CASES))
    ap.add_argument("--score", nargs=2, metavar=("ADVICE_DIR", "TIMINGS_JSON"))
    ap.add_argument("--worker-time", nargs=4)
    ap.add_argument("--worker-profile", nargs=3)
    a = ap.parse_args(argv)
    if a.worker_time:
        out, names, scale, rounds = a.worker_time
        return worker_time(out, names.split(","), float(scale), int(rounds))
    if a.worker_profile:
        return worker_profile(a.worker_profile[0], a.worker_profile[1], int(a.worker_profile[2]))
    names = [n for n in a.cases.split(",") if n]
    unknown = [n for n in names if n not in catalog.BY_NAME]
    if unknown:
        ap.error(f"unknown cases: {', '.join(unknown)}")
    if a.score:
        adv_dir, tfile = Path(a.score[0]), Path(a.score[1])
        advice = {n: json.loads((adv_dir / f"{n}.json").read_text()) for n in names
                  if (adv_dir / f"{n}.json").exists()}
        report(names, advice, json.loads(tfile.read_text()))
        return 0
    return drive(a, names)


def drive(a, names):
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TRITON_CACHE_DIR", str(out / "triton-cache"))
    # the host_sync rule's evidence (off by default, docs/cupti.md); the
    # profiling workers inherit it
    os.environ["CPROTON_HOST_SYNCS"] = "1"
    me = [sys.executable, str(Path(__file__).resolve())]
    scale, rounds, steps = (0.5, 5, 3) if a.quick else (1.0, 9, 5)
    rc, secs = _run(me + ["--worker-time", str(out), ",".join(names), str(scale), str(rounds)], 600)
    print(f"RESULT advise timing: {secs:.0f} s (exit {rc})")
    times = json.loads((out / "timings.json").read_text()) if (out / "timings.json").exists() else {}
    advice = {}
    for name in names:
        rc, secs = _run(me + ["--worker-profile", str(out), name, str(steps)], 120)
        if rc != 0:
            print(f"FAIL profile {name}: exit {rc}")
        adv = _advise(a.viewer, out, name)
        _evidence(out, name)
        if adv is not None:
            advice[name] = adv
        print(f"RESULT advise profiled {name} in {secs:.1f} s")
    rows, tg = report(names, advice, times)
    (out / "advise_validate.json").write_text(json.dumps(
        {"rows": rows, "targets": [list(t) for t in tg], "times": times}, indent=1))
    bad = [n for n in names if catalog.BY_NAME[n].kind == "planted"
           and not (times.get(n, {}).get("fixed", 1) < times.get(n, {}).get("planted", 0))]
    return 1 if bad or len(advice) < len(names) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
