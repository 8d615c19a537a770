"""Intra-kernel events (Proton's pl.allocate_event / start_event /
end_event) in a warp-specialized Gluon kernel, and their alignment with the
CUPTI kernel when both backends run.

The kernel `ws_events` (num_warps=4, two 1-warp workers; Triton rounds the
CTA up to 8 warps):
- "handoff": started by the producer partition (warp 4) before each mbarrier
  arrive, ended by the consumer partition (warp 5) after the matching wait:
  an event whose start and end are recorded by different warps;
- "gap": in the default partition (warps 0-3), from the end of one loop
  iteration to the start of the next (started before the loop, ended at the
  top of each iteration, started again at its bottom, ended after it): an
  event that spans loop iterations, which a scope cannot express;
- "step": a plain scope inside that loop.

Also imported by tests/python/test_events.py (compiles it for sm_90 on the
CPU) and scripts/gen_ptx_fixtures.py (tests/data/ptx/ws_events_sm90.ptx).
On a GPU (`python ws_events.py`): exact counts per event and scope, and
every intra-kernel event inside the CUPTI kernel's [start, end]."""
import sys

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

import cproton.language as pl

N_HANDOFF = 4  # producer -> consumer hand-offs per CTA


@gluon.jit
def _producer(bars, ev, N: gl.constexpr):
    for i in gl.static_range(N):
        pl.start_event(ev)
        mbarrier.arrive(bars.index(i))


@gluon.jit
def _consumer(bars, ev, N: gl.constexpr):
    for i in gl.static_range(N):
        mbarrier.wait(bars.index(i), 0)
        pl.end_event(ev)


@gluon.jit
def _default(x, n, gap, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    acc = gl.load(x + offs)
    pl.start_event(gap)
    for i in range(n):
        pl.end_event(gap)
        pl.enter_scope("step")
        acc = acc * 0.5 + 1.0
        pl.exit_scope("step")
        pl.start_event(gap)
    pl.end_event(gap)
    gl.store(x + offs, acc)


@gluon.jit
def ws_events(x, n, BLOCK: gl.constexpr, N: gl.constexpr):
    bars = gl.allocate_shared_memory(gl.int64, [N, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(N):
        mbarrier.init(bars.index(i), count=1)
    handoff = pl.allocate_event("handoff")
    gap = pl.allocate_event("gap")
    gl.warp_specialize([(_default, (x, n, gap, BLOCK)), (_producer, (bars, handoff, N)),
                        (_consumer, (bars, handoff, N))], [1, 1], [24, 24])


SIGNATURE = {"x": "*fp32", "n": "i32", "BLOCK": "constexpr", "N": "constexpr"}
CONSTANTS = {"BLOCK": 128, "N": N_HANDOFF}
OPTIONS = {"num_warps": 4}


def source():
    return gluon._runtime.GluonASTSource(ws_events, SIGNATURE, CONSTANTS)


def _kernel_spans(trace, name):
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in trace
                  if e.get("ph") == "X" and e.get("name") == name)


def check_trace(trace, cupti_trace, launches):
    """The trace checks, on the instrumentation session's chrome trace and
    the CUPTI session's; returns the number of failures."""
    failed = 0
    ev = [e for e in trace if e.get("cat") == "ws_events"]
    # the producer partition is one worker warp (Triton places the workers
    # after the default partition's warps, at warp 6 on an H100 with 3.6)
    handoff_tids = {e["tid"] for e in ev if e["name"] == "handoff"}
    warps = {int(t.split()[1]) for t in handoff_tids}
    if len(warps) != 1 or min(warps) < 4:
        failed += 1
        print(f"FAIL handoff events not on one worker warp: {sorted(handoff_tids)[:4]}")
    # Alignment. The CUPTI kernel records reach every session active at the
    # launch, so the instrumentation trace holds the CUPTI kernels too, on
    # the same time origin as its intra-kernel events.
    spans = _kernel_spans(trace, "ws_events")
    if len(spans) != launches or _kernel_spans(cupti_trace, "ws_events") == [] or not ev:
        print(f"FAIL alignment: {len(spans)} CUPTI ws_events kernels in the trace, {len(ev)} regions")
        return failed + 1
    outside = [(e["ts"], e["ts"] + e["dur"]) for e in ev
               if not any(s <= e["ts"] and e["ts"] + e["dur"] <= t for s, t in spans)]
    if outside:
        failed += 1
        print(f"FAIL alignment: {len(outside)}/{len(ev)} intra-kernel events outside the CUPTI kernels "
              f"{spans}; e.g. {outside[:3]}")
    else:
        lead = min(min(e["ts"] for e in ev if s <= e["ts"] <= t) - s for s, t in spans)
        print(f"PASS alignment: all {len(ev)} intra-kernel events inside their CUPTI kernel's [start, end] "
              f"({launches} kernels of {[round(t - s, 1) for s, t in spans]} us; first region "
              f"{lead:.2f} us after its kernel's start)")
    return failed


def gpu_main():
    import json
    import torch
    import cproton as proton
    from common import load

    ctas, iters, launches = 64, 6, 3
    x = torch.ones(ctas * 128, device="cuda")
    a = torch.randn(4096, 4096, device="cuda")
    warm = proton.start("ws_events_warmup", backend="instrumentation")  # compiles the instrumented
    ws_events[(ctas,)](x, 0, BLOCK=128, N=N_HANDOFF, num_warps=4)      # kernel outside the test
    torch.cuda.synchronize()
    proton.finalize(warm)
    x.fill_(1.0)
    failed = 0
    sid = proton.start("ws_events", backend="instrumentation", data="trace")
    cupti = proton.start("ws_events_cupti", data="trace")
    for _ in range(4):  # matmuls ahead of the launches below: the GPU may still be busy
        a = a @ a * 1e-3  # when they are launched, so launch time and kernel start differ
    for _ in range(launches):
        ws_events[(ctas,)](x, iters, BLOCK=128, N=N_HANDOFF, num_warps=4)
    torch.cuda.synchronize()
    proton.finalize(cupti)  # the CUPTI records first: the instrumentation trace aligns to them
    proton.finalize(sid)
    expect = 1.0
    for _ in range(launches * iters):
        expect = expect * 0.5 + 1.0
    torch.testing.assert_close(x, torch.full_like(x, expect))
    ev = [e for e in load("ws_events.chrome_trace")["traceEvents"] if e.get("cat") == "ws_events"]
    counts = {}
    for e in ev:
        counts[e["name"]] = counts.get(e["name"], 0) + 1
    want = {"handoff": launches * ctas * N_HANDOFF, "gap": launches * ctas * 4 * (iters + 1),
            "step": launches * ctas * 4 * iters}
    if counts != want:
        failed += 1
        print(f"FAIL ws_events counts: {counts} != {want}")
    else:
        print(f"PASS ws_events: exact counts {json.dumps(counts)} (handoff: producer warp -> consumer warp; "
              "gap: across loop iterations)")
    failed += check_trace(load("ws_events.chrome_trace")["traceEvents"],
                          load("ws_events_cupti.chrome_trace")["traceEvents"], launches)
    return failed


if __name__ == "__main__":
    sys.exit(1 if gpu_main() else 0)
