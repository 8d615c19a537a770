"""Launch-bound overhead of hook="triton" and context="python": time per
launch of a tiny Triton kernel with no profiler, with cproton and with
Proton in the same mode. Target: each cproton mode adds at most half of
Proton's added time. usage: launch_overhead.py [OUT_DIR]"""
import json
import os
import statistics
import subprocess
import tempfile
import sys
import time

CHILD = r"""
import sys, time, torch, triton, triton.language as tl
lib, mode = sys.argv[1], sys.argv[2]
@triton.jit(launch_metadata=lambda g, m, a: {"flops": 1.0, "bytes": 4})
def k(x, BLOCK: tl.constexpr):
    tl.store(x + tl.arange(0, BLOCK), tl.load(x + tl.arange(0, BLOCK)) + 1)
x = torch.zeros(128, device="cuda")
for _ in range(200): k[(1,)](x, BLOCK=128)
torch.cuda.synchronize()
if lib != "none":
    proton = __import__("cproton") if lib == "cproton" else __import__("triton.profiler", fromlist=["x"])
    kw = {"hook": "triton"} if mode == "hook" else {"context": "python"} if mode == "python" else {}
    proton.start(f"lo_{lib}_{mode}", **kw)
n = 20000
best = 1e9
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(n): k[(1,)](x, BLOCK=128)
    torch.cuda.synchronize()
    best = min(best, (time.perf_counter() - t0) / n)
if lib != "none":
    proton.finalize()
print(best * 1e6)
"""


def measure(child, lib, mode):
    r = subprocess.run([sys.executable, child, lib, mode], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr[-500:]
    return float(r.stdout.strip().splitlines()[-1]), None


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")
    child = os.path.join(tempfile.mkdtemp(prefix="cproton-lo-"), "launch_child.py")
    with open(child, "w") as f:  # Triton's @jit needs its source in a file
        f.write(CHILD)
    configs = [("none", "plain")] + [(lib, mode) for mode in ("shadow", "hook", "python")
                                     for lib in ("cproton", "proton")]
    runs = {c: [] for c in configs}
    errors = {}
    for rep in range(int(os.environ.get("REPS", "3"))):  # interleaved rounds
        for c in configs[rep % len(configs):] + configs[:rep % len(configs)]:
            v, err = measure(child, *c)
            if v is None:
                errors[c] = err
            else:
                runs[c].append(v)
    med = {c: statistics.median(v) for c, v in runs.items() if v}
    base = med.get(("none", "plain"))
    res = {"baseline_us": base}
    for lib, mode in configs[1:]:
        res[f"{lib}_{mode}_us"] = med.get((lib, mode), f"failed: {errors.get((lib, mode))}")
    print(json.dumps(res, indent=1))
    ok = True
    for mode in ("hook", "python"):
        c, p = res[f"cproton_{mode}_us"], res[f"proton_{mode}_us"]
        if isinstance(c, float) and isinstance(p, float):
            ratio = (c - base) / max(p - base, 1e-9)
            print(f"RESULT {mode}: cproton adds {c - base:.2f} us/launch, Proton adds {p - base:.2f} us/launch, "
                  f"ratio {ratio:.2f} ({'meets' if ratio <= 0.5 else 'misses'} target <= 0.5)")
    with open(os.path.join(out, "launch_overhead.json"), "w") as f:
        json.dump(res, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
