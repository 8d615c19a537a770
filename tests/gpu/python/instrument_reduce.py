"""The device reduction of profile buffers (reduce=device, the default for
tree profiles) against the host decoder, the reference: with
CPROTON_INSTR_REDUCE_CHECK=1 every reduced launch's buffer is also copied
back and decoded on the host, and the two results (per-scope cycles,
counts, unpaired; dropped, bad CTAs, the clock measurement's sums) must be
identical. Kernels: the 64M vector add and the 4096^3 matmul of bench/ (its
scope in the K loop, with segments that wrap), triton_instrument.py's
cases (warp / warp_group / cta granularity, clock32, selected warps, a loop
into 8-record segments), an early-exit kernel (unpaired starts) and
time_shift, and buffer_strategy=flush (a global buffer with room for every
record: the matmul and vector add drop nothing, with exact counts; with a
small buffer_size it wraps and counts the drops exactly). reduce=host and
traces never reduce on the device. Tree profiles sum in the kernel unless
told otherwise (instrument_sums.py), so every session here names
reduce=device."""
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


@triton.jit
def early_exit(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    pl.enter_scope("body")
    v = tl.load(x + pid * BLOCK + tl.arange(0, BLOCK))
    if pid % 3 == 1:
        return
    pl.enter_scope("tail")
    v = v * 2
    pl.exit_scope("tail")
    tl.store(out + pid * BLOCK + tl.arange(0, BLOCK), v)
    pl.exit_scope("body")


def run_cases(cases):
    """Runs every (name, fn) case, printing a FAIL line for each that raises;
    returns how many failed."""
    failed = 0
    for name, c in cases:
        try:
            c()
        except Exception as e:  # report every case
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
    return failed


def early_exit_profile(path, how):
    """The early-exit profile at `path` (3 launches, 4096 CTAs x 4 warps):
    CTAs with pid % 3 == 1 leave "body" open, each warp one unpaired start.
    Returns 1 (and a FAIL line) when it does not hold."""
    return run_cases([("early_exit_profile", lambda: _early_exit_check(path, how))])


def _early_exit_check(path, how):
    body = ti.metrics(load(path)[0], "early_exit", "body")
    per = 3 * 4 * sum(1 for p in range(4096) if p % 3 == 1)
    assert body["unpaired_records"] == per, (body, per)
    print(f"PASS early_exit_profile: {per} unpaired starts of body {how}")


def stats():
    return proton._cproton.instr_stats()


def checked(name, run, expect_reduced=True):
    """Runs `run`; every launch it reduced on the device was diffed with the
    host decoder and none differed."""
    before = stats()
    run()
    after = stats()
    d = {k: after[k] - before[k] for k in after}
    if expect_reduced:
        assert d["reduced"] > 0, f"nothing reduced on the device: {d}"
        assert d["reduce_checked"] == d["reduced"], d
        assert d["reduce_mismatches"] == 0, f"device and host results differ (see the warnings): {d}"
    else:
        assert d["reduced"] == 0 and d["decoded"] > 0, d
    assert d["failed"] == 0, d
    print(f"PASS {name}: {d['reduced']} launches reduced on the device, identical to the host decoder "
          f"({d['dropped']} dropped, {d['unpaired']} unpaired records)")
    return d


def device(mode):
    """`mode` with records reduced on the device (tree profiles would
    otherwise sum in the kernel)."""
    return mode if "reduce=" in mode else mode + ":reduce=device"


def session(name, mode, fn, launches=3, data="tree"):
    def run():
        sid = proton.start(name, backend="instrumentation", mode=device(mode) if data == "tree" else mode,
                           data=data)
        for _ in range(launches):
            fn()
        proton.finalize(sid)
    return run


def flush_case(name, mode, fn, kernel, scope, occurrences, dropped):
    """buffer_strategy=flush: reduced exactly as the host decodes it, with
    `occurrences` pairs of `scope` over 3 launches and `dropped` records
    overwritten."""
    d = checked(name, session(name, mode, fn))
    assert d["dropped"] == dropped, (d, dropped)
    m = ti.metrics(load(f"{name}.hatchet")[0], kernel, scope)
    assert m["count"] == occurrences, (m, occurrences)
    print(f"PASS {name}_counts: {occurrences} occurrences of {scope}, {dropped} records dropped")


def main():
    fns, _, _ = workloads(load_kernels("cproton.language", "cproton_reduce"), n=1 << 26)
    vadd, mm = fns["vadd"], fns["matmul"]  # the 64M vector add, the 4096^3 matmul
    ex, eo = torch.randn(4096 * 128, device="cuda"), torch.empty(4096 * 128, device="cuda")

    def early():
        early_exit[(4096,)](ex, eo, BLOCK=128, num_warps=4)

    cases = [
        ("vadd64M", lambda: checked("vadd64M", session("r_vadd", "default", vadd))),
        ("matmul4096", lambda: checked("matmul4096", session("r_mm", "default", mm))),
        ("matmul4096_wrapped", lambda: checked("matmul4096_wrapped",
                                               session("r_mmw", "default:buffer_size=2048", mm))),
        ("matmul4096_global_time_shift", lambda: checked(
            "matmul4096_global_time_shift",
            session("r_mmg", "default:buffer_type=global:optimizations=time_shift", mm))),
        # flush: 16 KiB per warp for the K loop (2,048 slots for 128 records), exact for the add;
        # per launch 1,024 CTAs x 8 warps x 64 iterations of dot, 65,536 CTAs x 4 warps of kernel
        ("matmul4096_flush", lambda: flush_case("r_mmf", "default:buffer_strategy=flush", mm, "matmul", "dot",
                                                3 * 1024 * 8 * 64, 0)),
        ("vadd64M_flush", lambda: flush_case("r_vaddf", "default:buffer_strategy=flush", vadd, "vadd", "kernel",
                                             3 * 65536 * 4, 0)),
        # buffer_size=2048 over 8 warps: 32 slots for 128 records, 96 dropped per warp and launch;
        # the 32 survivors are the last 16 dot pairs
        ("matmul4096_flush_wrapped", lambda: flush_case(
            "r_mmfw", "default:buffer_strategy=flush:buffer_size=2048", mm, "matmul", "dot",
            3 * 1024 * 8 * 16, 3 * 1024 * 8 * 96)),
        ("early_exit", lambda: checked("early_exit", session("r_early", "default", early))),
        ("early_exit_cta", lambda: checked("early_exit_cta", session("r_early_cta", "default:granularity=cta",
                                                                      early))),
        ("warp", lambda: checked("warp", lambda: ti.case("r_shared", device("default")))),
        ("global", lambda: checked("global", lambda: ti.case("r_global", device("default:buffer_type=global")))),
        ("clock32", lambda: checked("clock32", lambda: ti.case("r_clock32", device("default:optimizations=clock32")))),
        ("sampled", lambda: checked("sampled", lambda: ti.case(
            "r_sampled", device("default:sampling_strategy=selective:sampling_options=0,2"), sampled=2))),
        ("warp_group", lambda: checked("warp_group", lambda: ti.case(
            "r_wg", device("default:granularity=warp_group"), sampled=1))),
        ("cta", lambda: checked("cta", lambda: ti.case("r_cta", device("default:granularity=cta"), sampled=1))),
        ("drops", lambda: checked("drops", ti.drops_case)),  # drops_case names reduce=device
        ("reduce_host", lambda: checked("reduce_host", session("r_host", "default:reduce=host", vadd),
                                        expect_reduced=False)),
        ("trace", lambda: checked("trace", session("r_trace", "default", early, launches=1, data="trace"),
                                  expect_reduced=False)),
    ]
    failed = run_cases(cases) + early_exit_profile("r_early.hatchet", "in the profile")
    st = stats()
    print("stats", json.dumps(st))
    # where launches' time went: every decoded launch was in flight and
    # decoded for some time; no more launches waited for a buffer than ran
    if st["inflight_ns"] > 0 and st["decode_ns"] > 0 and st["alloc_waits"] <= st["launches"]:
        print(f"PASS pipeline_counters: {st['inflight_ns'] / st['launches'] / 1e3:.1f} us in flight, "
              f"{st['decode_ns'] / st['launches'] / 1e3:.1f} us decoding per launch, "
              f"{st['alloc_waits']} launches waited for a buffer")
    else:
        failed += 1
        print(f"FAIL pipeline_counters: {st}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
