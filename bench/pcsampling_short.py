"""Short kernels under PC sampling: the share of launches that get at least
one sample, for kernels of 1-10 us, under cproton's modes and Proton side by
side (docs/benchmarks.md, issue 22).

usage: pcsampling_short.py OUTDIR [TRIALS]         driver (about 2 minutes; TRIALS 12)
       pcsampling_short.py --calibrate OUTDIR      one fresh process
       pcsampling_short.py --worker CONFIG OUTDIR [TRIALS]

Kernels: PyTorch's fill of 1024 floats (test_pcsampling's ~2 us kernel under
"init") and four Triton kernels of one CTA of 4 warps (a dependent FMA loop),
each its own function, whose loop counts are calibrated first (cproton's
kernel-level profile, CUPTI's kernel times) to about 1, 2, 5 and 10 us.
Each config runs in a fresh process: the kernels are compiled and warmed up
before any session; then TRIALS sessions, each launching every kernel twice,
the first launch under scope "<kernel>.1", the second under "<kernel>.2".
A launch is sampled when its scope holds num_samples > 0. "first" is the
share of sessions whose first launch of the kernel was sampled (cproton's
first=1 gives that launch a range of its own, as Proton gives every
launch); "again" the same for the second launch. With first=2 both launches
have ranges of their own. Proton and cproton's exact mode attribute every
sample to its launch; cproton's concurrent mode splits
a function's untagged samples among the scopes that ran it by kernel weight,
so its "again" column is an estimate.
Prints a Markdown table and RESULT lines; writes OUTDIR/short.json."""
import json
import os
import subprocess
import sys

import torch
import triton
import triton.language as tl

CONFIGS = {  # name -> (profiler, mode)
    "proton": ("proton", "pcsampling"),
    "cproton": ("cproton", "pcsampling"),
    "cproton_first0": ("cproton", "pcsampling:first=0"),
    "cproton_first2": ("cproton", "pcsampling:first=2"),
    "exact": ("cproton", "pcsampling:exact"),
    "exact_first0": ("cproton", "pcsampling:exact:first=0"),
}
TARGETS_US = (1, 2, 5, 10)


@triton.jit
def spin_a(x, n):
    offs = tl.arange(0, 128)
    acc = tl.load(x + offs)
    for _ in range(n):
        acc = acc * 0.999 + 0.5
    tl.store(x + offs, acc)


@triton.jit
def spin_b(x, n):
    offs = tl.arange(0, 128)
    acc = tl.load(x + offs)
    for _ in range(n):
        acc = acc * 0.999 + 0.5
    tl.store(x + offs, acc)


@triton.jit
def spin_c(x, n):
    offs = tl.arange(0, 128)
    acc = tl.load(x + offs)
    for _ in range(n):
        acc = acc * 0.999 + 0.5
    tl.store(x + offs, acc)


@triton.jit
def spin_d(x, n):
    offs = tl.arange(0, 128)
    acc = tl.load(x + offs)
    for _ in range(n):
        acc = acc * 0.999 + 0.5
    tl.store(x + offs, acc)


SPINS = {"spin_a": spin_a, "spin_b": spin_b, "spin_c": spin_c, "spin_d": spin_d}


def kernels(iters):
    """name -> a function launching that kernel once."""
    buf = torch.empty(1024, device="cuda")
    x = torch.zeros(128, device="cuda")
    out = {"fill": lambda: buf.fill_(1.0)}
    for name, fn in SPINS.items():
        out[name] = (lambda fn=fn, n=iters[name]: fn[(1, )](x, n, num_warps=4))
    return out


def subtree_samples(node):
    return node.get("metrics", {}).get("num_samples", 0) + sum(subtree_samples(c) for c in node.get("children", []))


