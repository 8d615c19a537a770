"""The program and assertions of Proton 3.6's test_profile.py::test_pcsampling,
for one fresh process (tests/gpu/pcs_fresh.sh uses it where Proton's own test
file is not handed in).
usage: fresh_pcsampling.py OUT_PREFIX PROFILER MODE
  PROFILER: cproton or proton (triton.profiler); MODE: the mode string.
Nothing touches the GPU before start, as when the test runs alone: the CUDA
context, PyTorch's fill kernel (~2 us, under "init") and the Triton kernel
(under "test") all come after it. Prints RESULT with the samples of both and
exits 1 when an assertion of the test fails."""
import importlib
import json
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def foo(x, y, size: tl.constexpr):
    offs = tl.arange(0, size)
    for _ in range(1000):
        tl.store(y + offs, tl.load(x + offs))


def main(out, profiler, mode):
    proton = importlib.import_module("cproton" if profiler == "cproton" else "triton.profiler")
    proton.start(out, hook="triton", backend="cupti", mode=mode)
    with proton.scope("init"):
        x = torch.ones((1024, ), device="cuda", dtype=torch.float32)
        y = torch.zeros_like(x)
    with proton.scope("test"):
        foo[(1, )](x, y, x.size()[0], num_warps=4)
    proton.finalize()
    data = json.load(open(out + ".hatchet"))
    init_frame, test_frame = data[0]["children"][0], data[0]["children"][1]
    fill = init_frame["children"][0] if init_frame["children"] else {"frame": {"name": "-"}, "metrics": {}}
    line = test_frame["children"][0]["children"][0] if test_frame["children"] else {"metrics": {}}
    print(f"RESULT fresh {profiler} {mode}: fill={fill['metrics'].get('num_samples', 0)} "
          f"foo_line={line['metrics'].get('num_samples', 0)}")
    assert "foo" in test_frame["children"][0]["frame"]["name"]
    assert line["metrics"]["num_samples"] > 0
    assert "@" in line["frame"]["name"]
    assert "elementwise" in fill["frame"]["name"], fill["frame"]["name"]
    assert fill["metrics"]["num_samples"] > 0


if __name__ == "__main__":
    main(*sys.argv[1:])
