"""Per-operation CPU cost of the "python" context's PyTorch layers (issue
28), without a GPU: a chain of 100 small forward operations (8x8) and its backward, on CPU tensors, with the fake backend. One fresh process
per variant and round, rounds interleaved, medians (of the best of 5
timed loops in each process, in CPU time of the thread: autograd runs CPU
tensors' backward on the calling thread, and on a shared machine wall time
counts other processes' turns).

usage: context_layers_cpu.py [ROUNDS] [lines|loop] [kernels]
  lines: 25 blocks of four lines, one operation each; loop: one line in a
         loop; kernels: a fake kernel launched inside each ATen operator,
         forward and backward (as tests/python/torch_fake_kernels.py does;
         in every variant, "none" included, so the difference is cproton's:
         the backward link works at launches, and without them it costs
         nothing)
Prints RESULT lines: microseconds per forward operation (its backward
included) for none, shadow, python, python,aten, torch.profiler(with_stack);
with kernels also the forward pass alone per operation and the backward
pass per backward launch."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
from fresh_worker import interleaved, median_of  # noqa: E402

VARIANTS = ("none", "shadow", "python", "python,aten", "torch_profiler")


LAUNCHES = [0]


def fake_kernels():
    """A dispatch mode that launches one fake kernel inside each operator
    that computes (views launch nothing, as on a GPU), and counts them."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from cproton import _cproton

    class FakeKernels(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if not func.is_view:
                _cproton._fake_launch("k", release_gil=True)
                LAUNCHES[0] += 1
            return out
    return FakeKernels()


def child(variant, shape, kernels=False):
    import torch
    torch.set_num_threads(1)
    x = torch.randn(8, 8, requires_grad=True)
    w = torch.randn(8, 8, requires_grad=True)

    def block(h):  # four lines, one operation each: a run per operation
        a = h @ w
        b = torch.tanh(a)
        c = b * 0.5
        return c + h

    parts = {"forward": 0.0, "backward": 0.0, "bw_launches": 0}

    def step():
        t0 = time.thread_time()
        h = x
        if shape == "loop":  # one line in a loop
            for _ in range(50):
                h = torch.tanh(h @ w)
        else:
            for _ in range(25):
                h = block(h)
        loss = h.sum()
        t1, n = time.thread_time(), LAUNCHES[0]
        loss.backward()
        parts["forward"] += t1 - t0
        parts["backward"] += time.thread_time() - t1
        parts["bw_launches"] += LAUNCHES[0] - n

    stop = lambda: None  # noqa: E731
    if kernels:
        fake_kernels().__enter__()  # outer to cproton's modes, as a GPU operator's launch is
    if variant == "torch_profiler":
        prof = torch.profiler.profile(with_stack=True)
        prof.__enter__()
        stop = lambda: prof.__exit__(None, None, None)  # noqa: E731
    elif variant != "none":
        import cproton as proton
        # the profile is not the measure: a private temporary folder, never
        # the caller's working directory
        proton.start(os.path.join(tempfile.mkdtemp(prefix="cproton-bench-"), "cpu_layers"),
                     context=variant, backend="fake")
        stop = proton.finalize
    for _ in range(5):
        step()
    best = {"us_per_op": float("inf"), "fwd_us_per_op": float("inf"), "bw_us_per_launch": float("inf")}
    for _ in range(5):
        parts.update(forward=0.0, backward=0.0, bw_launches=0)
        t = time.thread_time()  # CPU time: the machine may be shared
        for _ in range(20):
            step()
        best["us_per_op"] = min(best["us_per_op"], (time.thread_time() - t) / 20 / 100 * 1e6)
        best["fwd_us_per_op"] = min(best["fwd_us_per_op"], parts["forward"] / 20 / 100 * 1e6)
        if parts["bw_launches"]:
            best["bw_us_per_launch"] = min(best["bw_us_per_launch"],
                                           parts["backward"] / parts["bw_launches"] * 1e6)
    stop()
    print("JSON " + json.dumps(best))  # 100 forward operations a step


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    shape = sys.argv[2] if len(sys.argv) > 2 else "lines"
    extra = sys.argv[3:4]  # "kernels"
    got = interleaved(__file__, VARIANTS, [shape] + extra, rounds)
    med = median_of(got, "us_per_op")
    base = med["none"]
    label = " ".join([shape] + extra)
    for v, m in med.items():
        print(f"RESULT cpu {label} {v}: {m:.2f} us per forward op (+{m - base:.2f})")
    if extra:  # the two passes apart
        fwd, bw = median_of(got, "fwd_us_per_op"), median_of(got, "bw_us_per_launch")
        for v in fwd:
            print(f"RESULT cpu {label} {v} parts: forward {fwd[v]:.2f} us per op (+{fwd[v] - fwd['none']:.2f}), "
                  f"backward {bw[v]:.2f} us per backward launch (+{bw[v] - bw['none']:.2f})")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4:5] == ["kernels"])
    else:
        main()