def calibrate(out):
    """Loop counts for ~1/2/5/10 us, from CUPTI's kernel times."""
    import cproton as proton
    x = torch.zeros(128, device="cuda")
    probe = (0, 256, 1024, 4096)
    for n in probe:
        spin_a[(1, )](x, n, num_warps=4)
    torch.ones(1024, device="cuda")
    torch.cuda.synchronize()
    proton.start(os.path.join(out, "calib"), backend="cupti")
    for n in probe:
        with proton.scope(f"n{n}"):
            for _ in range(50):
                spin_a[(1, )](x, n, num_warps=4)
    with proton.scope("fill"):
        buf = torch.empty(1024, device="cuda")
        for _ in range(50):
            buf.fill_(1.0)
    torch.cuda.synchronize()
    proton.finalize()
    tree = json.load(open(os.path.join(out, "calib.hatchet")))[0]
    us = {}
    for c in tree["children"]:
        k = c["children"][0]["metrics"]
        us[c["frame"]["name"]] = k["time (ns)"] / k["count"] / 1e3
    d0, d1 = us["n0"], us["n4096"]
    slope = (d1 - d0) / 4096
    iters = {name: max(0, round((t - d0) / slope)) for name, t in zip(SPINS, TARGETS_US)}
    res = {"iters": iters, "us_per_iter": slope, "empty_us": d0, "fill_us": us["fill"], "probe_us": us}
    json.dump(res, open(os.path.join(out, "calib.json"), "w"), indent=1)
    print(f"calibrated: {res}")


def worker(config, out, trials):
    profiler, mode = CONFIGS[config]
    if profiler == "proton":
        import triton.profiler as proton
    else:
        import cproton as proton
    calib = json.load(open(os.path.join(out, "calib.json")))
    launch = kernels(calib["iters"])
    for f in launch.values():  # compiled, modules loaded, warm
        f()
    torch.cuda.synchronize()
    hits = {name: {"first": 0, "again": 0} for name in launch}
    for t in range(trials):
        path = os.path.join(out, f"{config}_{t}")
        proton.start(path, hook="triton", backend="cupti", mode=mode)
        for name, f in launch.items():
            for k in (1, 2):
                with proton.scope(f"{name}.{k}"):
                    f()
        proton.finalize()
        tree = json.load(open(path + ".hatchet"))[0]
        for c in tree["children"]:
            name, _, k = c["frame"]["name"].rpartition(".")
            if name in hits and subtree_samples(c) > 0:
                hits[name]["first" if k == "1" else "again"] += 1
        os.unlink(path + ".hatchet")
    json.dump({"config": config, "mode": mode, "trials": trials, "hits": hits},
              open(os.path.join(out, f"{config}.json"), "w"), indent=1)


def driver(out, trials):
    os.makedirs(out, exist_ok=True)
    me = os.path.abspath(__file__)
    subprocess.run([sys.executable, me, "--calibrate", out], check=True)
    calib = json.load(open(os.path.join(out, "calib.json")))
    results, wanted = {}, os.environ.get("PCS_SHORT_CONFIGS", ",".join(CONFIGS)).split(",")
    for config in wanted:
        r = subprocess.run([sys.executable, me, "--worker", config, out, str(trials)])
        if r.returncode:
            print(f"FAIL pcsampling_short {config}: worker exited {r.returncode}")
            continue
        results[config] = json.load(open(os.path.join(out, f"{config}.json")))
    dur = {"fill": calib["fill_us"]}
    for name in SPINS:
        dur[name] = calib["empty_us"] + calib["iters"][name] * calib["us_per_iter"]
    configs = list(results)
    print("| kernel (us) | " + " | ".join(f"{c} first / again" for c in configs) + " |")
    print("|---|" + "---|" * len(configs))
    for name in dur:
        cells = []
        for c in configs:
            h, n = results[c]["hits"][name], results[c]["trials"]
            cells.append(f"{h['first']}/{n} / {h['again']}/{n}")
            print(f"RESULT short {c} {name} ({dur[name]:.1f} us): first {h['first']}/{n}, again {h['again']}/{n}")
        print(f"| {name} ({dur[name]:.1f}) | " + " | ".join(cells) + " |")
    json.dump({"durations_us": dur, "results": results}, open(os.path.join(out, "short.json"), "w"), indent=1)
    return 0 if len(results) == len(wanted) else 1


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[0] == "--calibrate":
        calibrate(a[1])
    elif a[0] == "--worker":
        worker(a[1], a[2], int(a[3]) if len(a) > 3 else 12)
    else:
        sys.exit(driver(a[0], int(a[1]) if len(a) > 1 else 12))
