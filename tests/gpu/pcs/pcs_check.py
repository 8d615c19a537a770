"""Checks a PC-sampling profile. usage: pcs_check.py FILE.hatchet NAME
   [--lines] [--loop-lines A,B] [--expect-dominant LINE=reason,...]
   [--source FILE]
A line is a number or, with --source, a marker name: the line of FILE that
ends with the comment `# pcs: NAME` (bench/kernels/pcs_kernels.py).
Prints PASS/FAIL lines and RESULT lines (samples, share with a line, share
on the loop lines, dominant stall reason per loop line)."""
import json, sys, argparse

STALLS_PREFIX = "stalled_"

def walk(n, path=()):
    yield path + (n["frame"]["name"],), n
    for c in n["children"]:
        yield from walk(c, path + (n["frame"]["name"],))

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file"); ap.add_argument("name")
    ap.add_argument("--lines", action="store_true")
    ap.add_argument("--loop-lines", default="")
    ap.add_argument("--kernel", default="")
    ap.add_argument("--expect-dominant", default="")
    ap.add_argument("--under", default="")
    ap.add_argument("--source", default="")
    a = ap.parse_args()

    def resolve(tok):
        if tok.isdigit() or not a.source:
            return tok
        with open(a.source) as f:
            hits = [str(i) for i, l in enumerate(f, 1) if l.rstrip().endswith(f"# pcs: {tok}")]
        if len(hits) != 1:
            sys.exit(f"FAIL {a.name}: marker '# pcs: {tok}' found {len(hits)} times in {a.source}")
        return hits[0]
    ok = True
    def check(cond, what):
        nonlocal ok
        print(("PASS " if cond else "FAIL ") + a.name + ": " + what)
        ok &= bool(cond)
    tree = json.load(open(a.file))[0]
    total = with_line = 0
    per_line = {}
    for path, n in walk(tree):
        m = n["metrics"]
        if "num_samples" not in m or path[-1] == "ROOT":
            continue
        if a.kernel and not any(a.kernel in p for p in path):
            continue
        if a.under and a.under not in path:
            continue
        s = m["num_samples"]
        total += s
        if "@" in path[-1]:
            with_line += s
            line = path[-1].rsplit("@", 1)[0].rsplit(":", 1)[1]
            d = per_line.setdefault(line, {"num_samples": 0})
            for k, v in m.items():
                d[k] = d.get(k, 0) + v
    check(total > 0, f"samples > 0 ({total})")
    share = with_line / total if total else 0
    print(f"RESULT {a.name} samples={total} with_line={share:.3f}")
    if a.lines:
        check(share > 0.9, f"share of samples with a source line {share:.3f} > 0.9")
    if a.loop_lines:
        want = [resolve(t) for t in a.loop_lines.split(",")]
        on = sum(per_line.get(l, {}).get("num_samples", 0) for l in want)
        frac = on / total if total else 0
        print(f"RESULT {a.name} on_loop_lines={frac:.3f}")
        check(frac >= 0.9, f"{frac:.3f} of samples on lines {want} (>= 0.9)")
    for spec in filter(None, a.expect_dominant.split(",")):
        tok, reasons = spec.split("=")
        ln = resolve(tok)
        d = per_line.get(ln, {})
        stalls = {k: v for k, v in d.items() if k.startswith(STALLS_PREFIX)}
        dom = max(stalls, key=stalls.get) if stalls else None
        print(f"RESULT {a.name} line {ln} dominant={dom} " +
              " ".join(f"{k}={v}" for k, v in sorted(stalls.items(), key=lambda kv: -kv[1])[:4]))
        check(dom in reasons.split("|"), f"line {ln} ({tok}): dominant stall {dom} in {reasons}")
    sys.exit(0 if ok else 1)

main()
