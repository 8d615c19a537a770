"""Intra-kernel instrumentation of Triton kernels on a GPU
(start(backend="instrumentation")): record counts and nesting exactly as the
kernels' structure implies, for both buffer types and selected warps; per-
scope cycles consistent with the kernel's own clock64 measurement; a trace
with one region per warp and scope; no per-launch host synchronisation."""
import json
import sys
import time

import torch
import triton
import triton.language as tl

import cproton as proton
import cproton.language as pl
from common import find, load

N_WARPS = 4


@triton.jit
def vadd(x, y, z, n, BLOCK: tl.constexpr):
    pl.enter_scope("kernel")
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    with pl.scope("load"):
        a = tl.load(x + off, mask=m)
        b = tl.load(y + off, mask=m)
    tl.store(z + off, a + b, mask=m)
    pl.exit_scope("kernel")


@triton.jit
def looped(x, out, K: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    pl.enter_scope("loop")
    for k in range(0, K):
        pl.enter_scope("step")
        acc += tl.load(x + k * BLOCK + tl.arange(0, BLOCK))
        pl.exit_scope("step")
    pl.exit_scope("loop")
    tl.store(out + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)


def metrics(root, *path):
    nodes = [root]
    for name in path:
        nodes = [c for n in nodes for c in n["children"] if c["frame"]["name"] == name]
        assert nodes, f"no node {path} in profile"
    return nodes[0]["metrics"]


def case(name, mode, launches=3, sampled=None, num_warps=N_WARPS):
    """`sampled`: recording units per CTA (None: one per warp)."""
    n = 1 << 16
    BLOCK = 1024
    ctas = n // BLOCK
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    out = torch.empty(ctas * 128, device="cuda")
    sid = proton.start(name, backend="instrumentation", mode=mode)
    for _ in range(launches):
        vadd[(ctas,)](x, y, z, n, BLOCK=BLOCK, num_warps=num_warps)
        looped[(ctas,)](x, out, K=8, BLOCK=128, num_warps=num_warps)
    proton.finalize(sid)
    torch.testing.assert_close(z, x + y)
    root = load(f"{name}.hatchet")[0]
    warps = num_warps if sampled is None else sampled
    per = launches * ctas * warps
    k = metrics(root, "vadd", "kernel")
    ld = metrics(root, "vadd", "kernel", "load")
    assert k["count"] == per and ld["count"] == per, (k, ld, per)
    assert 0 < ld["cycles"] < k["cycles"], (k, ld)
    assert abs(k["normalized_cycles"] - k["cycles"] / (ctas * warps)) < 1e-6 * k["cycles"]
    step = metrics(root, "looped", "loop", "step")
    loop = metrics(root, "looped", "loop")
    assert step["count"] == 8 * per and loop["count"] == per, (step, loop)
    assert step["cycles"] <= loop["cycles"], (step, loop)
    assert k["normalized_time (ns)"] > 0
    print(f"PASS {name}: kernel {k['count']} records, load/kernel cycles "
          f"{ld['cycles'] / k['cycles']:.2f}, step/loop {step['cycles'] / loop['cycles']:.2f}")


@triton.jit
def timed(x, t, BLOCK: tl.constexpr, SPIN: tl.constexpr):
    """Reads %clock64 around a scope itself: the reference for its cycles."""
    t0 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
    pl.enter_scope("spin")
    acc = tl.load(x + tl.arange(0, BLOCK))
    for i in range(SPIN):
        acc = acc * 1.0001 + 0.5
    tl.store(x + tl.arange(0, BLOCK), acc)
    pl.exit_scope("spin")
    t1 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
    tl.store(t + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), t1 - t0)


def clock_reference(mode="default:buffer_type=global:reduce=device", tag="records"):
    x = torch.randn(128, device="cuda")
    t = torch.zeros(128, dtype=torch.int64, device="cuda")
    sid = proton.start(f"clockref_{tag}", backend="instrumentation", mode=mode)
    timed[(1,)](x, t, BLOCK=128, SPIN=2000, num_warps=4)
    proton.finalize(sid)
    ref = t.float().mean().item()
    spin = metrics(load(f"clockref_{tag}.hatchet")[0], "timed", "spin")
    got = spin["normalized_cycles"]
    assert 0.98 * ref < got <= 1.02 * ref, (got, ref)
    print(f"PASS clock64 reference ({tag}): scope {got:.0f} cycles vs kernel's own clock64 {ref:.0f} "
          f"({(got / ref - 1) * 100:+.2f}%)")


