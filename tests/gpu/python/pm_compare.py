"""cproton's hardware metrics against Nsight Compute's on the same kernels
(issue 27; run by tests/gpu/pmsampling.sh).

  pm_compare.py ncu-metrics           the Nsight Compute metric of each
                                      default counter, comma-separated
  pm_compare.py run MODE OUT          pm_kernels.py's kernels under cproton
                                      with MODE; the profile is OUT.hatchet
  pm_compare.py train MODE STEPS OUT  a compiled GPT training step, STEPS
                                      timed steps after warm-up, under cproton
                                      with MODE ("off": no profiler, e.g. to
                                      run under Nsight Compute; the timed steps
                                      are the NVTX range "timed")
  pm_compare.py compare PROFILE CSV   per kernel class and counter: cproton's
                                      value (sum of <name>*ns / pm_sampled_ns
                                      over the class's kernel nodes), ncu's
                                      mean from CSV (--csv --page raw), the
                                      difference in percentage points;
                                      PASS when every one is within 5 pp

A counter's Nsight Compute metric is the one its short name stands for in
Nsight Compute's own sections; cproton reads the PM-sampling counter CUPTI
offers for it on the device (src/backend/cupti/pm_metrics.c)."""
import json
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ncu_csv  # noqa: E402

NCU = {
    "sm_throughput%": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram_throughput%": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "achieved_occupancy%": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "tensor_pipe%": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l2_hit_rate%": "lts__t_sector_hit_rate.pct",
    "issue_slots%": "sm__inst_issued.avg.pct_of_peak_sustained_active",
}
# Other PM-sampling counters for the same quantities, compared when a run
# names them (metrics=...): which one tracks Nsight Compute best decides
# the default set.
ALT = {
    "TPC.TriageCompute.sm__pipe_tensor_op_hmma_cycles_active_realtime.avg.pct_of_peak_sustained_active":
        "tensor_pipe%",
    "LTS.TriageCompute.lts__average_t_sector_hit_rate_srcunit_tex_realtime.pct": "l2_hit_rate%",
    "sm__inst_issued.avg.pct_of_peak_sustained_active": "issue_slots%",
    "TriageCompute.sm__throughput.avg.pct_of_peak_sustained_active": "sm_throughput%",
}
TOLERANCE_PP = 5.0




def walk(node, out):
    name = node.get("frame", {}).get("name", "")
    k = ncu_csv.klass(name)
    if k is not None and "pm_sampled_ns" in node.get("metrics", {}):
        out.append((k, node["metrics"]))
    for c in node.get("children", []):
        walk(c, out)


def cproton_values(path):
    with open(path) as f:
        tree = json.load(f)
    nodes = []
    for root in tree if isinstance(tree, list) else [tree]:
        walk(root, nodes)
    acc = defaultdict(lambda: defaultdict(float))
    for k, m in nodes:
        acc[k]["pm_sampled_ns"] += m.get("pm_sampled_ns", 0)
        acc[k]["pm_unsampled_ns"] += m.get("pm_unsampled_ns", 0)
        acc[k]["pm_shared_samples"] += m.get("pm_shared_samples", 0)
        acc[k]["pm_samples"] += m.get("pm_samples", 0)
        for short in NCU:
            if short + "*ns" in m:
                acc[k][short] += m[short + "*ns"]
                acc[k]["_has_" + short] = 1
        for long, short in ALT.items():
            if long + "*ns" in m:
                acc[k][short] += m[long + "*ns"]
                acc[k]["_has_" + short] = 1
    out = {}
    for k, a in acc.items():
        w = a["pm_sampled_ns"]
        out[k] = {s: (a[s] / w if w and a.get("_has_" + s) else None) for s in NCU}
        out[k]["_coverage"] = w / (w + a["pm_unsampled_ns"]) if w + a["pm_unsampled_ns"] else 0
        out[k]["_samples"] = a["pm_samples"]
        out[k]["_shared"] = a["pm_shared_samples"]
    return out


def ncu_values(path):
    """{(kernel class, short name): ncu's mean} for the metrics of NCU."""
    table = ncu_csv.means(path, lambda column: column in NCU.values())
    if table is None:
        raise ValueError(f"no ncu table in {path}")
    return {(k, short): table[(k, metric)][0]
            for short, metric in NCU.items() for k, column in table if column == metric}


def run(mode, out):
    import logging
    logging.basicConfig(level=logging.INFO)
    import cproton as proton
    import pm_kernels
    proton.start(out, backend="cupti", mode=mode)
    rc = pm_kernels.main()
    proton.finalize()
    return rc


def train(mode, steps, out):
    """A compiled GPT training step (bench/workloads.py) under cproton with
    MODE, after warm-up; prints ms per step."""
    import time
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "bench"))
    import cproton as proton
    import workloads
    import torch
    step, sync = workloads.WORKLOADS["train"](lambda n: proton.scope(n))
    for _ in range(3):
        step()
    sync()
    if mode != "off":  # "off": no profiler (alone, or under Nsight Compute)
        proton.start(out, backend="cupti", mode=mode or None)
    torch.cuda.nvtx.range_push("timed")  # ncu --nvtx-include timed/
    t = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    dt = time.perf_counter() - t
    torch.cuda.nvtx.range_pop()
    if mode != "off":
        proton.finalize()
    print(f"RESULT pm_train mode={mode or 'default'} ms_per_step={dt * 1e3 / steps:.3f}")
    return 0


def compare(profile, csv_path):
    mine, ref = cproton_values(profile), ncu_values(csv_path)
    fails = 0
    for k in sorted(mine):
        v = mine[k]
        print(f"RESULT pm_cproton kernel={k} coverage={v['_coverage']:.3f} samples={v['_samples']:.0f} "
              f"shared={v['_shared']:.0f}")
        for short in NCU:
            a, b = v.get(short), ref.get((k, short))
            if a is None:
                print(f"RESULT pm_compare kernel={k} metric={short} cproton=- ncu={b} (not read by this mode)")
                continue
            if b is None:
                print(f"RESULT pm_compare kernel={k} metric={short} cproton={a:.2f} ncu=- (missing)")
                fails += 1
                continue
            d = a - b
            ok = abs(d) <= TOLERANCE_PP
            fails += not ok
            print(f"RESULT pm_compare kernel={k} metric={short} cproton={a:.2f} ncu={b:.2f} "
                  f"diff_pp={d:+.2f} {'ok' if ok else 'OUTSIDE_5pp'}")
    print(f"{'PASS' if fails == 0 and mine else 'FAIL'} pm_compare ({fails} outside {TOLERANCE_PP} pp or missing)")
    return 0 if fails == 0 and mine else 1


def main(argv):
    if argv[1] == "ncu-metrics":
        print(",".join(NCU.values()))
        return 0
    if argv[1] == "run":
        return run(argv[2], argv[3])
    if argv[1] == "train":
        return train(argv[2], int(argv[3]), argv[4])
    if argv[1] == "compare":
        return compare(argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
