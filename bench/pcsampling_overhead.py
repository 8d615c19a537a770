"""PC-sampling overhead and accuracy (docs/benchmarks.md).

usage: pcsampling_overhead.py OUTDIR [ROUNDS]      driver: interleaved rounds
       pcsampling_overhead.py --worker MODE OUTDIR one fresh process

Work: 10 x 4096^3 fp16 Triton matmuls and one kernel with a dependent-load
loop and an FMA loop on separate lines (Proton's reference script), timed;
then, in a scope of its own and timed separately, 5 launches of a fused
attention forward kernel (its output checked against PyTorch). The kernels
are bench/kernels/pcs_kernels.py's. Modes:
plain, cproton (default pcsampling), exact (pcsampling:exact), proton
(triton.profiler mode="pcsampling"). Each round runs every mode once, in
order, each in a fresh process, after compiling and warming up the kernels
(so the modules are loaded before start). Prints a RESULT line per mode with
the median time of the work, the finalize time, samples/s, the share of
samples with a line, and for the chase kernel the share on its two loop
lines and their dominant stall reasons; the same for the attention segment;
and the time of the first launch call after start."""
import json, os, statistics, sys, time

# name -> (cproton mode, extra environment); "kernels" is cproton without
# PC sampling. The *_hw16 / *_s1 variants try CUPTI's buffer and decoding
# knobs (docs/cupti.md); PCS_BENCH_MODES=a,b,... picks the modes to run.
CPROTON_MODES = {
    "kernels": ("", {}),
    "cproton": ("pcsampling", {}),
    "sparse": ("pcsampling:interval=16384", {}),
    "exact": ("pcsampling:exact", {}),
    # without the first launch's range of its own (the default before issue 22)
    "cproton_first0": ("pcsampling:first=0", {}),
    "exact_first0": ("pcsampling:exact:first=0", {}),
    # CUPTI's defaults and Proton's buffer, for comparison (docs/benchmarks.md)
    "cproton_s100": ("pcsampling", {"CPROTON_PCS_SLEEP_MS": "100"}),
    "exact_hw128": ("pcsampling:exact", {"CPROTON_PCS_HW_MB": "128", "CPROTON_PCS_SLEEP_MS": "100"}),
    "exact_hw8": ("pcsampling:exact", {"CPROTON_PCS_HW_MB": "8"}),
}
# proton_kernels: Proton's kernel-level profile (no PC sampling), the
# baseline of its pcsampling mode as "kernels" is cproton's
DEFAULT_MODES = "plain,kernels,proton_kernels,cproton,sparse,exact,proton"


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
import pcs_kernels  # noqa: E402  (the kernels; lines found by marker)
from fresh_worker import dispatch, run_worker  # noqa: E402

LOAD_LINE = pcs_kernels.line_of("load")  # the chase kernel's dependent-load loop
FMA_LINE = pcs_kernels.line_of("fma")    # its FMA loop
ATTN_LAUNCHES = 5
ATTN_SHAPE = (4 * 16, 2048, 64)  # (batch * heads, sequence, head dim), fp16


