"""PC-sampling overhead and accuracy (docs/benchmarks.md).

usage: pcsampling_overhead.py OUTDIR [ROUNDS]      driver: interleaved rounds
       pcsampling_overhead.py --worker MODE OUTDIR one fresh process

Work: 10 x 4096^3 fp16 Triton matmuls and one kernel with a dependent-load
loop and an FMA loop on separate lines (Proton's reference script). Modes:
plain, cproton (default pcsampling), exact (pcsampling:exact), proton
(triton.profiler mode="pcsampling"). Each round runs every mode once, in
order, each in a fresh process, after compiling and warming up the kernels
(so the modules are loaded before start). Prints a RESULT line per mode with
the median time of the work, the finalize time, samples/s, the share of
samples with a line, and for the chase kernel the share on its two loop
lines and their dominant stall reasons."""
import json, os, statistics, subprocess, sys, time

# name -> (cproton mode, extra environment); "kernels" is cproton without
# PC sampling. The *_hw16 / *_s1 variants try CUPTI's buffer and decoding
# knobs (docs/cupti.md); PCS_BENCH_MODES=a,b,... picks the modes to run.
CPROTON_MODES = {
    "kernels": ("", {}),
    "cproton": ("pcsampling", {}),
    "drain20": ("pcsampling:drain=20", {}),
    "sparse": ("pcsampling:interval=16384", {}),
    "exact": ("pcsampling:exact", {}),
    # CUPTI's defaults and Proton's buffer, for comparison (docs/benchmarks.md)
    "cproton_s100": ("pcsampling", {"CPROTON_PCS_SLEEP_MS": "100"}),
    "exact_hw128": ("pcsampling:exact", {"CPROTON_PCS_HW_MB": "128", "CPROTON_PCS_SLEEP_MS": "100"}),
    "exact_hw8": ("pcsampling:exact", {"CPROTON_PCS_HW_MB": "8"}),
}
# proton_kernels: Proton's kernel-level profile (no PC sampling), the
# baseline of its pcsampling mode as "kernels" is cproton's
DEFAULT_MODES = "plain,kernels,proton_kernels,cproton,sparse,exact,proton"


def source_line(text):
    """The line of this file holding `text` (the chase kernel's loops)."""
    with open(__file__) as f:
        return next(i for i, l in enumerate(f, 1) if text in l and "source_line" not in l)


LOAD_LINE = source_line("idx = tl.load(x + idx) % n")  # the dependent-load loop
FMA_LINE = source_line("acc = acc * 1.0001 + 0.5")     # the FMA loop


def worker(mode, out):
    import logging
    import torch, triton, triton.language as tl
    logging.basicConfig(level=logging.INFO)  # cproton's summary lines, on stderr

    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm = tl.program_id(0); pn = tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
            y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.float16))

    @triton.jit
    def chase_kernel(x, y, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        idx = offs
        acc = offs.to(tl.float32)
        for _ in range(ITERS):
            idx = tl.load(x + idx) % n
        for _ in range(ITERS):
            acc = acc * 1.0001 + 0.5
        tl.store(y + offs, acc + idx.to(tl.float32))

    M = N = K = 4096
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    n = 1 << 20
    x = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    y = torch.empty(n, device="cuda")

    def work():
        for _ in range(10):
            matmul_kernel[(M // 128, N // 128)](a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
        chase_kernel[(n // 256,)](x, y, n, ITERS=256, BLOCK=256)

    work(); torch.cuda.synchronize()
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
    if prof:
        prof.finalize()
    t2 = time.perf_counter()
    res = {"mode": mode, "ms": (t1 - t0) * 1e3, "launch_ms": (tl_ - t0) * 1e3,
           "finalize_ms": (t2 - t1) * 1e3}
    if prof:
        res.update(summarise(name + ".hatchet", t1 - t0))
    print("JSON " + json.dumps(res))


def summarise(path, seconds):
    tree = json.load(open(path))[0]
    total = with_line = chase = on_lines = 0
    stalls = {}

    def walk(n, in_chase):
        nonlocal total, with_line, chase, on_lines
        name = n["frame"]["name"]; m = n["metrics"]
        in_chase = in_chase or name == "chase_kernel"
        if "num_samples" in m and name != "ROOT":
            s = m["num_samples"]; total += s
            if "@" in name:
                with_line += s
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
            walk(ch, in_chase)

    walk(tree, False)
    dom = {l: max(d, key=d.get) for l, d in stalls.items() if d}
    return {"samples": total, "samples_per_s": total / seconds if seconds else 0,
            "with_line": with_line / total if total else 0,
            "chase_on_loop_lines": on_lines / chase if chase else 0,
            "dominant": dom}


def driver(out, rounds):
    os.makedirs(out, exist_ok=True)
    modes = os.environ.get("PCS_BENCH_MODES", DEFAULT_MODES).split(",")
    res = {m: [] for m in modes}
    for r in range(rounds):
        for m in modes:
            env = dict(os.environ, **CPROTON_MODES.get(m, ("", {}))[1])
            p = subprocess.run([sys.executable, __file__, "--worker", m, out], capture_output=True,
                               text=True, env=env)
            line = [l for l in p.stdout.splitlines() if l.startswith("JSON ")]
            if p.returncode or not line:
                print(f"FAIL {m} round {r}: rc={p.returncode} {p.stderr[-800:]}")
                continue
            res[m].append(json.loads(line[0][5:]))
            if r == rounds - 1:  # cproton's own account of the last round
                for l in p.stderr.splitlines():
                    if "pcsampling:" in l and ("PC records" in l or "bracketed" in l or "dropped" in l):
                        print(f"INFO {m}: {l.split('pcsampling:', 1)[1].strip()}")
    plain = statistics.median(x["ms"] for x in res["plain"]) if res["plain"] else float("nan")
    med = {}
    for m in modes:
        if not res[m]:
            continue
        ms = statistics.median(x["ms"] for x in res[m])
        fin = statistics.median(x["finalize_ms"] for x in res[m])
        launch = statistics.median(x["launch_ms"] for x in res[m])
        med[m] = ms
        extra = ""
        if m not in ("plain", "kernels", "proton_kernels"):
            last = res[m][-1]
            extra = (f" samples/s={statistics.median(x['samples_per_s'] for x in res[m]):.3g}"
                     f" with_line={statistics.median(x['with_line'] for x in res[m]):.3f}"
                     f" chase_on_loop_lines={statistics.median(x['chase_on_loop_lines'] for x in res[m]):.3f}"
                     f" dominant={last['dominant']}")
        print(f"RESULT pcs_bench {m}: median {ms:.2f} ms ({ms / plain:.2f}x plain) launches {launch:.2f} ms"
              f" finalize {fin:.1f} ms"
              f" rounds={len(res[m])}{extra}")
    if "proton" in med and "exact" in med and "cproton" in med:
        pa, ea = med["proton"] - plain, med["exact"] - plain
        print(f"RESULT pcs_bench targets: default {med['cproton'] / plain:.2f}x plain (target <= 1.5),"
              f" exact added {ea:.1f} ms vs proton added {pa:.1f} ms (target <= 0.5: {ea / pa if pa else float('nan'):.2f})")


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        driver(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5)
