"""Proton's test_profile.py::test_pcsampling, repeated in one warm process.
usage: tiny_first.py OUT_DIR MODE [PROFILER [ITERS]]
  MODE: the profiler's mode string; PROFILER: cproton (default) or proton
  (triton.profiler, for comparison); ITERS: repetitions (default 20).
Before the loop a kernel-level session runs PyTorch's fill kernel, so the
context and the fill's module exist before each sampled session (the state
of test_pcsampling when the rest of its file ran first). Each repetition is
the test's program and its assertions: a ~2 us fill kernel under "init"
must carry num_samples on its kernel node (no line information), the
Triton kernel under "test" a line child with samples. Prints a RESULT line
per repetition (samples under init, on kernel nodes outside every scope,
and cproton's account of CUPTI's samples), a summary RESULT line and one
PASS/FAIL line: every repetition must pass."""
import importlib
import json
import logging
import os
import re
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def foo(x, y, size: tl.constexpr):
    offs = tl.arange(0, size)
    for _ in range(1000):
        tl.store(y + offs, tl.load(x + offs))


def samples(node):
    own = node.get("metrics", {}).get("num_samples", 0)
    return own + sum(samples(c) for c in node.get("children", []))


class Lines(logging.Handler):
    """cproton's log lines (its end-of-session PC sampling account)."""
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def one(proton, path):
    """Proton's test body; returns (passed, why, init samples, outside)."""
    proton.start(path, hook="triton", backend="cupti", mode=MODE)
    with proton.scope("init"):
        x = torch.ones((1024,), device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
    with proton.scope("test"):
        foo[(1,)](x, y, x.size()[0], num_warps=4)
    proton.finalize()
    data = json.load(open(path + ".hatchet"))
    kids = data[0]["children"]
    scopes = {c["frame"]["name"]: c for c in kids}
    init = scopes.get("init", {"children": []})
    outside = sum(samples(c) for n, c in scopes.items() if n not in ("init", "test"))
    try:
        init_frame, test_frame = kids[0], kids[1]
        assert "foo" in test_frame["children"][0]["frame"]["name"], "no foo under test"
        assert test_frame["children"][0]["children"][0]["metrics"]["num_samples"] > 0, "foo: no samples"
        assert "@" in test_frame["children"][0]["children"][0]["frame"]["name"], "foo: no line"
        assert "elementwise" in init_frame["children"][0]["frame"]["name"], "no fill under init"
        assert init_frame["children"][0]["metrics"]["num_samples"] > 0, "fill: num_samples 0"
        return True, "", samples(init), outside
    except (AssertionError, KeyError, IndexError) as e:
        return False, f"{type(e).__name__}: {e}", samples(init), outside


def main(out, mode, profiler="cproton", iters="20"):
    global MODE
    MODE = mode
    os.makedirs(out, exist_ok=True)
    proton = importlib.import_module("cproton" if profiler == "cproton" else "triton.profiler")
    log = Lines()
    logging.getLogger("cproton").addHandler(log)
    logging.getLogger("cproton").setLevel(logging.INFO)
    proton.start(os.path.join(out, "before"), hook="triton")
    for _ in range(3):
        torch.ones((1024,), device="cuda")
        torch.zeros((10, 10), device="cuda")
    torch.cuda.synchronize()
    proton.finalize()
    tag = f"tiny_first_{profiler}_{mode.replace(':', '_')}"
    passed = 0
    for i in range(int(iters)):
        del log.lines[:]
        ok, why, init, outside = one(proton, os.path.join(out, f"it{i}"))
        passed += ok
        acct = [m for m in log.lines if "CUPTI counted" in m]
        cupti = re.search(r"CUPTI counted (\d+) samples, (\d+) of them in non-user", acct[-1]) if acct else None
        print(f"RESULT {tag} iteration {i}: {'pass' if ok else 'FAIL ' + why} init={init} "
              f"outside_scopes={outside}" + (f" cupti_samples={cupti[1]} non_user={cupti[2]}" if cupti else ""))
    print(f"RESULT {tag}: passed {passed}/{iters}")
    print(("PASS" if passed == int(iters) else "FAIL") + f" {tag}: test_pcsampling's assertions in {passed}/{iters} warm repetitions")
    return 0 if passed == int(iters) else 1


sys.exit(main(*sys.argv[1:]))
