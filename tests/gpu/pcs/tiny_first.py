"""Proton's test_profile.py::test_pcsampling, repeated in one warm process.
usage: tiny_first.py OUT_DIR MODE [PROFILER [ITERS]]
  MODE: the profiler's mode string; PROFILER: cproton (default) or proton
  (triton.profiler, for comparison); ITERS: repetitions (default 20).
Before the loop a kernel-level session runs PyTorch's fill kernel, so the
context and the fill's module exist before each sampled session (the state
of test_pcsampling when the rest of its file ran first). Each repetition is
the test's program and its assertions: the fill (~2 us) under "init" must
carry num_samples on its kernel node, the Triton kernel under "test" a line
child with samples.

At Proton's period (2^10 cycles) the fill gets about one PC sample per two
launches, so the fill assertion holds in about half of the repetitions for
Proton and cproton alike (docs/compatibility.md); its count is reported
(RESULT ... hits=H/N) for pcsampling.sh to compare the two profilers.
Asserted in every repetition: the Triton kernel's assertions, no samples
outside the two scopes, and (cproton) every sample cproton read from CUPTI
is in the profile (the tree's num_samples == the count in its end-of-session
log line)."""
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
    """Proton's test body; returns (fill assertion held, why, init samples,
    outside, Triton kernel's assertions held, samples in the tree)."""
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
    total = samples(data[0])
    foo_ok = False
    try:
        init_frame, test_frame = kids[0], kids[1]
        assert "foo" in test_frame["children"][0]["frame"]["name"], "no foo under test"
        assert test_frame["children"][0]["children"][0]["metrics"]["num_samples"] > 0, "foo: no samples"
        assert "@" in test_frame["children"][0]["children"][0]["frame"]["name"], "foo: no line"
        foo_ok = True
        assert "elementwise" in init_frame["children"][0]["frame"]["name"], "no fill under init"
        assert init_frame["children"][0]["metrics"]["num_samples"] > 0, "fill: num_samples 0"
        return True, "", samples(init), outside, foo_ok, total
    except (AssertionError, KeyError, IndexError) as e:
        return False, f"{type(e).__name__}: {e}", samples(init), outside, foo_ok, total


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
    hits = bad = 0
    for i in range(int(iters)):
        del log.lines[:]
        hit, why, init, outside, foo_ok, total = one(proton, os.path.join(out, f"it{i}"))
        hits += hit
        acct = [m for m in log.lines if "CUPTI counted" in m]
        got = re.search(r"pcsampling: (\d+) samples, .*CUPTI counted (\d+) samples, (\d+) of them in non-user",
                        acct[-1]) if acct else None
        problems = [] if foo_ok else ["the Triton kernel's assertions failed"]
        if outside:
            problems.append(f"{outside} samples outside the scopes")
        if profiler == "cproton" and (not got or int(got[1]) != total):
            problems.append(f"profile holds {total} samples, cproton read {got[1] if got else '?'}")
        bad += bool(problems)
        print(f"RESULT {tag} iteration {i}: fill {'has samples' if hit else 'none (' + why + ')'} init={init} "
              f"outside_scopes={outside} tree={total}" +
              (f" read={got[1]} cupti_samples={got[2]} non_user={got[3]}" if got else "") +
              ("" if not problems else " PROBLEM: " + "; ".join(problems)))
    print(f"RESULT {tag}: hits={hits}/{iters} (test_pcsampling's fill assertion held)")
    print(("PASS" if not bad else "FAIL") + f" {tag}: Triton kernel's assertions, no samples outside the"
          f" scopes, every sample read is in the profile: {int(iters) - bad}/{iters} repetitions")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
