"""The concurrent PC-sampling rule's error, measured against exact mode
(docs/cupti.md, docs/benchmarks.md).

usage: pcsampling_contexts.py OUTDIR [ROUNDS]       driver
       pcsampling_contexts.py --worker MODE OUTDIR  one fresh process

One kernel function (bench/kernels/pcs_kernels.py's mix_kernel: a
dependent-load loop and an FMA loop with run-time trip counts, so one
compiled kernel) runs under four calling contexts with different work: a
load-heavy and an FMA-heavy full grid, a balanced full grid, and a 32-block
grid (fewer blocks than SMs). Concurrent mode sees samples of (function,
line) only and splits them among the contexts by its rule; exact mode ends
a sampling period whenever the function is about to run under another
context, so its per-context samples are the reference.

Modes: exact (reference), cproton (the default rule: kernel time x the SM
sub-partitions the grid occupies), time (CPROTON_PCS_WEIGHT=time: kernel time
alone, the previous rule).
Errors, medians over rounds: the total variation distance (TVD) between the
mode's and exact mode's shares of the kernel's samples per context, and per
context between their line distributions (load line, FMA line, other)."""
import json, os, statistics, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
import pcs_kernels  # noqa: E402
from fresh_worker import dispatch, run_worker  # noqa: E402

MODES = {
    "exact": ("pcsampling:exact", {}),
    "cproton": ("pcsampling", {}),
    "time": ("pcsampling", {"CPROTON_PCS_WEIGHT": "time"}),
}
# context -> (blocks of 256 threads, load iterations, FMA iterations, launches)
CONTEXTS = {
    "loads": (4096, 256, 64, 2),
    "fmas": (4096, 16, 8192, 2),
    "balanced": (4096, 128, 4096, 1),
    "small_grid": (32, 512, 1024, 3),
}
LINES = {str(pcs_kernels.line_of("mix-load")): "load", str(pcs_kernels.line_of("mix-fma")): "fma"}


def worker(mode, out):
    import torch
    import cproton as proton
    n = 1 << 20
    x = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    y = torch.empty(n, device="cuda")

    def run(ctx):
        blocks, loads, fmas, launches = CONTEXTS[ctx]
        for _ in range(launches):
            pcs_kernels.mix_kernel[(blocks,)](x, y, n, loads, fmas, BLOCK=256)

    for c in CONTEXTS:  # compiled and loaded before start
        run(c)
    torch.cuda.synchronize()
    name = os.path.join(out, f"ctx_{mode}_{os.getpid()}")
    proton.start(name, hook="triton", backend="cupti", mode=MODES[mode][0])
    for c in CONTEXTS:
        with proton.scope(c):
            run(c)
        torch.cuda.synchronize()
        time.sleep(0.03)  # contexts apart in time
    proton.finalize()
    print("JSON " + json.dumps(per_context(name + ".hatchet")))


def per_context(path):
    """{context: {"samples": n, "load": n, "fma": n, "other": n, "ns": t}}."""
    root = json.load(open(path))[0]
    res = {}
    for scope in root["children"]:
        c = scope["frame"]["name"]
        if c not in CONTEXTS:
            continue
        d = res.setdefault(c, {"samples": 0, "load": 0, "fma": 0, "other": 0, "ns": 0})
        for k in scope["children"]:
            if "mix_kernel" not in k["frame"]["name"]:
                continue
            d["ns"] += k["metrics"].get("time (ns)", 0)
            own = k["metrics"].get("num_samples", 0)
            d["samples"] += own
            d["other"] += own
            for ln in k["children"]:
                s = ln["metrics"].get("num_samples", 0)
                line = ln["frame"]["name"].rsplit("@", 1)[0].rsplit(":", 1)[-1]
                d["samples"] += s
                d[LINES.get(line, "other")] += s
    return res


def tvd(p, q):
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0) - q.get(k, 0)) for k in keys)


def shares(run):
    tot = sum(d["samples"] for d in run.values()) or 1
    return {c: d["samples"] / tot for c, d in run.items()}


def line_shares(d):
    tot = d["samples"] or 1
    return {k: d[k] / tot for k in ("load", "fma", "other")}


def driver(out, rounds):
    os.makedirs(out, exist_ok=True)
    modes = os.environ.get("PCS_CTX_MODES", ",".join(MODES)).split(",")
    runs = {m: [] for m in modes}
    for r in range(rounds):
        for m in modes:
            env = dict(os.environ, **MODES[m][1])
            got = run_worker(__file__, m, out, env, float(os.environ.get("PCS_CTX_TIMEOUT", "120")),
                             f"ctx {m} round {r}")
            if got:
                runs[m].append(got[0])
    if not runs.get("exact"):
        print("FAIL ctx: no exact-mode run to compare with")
        return 1
    # the reference: exact mode's shares, averaged over its rounds
    ref = {c: statistics.mean(shares(x)[c] for x in runs["exact"]) for c in CONTEXTS}
    ref_lines = {c: {k: statistics.mean(line_shares(x[c])[k] for x in runs["exact"]) for k in ("load", "fma", "other")}
                 for c in CONTEXTS}
    print("RESULT pcs_ctx exact shares: " + " ".join(f"{c}={ref[c]:.3f}" for c in CONTEXTS) + " lines: " +
          " ".join(f"{c}=load {ref_lines[c]['load']:.2f}/fma {ref_lines[c]['fma']:.2f}" for c in CONTEXTS))
    if len(runs["exact"]) > 1:  # the reference's own noise
        e = [tvd(shares(x), ref) for x in runs["exact"]]
        print(f"RESULT pcs_ctx exact vs its mean: context TVD median {statistics.median(e):.3f}")
    for m in modes:
        if m == "exact" or not runs[m]:
            continue
        ctx_err = statistics.median(tvd(shares(x), ref) for x in runs[m])
        line_err = {c: statistics.median(tvd(line_shares(x[c]), ref_lines[c]) for x in runs[m] if c in x)
                    for c in CONTEXTS}
        last = shares(runs[m][-1])
        print(f"RESULT pcs_ctx {m}: context-share TVD {ctx_err:.3f}; line TVD per context " +
              " ".join(f"{c}={line_err[c]:.3f}" for c in CONTEXTS) +
              f" (max {max(line_err.values()):.3f}); shares " + " ".join(f"{c}={last[c]:.3f}" for c in CONTEXTS))
    ok = all(runs[m] for m in modes)
    print(("PASS" if ok else "FAIL") + " pcs_ctx: every mode ran")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(dispatch(worker, driver, 2))