def worker(mode, out):
    import logging
    import torch
    logging.basicConfig(level=logging.INFO)  # cproton's summary lines, on stderr
    K = pcs_kernels
    M = N = KK = 4096
    a = torch.randn(M, KK, device="cuda", dtype=torch.float16)
    b = torch.randn(KK, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    n = 1 << 20
    x = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    y = torch.empty(n, device="cuda")
    q, k, v = (torch.randn(ATTN_SHAPE, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    calls = []  # seconds spent in each launch call of the reference work

    def timed(launch):
        t = time.perf_counter()
        launch()
        calls.append(time.perf_counter() - t)

    def work():  # Proton's reference script
        for _ in range(10):
            timed(lambda: K.matmul_kernel[(M // 128, N // 128)](a, b, c, M, N, KK, BM=128, BN=128, BK=64,
                                                                 num_warps=8, num_stages=3))
        timed(lambda: K.chase_kernel[(n // 256,)](x, y, n, ITERS=256, BLOCK=256))

    def attention():
        for _ in range(ATTN_LAUNCHES):
            K.attention(q, k, v, o)

    work(); attention(); torch.cuda.synchronize()
    ref = torch.softmax((q.float() @ k.float().transpose(1, 2)) * ATTN_SHAPE[2] ** -0.5, -1) @ v.float()
    attn_err = (o.float() - ref).abs().max().item()  # the kernel computes attention
    del ref
    calls.clear()
    prof = None
    name = os.path.join(out, f"pcs_{mode}_{os.getpid()}")
    if mode in CPROTON_MODES:
        import cproton as prof
        prof.start(name, hook="triton", backend="cupti", mode=CPROTON_MODES[mode][0] or None)
    elif mode in ("proton", "proton_kernels"):
        import triton.profiler as prof
        prof.start(name, hook="triton", backend="cupti",
                   mode="pcsampling" if mode == "proton" else None)
    t0 = time.perf_counter()
    with (prof.scope("work") if prof else torch.no_grad()):
        work()
    tl_ = time.perf_counter()
    torch.cuda.synchronize(); t1 = time.perf_counter()
    with (prof.scope("attention") if prof else torch.no_grad()):
        attention()
    torch.cuda.synchronize(); t2 = time.perf_counter()
    if prof:
        prof.finalize()
    t3 = time.perf_counter()
    res = {"mode": mode, "ms": (t1 - t0) * 1e3, "launch_ms": (tl_ - t0) * 1e3,
           "first_launch_ms": calls[0] * 1e3, "attn_ms": (t2 - t1) * 1e3,
           "finalize_ms": (t3 - t2) * 1e3, "attn_err": attn_err}
    if prof:
        res.update(summarise(name + ".hatchet", t1 - t0, t2 - t1))
    print("JSON " + json.dumps(res))


def summarise(path, seconds, attn_seconds):
    """Samples of the reference work (everything outside the "attention"
    scope) and of the attention segment: count, per second of that
    segment, share with a source line; for the chase kernel the share on
    its two loop lines and their dominant stall reasons."""
    tree = json.load(open(path))[0]
    seg = {"work": [0, 0], "attention": [0, 0]}  # samples, with a line
    chase = on_lines = 0
    stalls = {}

    def walk(n, where, in_chase):
        nonlocal chase, on_lines
        name = n["frame"]["name"]; m = n["metrics"]
        where = "attention" if name == "attention" else where
        in_chase = in_chase or name == "chase_kernel"
        if "num_samples" in m and name != "ROOT":
            s = m["num_samples"]
            seg[where][0] += s
            if "@" in name:
                seg[where][1] += s
            if in_chase:
                chase += s
                line = name.rsplit("@", 1)[0].rsplit(":", 1)[-1] if "@" in name else ""
                if line in (str(LOAD_LINE), str(FMA_LINE)):
                    on_lines += s
                    d = stalls.setdefault(line, {})
                    for k, v in m.items():
                        if k.startswith("stalled_"):
                            d[k] = d.get(k, 0) + v
        for ch in n["children"]:
            walk(ch, where, in_chase)

    walk(tree, "work", False)
    dom = {l: max(d, key=d.get) for l, d in stalls.items() if d}
    (w, wl), (at, al) = seg["work"], seg["attention"]
    return {"samples": w, "samples_per_s": w / seconds if seconds else 0,
            "with_line": wl / w if w else 0,
            "attn_samples_per_s": at / attn_seconds if attn_seconds else 0,
            "attn_with_line": al / at if at else 0,
            "chase_on_loop_lines": on_lines / chase if chase else 0,
            "dominant": dom}


def driver(out, rounds):
    os.makedirs(out, exist_ok=True)
    modes = os.environ.get("PCS_BENCH_MODES", DEFAULT_MODES).split(",")
    res = {m: [] for m in modes}
    for r in range(rounds):
        for m in modes:
            env = dict(os.environ, **CPROTON_MODES.get(m, ("", {}))[1])
            got = run_worker(__file__, m, out, env, float(os.environ.get("PCS_WORKER_TIMEOUT", "240")),
                             f"{m} round {r}")
            if not got:
                continue
            res[m].append(got[0])
            if r == rounds - 1:  # cproton's own account of the last round
                for l in got[1].splitlines():
                    if "pcsampling:" in l and ("PC records" in l or "bracketed" in l or "dropped" in l):
                        print(f"INFO {m}: {l.split('pcsampling:', 1)[1].strip()}")
    plain = statistics.median(x["ms"] for x in res["plain"]) if res.get("plain") else float("nan")
    plain_attn = statistics.median(x["attn_ms"] for x in res["plain"]) if res.get("plain") else float("nan")
    med, med_attn = {}, {}
    for m in modes:
        if not res[m]:
            continue
        ms = statistics.median(x["ms"] for x in res[m])
        fin = statistics.median(x["finalize_ms"] for x in res[m])
        launch = statistics.median(x["launch_ms"] for x in res[m])
        med[m] = ms
        attn = statistics.median(x["attn_ms"] for x in res[m])
        med_attn[m] = attn
        first = statistics.median(x["first_launch_ms"] for x in res[m])
        extra = ""
        if m not in ("plain", "kernels", "proton_kernels"):
            last = res[m][-1]
            mid = lambda key: statistics.median(x[key] for x in res[m])
            extra = (f" samples/s={mid('samples_per_s'):.3g} with_line={mid('with_line'):.3f}"
                     f" chase_on_loop_lines={mid('chase_on_loop_lines'):.3f} dominant={last['dominant']}"
                     f" | attention samples/s={mid('attn_samples_per_s'):.3g}"
                     f" with_line={mid('attn_with_line'):.3f}")
        print(f"RESULT pcs_bench {m}: median {ms:.2f} ms ({ms / plain:.2f}x plain) launches {launch:.2f} ms"
              f" (first {first:.2f} ms) attention {attn:.2f} ms ({attn / plain_attn:.2f}x plain)"
              f" finalize {fin:.1f} ms rounds={len(res[m])}"
              f" attn_max_err={max(x['attn_err'] for x in res[m]):.3g}{extra}")
    if "proton" in med and "exact" in med and "cproton" in med:
        pa, ea = med["proton"] - plain, med["exact"] - plain
        print(f"RESULT pcs_bench targets: default {med['cproton'] / plain:.2f}x plain (target <= 1.5),"
              f" exact added {ea:.1f} ms vs proton added {pa:.1f} ms (target <= 0.5: {ea / pa if pa else float('nan'):.2f})")
        pa, ea = med_attn["proton"] - plain_attn, med_attn["exact"] - plain_attn
        print(f"RESULT pcs_bench targets (attention): default {med_attn['cproton'] / plain_attn:.2f}x plain,"
              f" exact added {ea:.1f} ms vs proton added {pa:.1f} ms ({ea / pa if pa else float('nan'):.2f})")


if __name__ == "__main__":
    sys.exit(dispatch(worker, driver, 5))
