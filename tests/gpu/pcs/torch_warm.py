"""PC sampling of a tiny library kernel whose CUDA context and module exist
before start: the situation of Proton's test_profile.py::test_pcsampling when
the earlier tests of its file ran in the same process.
usage: torch_warm.py OUT_NAME MODE WHEN [PROFILER]
  MODE: the profiler's mode string; WHEN: warm (a kernel-level session and
  the fill kernel ran before start) or cold (nothing ran before start);
  PROFILER: cproton (default) or proton (triton.profiler, for comparison).
Prints RESULT lines (samples under each scope, samples outside every scope)
and PASS/FAIL. Asserted: the 20 tiny launches under "again", the large
launch and the Triton kernel have samples, none fall outside the scopes.
Reported, not asserted: the samples of the first launch after start (a
1024-element fill under "init", Proton's test's assertion). Such a warm
kernel runs ~2 us and got one sample per launch or none on an H100 at
Proton's period (2^10 cycles), about 40% of them in CUPTI's non-user count,
with no PC record (docs/cupti.md), so it has none in a fair share of runs,
with Proton as with cproton."""
import importlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiny_first import foo, samples  # noqa: E402  (Proton's test kernel)


def main(name, mode, when, profiler="cproton"):
    import logging
    if os.environ.get("CPROTON_LOG") == "debug":  # cproton logs through logging
        logging.basicConfig(level=logging.DEBUG)
    proton = importlib.import_module("cproton" if profiler == "cproton" else "triton.profiler")
    if when == "warm":
        proton.start(name + "_before", hook="triton")
        for _ in range(3):
            torch.ones((1024,), device="cuda")
            torch.zeros((10, 10), device="cuda")
        torch.cuda.synchronize()
        proton.finalize()
    proton.start(name, hook="triton", backend="cupti", mode=mode)
    with proton.scope("init"):
        x = torch.ones((1024,), device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
    with proton.scope("again"):
        for _ in range(20):
            torch.ones((1024,), device="cuda")
    with proton.scope("big"):
        torch.ones((1 << 26,), device="cuda")
    with proton.scope("test"):
        foo[(1,)](x, y, x.size()[0], num_warps=4)
    proton.finalize()
    root = json.load(open(name + ".hatchet"))[0]
    scopes = {c["frame"]["name"]: c for c in root["children"]}
    counts = {s: samples(scopes[s]) if s in scopes else -1 for s in ("init", "again", "big", "test")}
    outside = sum(samples(c) for n, c in scopes.items() if n not in counts)
    tag = f"torch_{when}_{profiler}_{mode.replace(':', '_')}"
    print(f"RESULT {tag}: " + " ".join(f"{k}={v}" for k, v in counts.items()) +
          f" outside_scopes={outside} top={sorted(scopes)}")
    init = scopes.get("init", {"children": []})["children"]
    first = init[0] if init else {"frame": {"name": "-"}, "metrics": {}}
    print(f"RESULT {tag}: first launch after start: {first['metrics'].get('num_samples', 0)} "
          f"samples on its kernel node ({first['frame']['name'][:60]})")
    ok = True
    for what, cond in (("the 20 tiny launches have samples", counts["again"] > 0),
                       ("the large launch has samples", counts["big"] > 0),
                       ("the Triton kernel has samples", counts["test"] > 0),
                       ("no samples outside the scopes", outside == 0)):
        print(("PASS" if cond else "FAIL") + f" {tag}: {what}")
        ok &= cond
    return 0 if ok else 1


sys.exit(main(*sys.argv[1:]))