def trace_case():
    n = 1 << 14
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    sid = proton.start("itrace", backend="instrumentation", data="trace")
    vadd[(n // 1024,)](x, y, z, n, BLOCK=1024, num_warps=N_WARPS)
    proton.finalize(sid)
    ev = [e for e in load("itrace.chrome_trace")["traceEvents"] if e.get("cat") == "vadd"]
    assert len(ev) == 2 * 16 * N_WARPS, len(ev)
    assert all(e["pid"].startswith("vadd Core") for e in ev)
    print(f"PASS trace: {len(ev)} regions")


def no_sync():
    """1,000 instrumented launches vs 1,000 plain ones, wall time."""
    n = 1 << 12
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    for _ in range(20):
        vadd[(4,)](x, y, z, n, BLOCK=1024)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(1000):
        vadd[(4,)](x, y, z, n, BLOCK=1024)
    torch.cuda.synchronize()
    plain = time.perf_counter() - t0
    sid = proton.start("nosync", backend="instrumentation")
    for _ in range(20):
        vadd[(4,)](x, y, z, n, BLOCK=1024)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(1000):
        vadd[(4,)](x, y, z, n, BLOCK=1024)
    launch = time.perf_counter() - t0
    torch.cuda.synchronize()
    total = time.perf_counter() - t0
    proton.finalize(sid)
    print(f"RESULT no_sync: 1000 plain launches {plain * 1e3:.1f} ms; instrumented: "
          f"launch loop {launch * 1e3:.1f} ms, to completion {total * 1e3:.1f} ms "
          f"({launch / plain:.2f}x plain)")


def drops_case():
    """A 64-iteration loop into 8-record segments: the drops and the unpaired
    survivors are counted exactly, per kernel and per scope, in the profile."""
    ctas, launches, K = 16, 2, 64
    x = torch.randn(K * 128, device="cuda")
    out = torch.empty(ctas * 128, device="cuda")
    sid = proton.start("drops", backend="instrumentation",
                       mode="default:buffer_type=global:buffer_size=256:reduce=device")  # records
    for _ in range(launches):
        looped[(ctas,)](x, out, K=K, BLOCK=128, num_warps=N_WARPS)
    proton.finalize(sid)
    root = load("drops.hatchet")[0]
    per = launches * ctas * N_WARPS
    kern = [c for c in root["children"] if c["frame"]["name"] == "looped"][0]["metrics"]
    assert kern["dropped_records"] == per * (2 + 2 * K - 8), kern
    loop, step = metrics(root, "looped", "loop"), metrics(root, "looped", "loop", "step")
    # the 8 survivors: step's end, 3 step pairs, loop's end
    assert step["count"] == 3 * per and step["unpaired_records"] == per, step
    assert loop.get("count", 0) == 0 and loop["unpaired_records"] == per, loop
    print(f"PASS drops: {kern['dropped_records']} records dropped, counted per kernel and scope")


def exact_sizing_case():
    """The default buffer of a loop-free kernel holds one slot per marker: a
    64M-element add overwrites nothing and copies back ~20x less (records:
    reduce=device; tree profiles would otherwise sum in the kernel)."""
    n = 1 << 26
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    z = torch.empty_like(x)
    before = proton._cproton.instr_stats()
    sid = proton.start("exact", backend="instrumentation", mode="default:reduce=device")
    vadd[(n // 1024,)](x, y, z, n, BLOCK=1024, num_warps=N_WARPS)
    proton.finalize(sid)
    after = proton._cproton.instr_stats()
    k = metrics(load("exact.hatchet")[0], "vadd", "kernel")
    assert k["count"] == (n // 1024) * N_WARPS and after["dropped"] == before["dropped"], (k, after)
    print(f"PASS exact sizing: {k['count']} kernel scopes, nothing dropped")


def main():
    failed = 0
    cases = [lambda: case("shared", "default"),
             lambda: case("global", "default:buffer_type=global"),
             lambda: case("clock32", "default:optimizations=clock32"),
             lambda: case("sampled", "default:sampling_strategy=selective:sampling_options=0,2", sampled=2),
             lambda: case("warp_group", "default:granularity=warp_group", sampled=1),
             lambda: case("cta", "default:granularity=cta", sampled=1),
             # Proton's warp_N / warp_group_N: one recording unit per N warps
             # / N warp groups; 16 warps per CTA give exact unit counts
             lambda: case("warp_2", "default:granularity=warp_2", sampled=8, num_warps=16),
             lambda: case("warp_8", "default:granularity=warp_8", sampled=2, num_warps=16),
             lambda: case("warp_group_w16", "default:granularity=warp_group", sampled=4, num_warps=16),
             lambda: case("warp_group_2", "default:granularity=warp_group_2", sampled=2, num_warps=16),
             lambda: case("warp_group_4", "default:granularity=warp_group_4:buffer_type=global",
                          sampled=1, num_warps=16),
             lambda: case("warp_group_8", "default:granularity=warp_group_8", sampled=1, num_warps=16),
             # the same counts from records reduced on the device
             lambda: case("records", "default:reduce=device"),
             lambda: case("records_cta", "default:granularity=cta:reduce=device", sampled=1),
             drops_case, exact_sizing_case, clock_reference,
             lambda: clock_reference("default", "sums"),
             trace_case, no_sync]
    for c in cases:
        try:
            c()
        except Exception as e:  # report every case
            failed += 1
            print(f"FAIL {getattr(c, '__name__', 'case')}: {type(e).__name__}: {e}")
    print("stats", json.dumps(proton._cproton.instr_stats()))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
