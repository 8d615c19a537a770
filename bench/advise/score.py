"""Judges the advisor on the validation benchmark (issue 26 item 4): from each
case's advice (the JSON of `cproton-viewer --advise --json`) and the measured
times of its variants, one row per case, then the issue's targets. Pure
arithmetic, no GPU: tests/python/test_advise_bench.py feeds it canned JSON."""
import math

TOP1_TARGET, TOP3_TARGET, GEOMEAN_TARGET = 0.80, 0.95, 1.3
TUNED_GAIN_LIMIT, ESTIMATE_FACTOR, ESTIMATE_TARGET = 0.10, 2.0, 0.80


def names_cause(finding, case):
    """The finding is the planted rule, on the planted kernel when the case names one
    (the kernel's own name or a frame of its call path)."""
    return finding.get("rule") == case.cause and names_kernel(finding, case)


def _speedup(times, variant):
    base, fixed = times.get("planted"), times.get(variant)
    if not base or not fixed:
        return None
    return base / fixed


def judge_planted(case, advice, times):
    """One planted case's row: top finding, hits, the applied fix and its speedup."""
    findings = (advice or {}).get("findings") or []
    top = findings[0] if findings else None
    row = {"case": case.name, "kind": "planted", "cause": case.cause,
           "top": top and top.get("rule"), "top_kernel": top and top.get("kernel"),
           "top3": [f.get("rule") for f in findings[:3]],
           "hit1": bool(top) and names_cause(top, case),
           "hit3": any(names_cause(f, case) for f in findings[:3]),
           "fix_speedup": _speedup(times, "fixed"), "applied": None, "speedup": 1.0,
           "estimated": None, "estimate_ok": None}
    # "apply the top suggestion": the case's variant for that rule, when the finding is
    # about the planted kernel; any other suggestion changes nothing (1.00x)
    variant = case.fixes.get(top.get("rule")) if top and names_kernel(top, case) else None
    measured = _speedup(times, variant) if variant else None
    if measured is not None:
        est = top.get("estimated_speedup")
        row.update(applied=variant, speedup=measured, estimated=est,
                   estimate_ok=est is not None and est > 0 and
                   max(est / measured, measured / est) <= ESTIMATE_FACTOR)
    return row


def names_kernel(finding, case):
    """The finding is about the planted kernel (any rule)."""
    if case.kernel is None:
        return True
    names = [finding.get("kernel") or ""] + [str(p) for p in finding.get("path") or []]
    return any(case.kernel in n for n in names)


def judge_tuned(case, advice):
    """A tuned case's row: its findings' largest estimated gain (speedup - 1)."""
    findings = (advice or {}).get("findings") or []
    gains = [(f.get("estimated_speedup") or 1.0) - 1.0 for f in findings]
    worst = max(range(len(gains)), key=gains.__getitem__) if gains else None
    return {"case": case.name, "kind": "tuned", "n_findings": len(findings),
            "max_gain": gains[worst] if gains else 0.0,
            "worst": findings[worst].get("rule") if gains else None,
            "quiet": not gains or max(gains) < TUNED_GAIN_LIMIT}


def targets(rows):
    """The issue's targets over the rows: (name, value, goal, met) tuples."""
    planted = [r for r in rows if r["kind"] == "planted"]
    tuned = [r for r in rows if r["kind"] == "tuned"]
    applied = [r for r in planted if r["applied"]]
    n = max(len(planted), 1)
    top1 = sum(r["hit1"] for r in planted) / n
    top3 = sum(r["hit3"] for r in planted) / n
    geo = math.exp(sum(math.log(r["speedup"]) for r in planted) / n) if planted else 0.0
    quiet = sum(r["quiet"] for r in tuned)
    est = sum(bool(r["estimate_ok"]) for r in applied) / len(applied) if applied else 0.0
    return [("top-1 names the cause", top1, f">= {TOP1_TARGET:.0%}", top1 >= TOP1_TARGET),
            ("top-3 names the cause", top3, f">= {TOP3_TARGET:.0%}", top3 >= TOP3_TARGET),
            ("geomean speedup, top suggestion applied", geo, f">= {GEOMEAN_TARGET}x", geo >= GEOMEAN_TARGET),
            ("tuned kernels without a finding >= 10%", quiet / max(len(tuned), 1), "100%",
             bool(tuned) and quiet == len(tuned)),
            ("estimate within 2x of measured (applied)", est, f">= {ESTIMATE_TARGET:.0%}",
             bool(applied) and est >= ESTIMATE_TARGET)]


def _f(x):
    return "-" if x is None else f"{x:.2f}x"


def table(rows):
    """The Markdown table of the rows (planted, then tuned)."""
    out = ["| case | cause | top finding | top 3 | top-1 | top-3 | fix alone | applied | est. |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["kind"] == "planted":
            out.append(f"| {r['case']} | {r['cause']} | {r['top'] or '(none)'} | {', '.join(r['top3']) or '-'} "
                       f"| {'yes' if r['hit1'] else 'no'} | {'yes' if r['hit3'] else 'no'} "
                       f"| {_f(r['fix_speedup'])} | {_f(r['speedup'])} | {_f(r['estimated'])} |")
    out += ["", "| tuned case | findings | largest estimated gain | rule | quiet |", "|---|---|---|---|---|"]
    for r in rows:
        if r["kind"] == "tuned":
            out.append(f"| {r['case']} | {r['n_findings']} | {r['max_gain']:.1%} | {r['worst'] or '-'} "
                       f"| {'yes' if r['quiet'] else 'no'} |")
    return "\n".join(out)
