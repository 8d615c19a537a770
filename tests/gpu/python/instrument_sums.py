"""In-kernel sums (tree profiles' default: no records) against records on
the same kernels. Each case runs twice: with records reduced on the device
(reduce=device, every launch also decoded on the host and diffed word by
word: CPROTON_INSTR_REDUCE_CHECK=1) and with the default, which sums in the
kernel. Per scope the counts and unpaired markers must be identical; the
cycles come from different code (registers instead of stores inside the
scopes, other instruction scheduling) and are printed side by side, bounded
only loosely here: their accuracy is checked against a kernel's own clock64
(triton_instrument.py's clock reference, for both). The clock each measures
must agree; every default launch must have been summed in the kernel and
none reduced. Kernels: the 64M vector add and the
4096^3 matmul of bench/ (scope in the K loop), the fused attention (scopes
around both dots), an early-exit kernel at warp and cta granularity
(unpaired starts), triton_instrument.py's kernels at every granularity,
the clock32 counter and selected warps, and a grid smaller
than the 64 slots. (Kernels with events keep records: ws_events.py.)"""
import json
import os
import sys

os.environ["CPROTON_INSTR_REDUCE_CHECK"] = "1"  # read when a session starts

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import cproton as proton  # noqa: E402
import cproton.language as pl  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
import triton_instrument as ti  # noqa: E402
from common import load  # noqa: E402
from instrument_overhead import load_kernels, workloads  # noqa: E402
from instrument_reduce import early_exit, early_exit_profile, run_cases  # noqa: E402


@triton.jit
def tiny(x, BLOCK: tl.constexpr):
    pl.enter_scope("all")
    v = tl.load(x + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    with pl.scope("double"):
        v = v * 2
    tl.store(x + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), v)
    pl.exit_scope("all")


def scopes(node, path=()):
    """{scope path under a kernel: metrics} for every node with a count."""
    out = {}
    for c in node["children"]:
        p = path + (c["frame"]["name"],)
        m = c["metrics"]
        if "count" in m or "unpaired_records" in m:
            out[p] = m
        out.update(scopes(c, p))
    return out


def stats():
    return proton._cproton.instr_stats()


def profile(name, mode, run):
    before = stats()
    sid = proton.start(name, backend="instrumentation", mode=mode)
    run()
    proton.finalize(sid)
    after = stats()
    return scopes(load(f"{name}.hatchet")[0]), {k: after[k] - before[k] for k in after}


def rate(m):
    """Cycles per ns the profile used for this scope."""
    return m["normalized_cycles"] / m["normalized_time (ns)"] if m.get("normalized_time (ns)") else None


def compare(name, run, mode="default", summed=True, rtol=0.5, slack=200, big=False):
    """Records (checked against the host) vs the default for `run`; `big`:
    enough CTAs and time that the clock each measured must be a Hopper's."""
    rec, drec = profile(f"rec_{name}", mode + ":reduce=device", run)
    got, dsum = profile(f"sum_{name}", mode, run)
    assert drec["reduce_mismatches"] == 0 and drec["failed"] == 0 and drec["dropped"] == 0, drec
    if summed:
        assert dsum["summed"] == dsum["launches"] > 0 and dsum["reduced"] == 0, dsum
    else:
        assert dsum["summed"] == 0, dsum
    assert dsum["failed"] == 0, dsum
    assert set(rec) == set(got), (sorted(rec), sorted(got))
    worst, lines = 0.0, []
    for path, r in rec.items():
        g = got[path]
        for key in ("count", "unpaired_records"):
            assert r.get(key, 0) == g.get(key, 0), (path, key, r.get(key), g.get(key))
        n = max(r.get("count", 0), 1)
        diff = abs(g.get("cycles", 0) - r.get("cycles", 0))
        assert diff <= rtol * r.get("cycles", 0) + slack * n, (path, r.get("cycles"), g.get("cycles"))
        if r.get("cycles"):
            worst = max(worst, diff / r["cycles"])
            lines.append(f"{'/'.join(path)} {g.get('cycles', 0) / r['cycles'] - 1:+.1%}")
        for which, m in (("records", r), ("sums", g)):  # a Hopper SM runs at 1-2 GHz
            if big and rate(m):
                assert 1.0 < rate(m) < 2.1, (path, which, rate(m))
    counts = sum(m.get("count", 0) for m in got.values())
    rates = [f"{rate(m):.2f}" for m in (next(iter(rec.values())), next(iter(got.values()))) if rate(m)]
    print(f"PASS {name}: {len(rec)} scopes, {counts} occurrences and the unpaired markers identical, "
          f"{dsum['summed']} launches summed in the kernel; cycles vs records: {', '.join(lines)}; "
          f"clock (cycles/ns) records, sums: {', '.join(rates)}")


def main():
    fns, _, _ = workloads(load_kernels("cproton.language", "cproton_sums"), n=1 << 26)
    ex, eo = torch.randn(4096 * 128, device="cuda"), torch.empty(4096 * 128, device="cuda")
    small = torch.randn(5 * 256, device="cuda")

    def three(fn):
        return lambda: [fn() for _ in range(3)]

    def early():
        early_exit[(4096,)](ex, eo, BLOCK=128, num_warps=4)

    def ti_kernels(num_warps=4):
        n, BLOCK = 1 << 16, 1024
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        z, out = torch.empty_like(x), torch.empty(n // BLOCK * 128, device="cuda")

        def run():
            for _ in range(3):
                ti.vadd[(n // BLOCK,)](x, y, z, n, BLOCK=BLOCK, num_warps=num_warps)
                ti.looped[(n // BLOCK,)](x, out, K=8, BLOCK=128, num_warps=num_warps)
        return run

    cases = [
        ("vadd64M", lambda: compare("vadd64M", three(fns["vadd"]), big=True)),
        ("matmul4096", lambda: compare("matmul4096", three(fns["matmul"]), big=True)),
        # records of 64 KV iterations x 2 scopes need more than the default 1 KiB per warp
        ("attention", lambda: compare("attention", three(fns["attention"]),
                                      "default:buffer_type=global:buffer_size=32768", big=True)),
        ("early_exit", lambda: compare("early_exit", three(early), slack=60)),
        ("early_exit_cta", lambda: compare("early_exit_cta", three(early), "default:granularity=cta", slack=60)),
        ("warp", lambda: compare("warp", ti_kernels())),
        ("clock32", lambda: compare("clock32", ti_kernels(), "default:optimizations=clock32")),
        ("sampled", lambda: compare("sampled", ti_kernels(),
                                    "default:sampling_strategy=selective:sampling_options=0,2")),
        ("warp_group_w16", lambda: compare("warp_group_w16", ti_kernels(16), "default:granularity=warp_group")),
        ("warp_2_w16", lambda: compare("warp_2_w16", ti_kernels(16), "default:granularity=warp_2")),
        ("cta", lambda: compare("cta", ti_kernels(), "default:granularity=cta")),
        ("small_grid", lambda: compare("small_grid", three(lambda: tiny[(5,)](small, BLOCK=256, num_warps=4)),
                                       slack=60)),
    ]
    failed = run_cases(cases) + early_exit_profile("sum_early_exit.hatchet", "summed in the kernel")
    print("stats", json.dumps(stats()))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
