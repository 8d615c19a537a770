"""Where the first launches after `start` spend their time (docs/benchmarks.md).

usage: first_launch.py OUTDIR [ROUNDS]         driver: interleaved rounds
       first_launch.py --worker MODE OUTDIR   one fresh process

The PC sampling benchmark's default mode pays most of its overhead in the
first launch call after `start` (2.6-2.8 ms against 0.14 ms plain on an
H100). This worker compiles and warms up two Triton kernels (A, B), starts a
session, then times each launch call of A, A, B, A, B (the first of each
kernel, then repeats; no synchronisation between them), so a one-time cost
shows up as per session (the first call only) or per kernel (the first call
of each). Modes, each a fresh process: plain; cproton (kernel level);
cproton with one part of its launch path removed (CPROTON_CUPTI_ABLATE:
nocallback, noactivity); cproton pcsampling; Proton (kernel level).
FIRST_MODES=a,b,... picks the modes. Prints one RESULT line per mode with
the median call times in ms."""
import json, os, statistics, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
from fresh_worker import dispatch, run_worker  # noqa: E402

MODES = {  # name -> (profiler, mode, environment)
    "plain": (None, None, {}),
    "cproton": ("cproton", None, {}),
    "nocallback": ("cproton", None, {"CPROTON_CUPTI_ABLATE": "nocallback"}),
    "noactivity": ("cproton", None, {"CPROTON_CUPTI_ABLATE": "noactivity"}),
    "pcsampling": ("cproton", "pcsampling", {}),
    "proton": ("proton", None, {}),
}
ORDER = "AABAB"


def worker(mode, out):
    import torch
    import pcs_kernels as K
    n = 1 << 20
    x = torch.randint(0, n, (n,), device="cuda", dtype=torch.int32)
    y = torch.empty(n, device="cuda")
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    kernels = {
        "A": lambda: K.chase_kernel[(n // 256,)](x, y, n, ITERS=4, BLOCK=256),
        "B": lambda: K.matmul_kernel[(8, 8)](a, a, c, 1024, 1024, 1024, BM=128, BN=128, BK=64,
                                             num_warps=8, num_stages=3),
    }
    for k in kernels.values():  # compiled and loaded before start
        k()
    torch.cuda.synchronize()
    prof_name, pmode, _ = MODES[mode]
    prof = None
    if prof_name == "cproton":
        import cproton as prof
    elif prof_name == "proton":
        import triton.profiler as prof
    t = time.perf_counter()
    if prof:
        prof.start(os.path.join(out, f"first_{mode}_{os.getpid()}"), hook="triton",
                   backend="cupti", mode=pmode)
    start_ms = (time.perf_counter() - t) * 1e3
    calls = []
    for k in ORDER:
        t = time.perf_counter()
        kernels[k]()
        calls.append((time.perf_counter() - t) * 1e3)
    torch.cuda.synchronize()
    if prof:
        prof.finalize()
    print("JSON " + json.dumps({"start_ms": start_ms, "calls": calls}))


def main(out, rounds):
    os.makedirs(out, exist_ok=True)
    here = os.path.abspath(__file__)
    want = os.environ.get("FIRST_MODES", ",".join(MODES)).split(",")
    res = {m: [] for m in MODES if m in want}
    for r in range(rounds):
        for m in res:
            env = dict(os.environ, **MODES[m][2])
            got = run_worker(here, m, out, env, 120, f"first_launch {m} round {r}")
            if got:
                res[m].append(got[0])
    for m, rs in res.items():
        if not rs:
            continue
        med = [statistics.median(r["calls"][i] for r in rs) for i in range(len(ORDER))]
        calls = " ".join(f"{k}={v:.3f}" for k, v in zip(ORDER, med))
        print(f"RESULT first_launch {m}: start {statistics.median(r['start_ms'] for r in rs):.2f} ms; "
              f"calls (ms) {calls} rounds={len(rs)}")


if __name__ == "__main__":
    sys.exit(dispatch(worker, main, 3))
