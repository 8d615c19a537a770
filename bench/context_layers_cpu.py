"""Per-operation CPU cost of the "python" context's PyTorch layers (issue
28), without a GPU: a chain of 100 small forward operations (8x8) and its backward, on CPU tensors, with the fake backend. One fresh process
per variant and round, rounds interleaved, medians (of the best of 5
timed loops in each process, in CPU time of the thread: autograd runs CPU
tensors' backward on the calling thread, and on a shared machine wall time
counts other processes' turns).

usage: context_layers_cpu.py [ROUNDS] [lines|loop]
  lines: 25 blocks of four lines, one operation each (a run per operation,
         the worst case for the link); loop: one line in a loop (one run)
Prints RESULT lines: microseconds per forward operation (its backward
included) for none, shadow, python, python,aten, torch.profiler(with_stack)."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
from fresh_worker import interleaved, median_of  # noqa: E402

VARIANTS = ("none", "shadow", "python", "python,aten", "torch_profiler")


def child(variant, shape):
    import torch
    torch.set_num_threads(1)
    x = torch.randn(8, 8, requires_grad=True)
    w = torch.randn(8, 8, requires_grad=True)

    def block(h):  # four lines, one operation each: a run per operation
        a = h @ w
        b = torch.tanh(a)
        c = b * 0.5
        return c + h

    def step():
        h = x
        if shape == "loop":  # one line: one run for the whole chain
            for _ in range(50):
                h = torch.tanh(h @ w)
        else:
            for _ in range(25):
                h = block(h)
        h.sum().backward()

    stop = lambda: None  # noqa: E731
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
    best = float("inf")
    for _ in range(5):
        t = time.thread_time()  # CPU time: the machine may be shared
        for _ in range(20):
            step()
        best = min(best, (time.thread_time() - t) / 20 / 100)
    stop()
    print("JSON " + json.dumps({"us_per_op": best * 1e6}))  # 100 forward operations a step


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    shape = sys.argv[2] if len(sys.argv) > 2 else "lines"
    med = median_of(interleaved(__file__, VARIANTS, [shape], rounds), "us_per_op")
    base = med["none"]
    for v, m in med.items():
        print(f"RESULT cpu {shape} {v}: {m:.2f} us per forward op (+{m - base:.2f})")


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
