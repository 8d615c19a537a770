"""PyTorch's autograd thread launches the backward kernels of
`loss.backward()`; that thread enters no scope of its own, so its kernels
belong under the main thread's scope of the moment. Two iterations with
different backward scopes: cproton follows the main thread's live stack
(both iterations right); Proton copies the main stack once, at the autograd
thread's first use, so iteration 2's backward kernels land under iteration
1's scope.

usage: autograd_thread.py [cproton|triton.profiler]   (default cproton)
Prints PASS/FAIL lines; with triton.profiler it only reports (RESULT lines)."""
import importlib
import json
import sys

import torch


def count(node):
    return node["metrics"].get("count", 0) + sum(count(c) for c in node["children"])


def main():
    module = sys.argv[1] if len(sys.argv) > 1 else "cproton"
    proton = importlib.import_module(module)
    x = torch.randn(256, 256, device="cuda", requires_grad=True)
    w = torch.randn(256, 256, device="cuda", requires_grad=True)
    torch.cuda.synchronize()
    name = f"autograd_{module.replace('.', '_')}"
    proton.start(name)
    for it in (1, 2):
        with proton.scope(f"forward_{it}"):
            loss = torch.relu(x @ w).sum()
        with proton.scope(f"backward_{it}"):
            loss.backward()
        torch.cuda.synchronize()
        x.grad = w.grad = None  # both iterations launch the same kernels
    proton.finalize()
    with open(name + ".hatchet") as f:
        root = json.load(f)[0]
    top = {c["frame"]["name"]: count(c) for c in root["children"]}
    print(f"RESULT {module} kernels per top-level frame: {top}")
    ok1 = top.get("backward_1", 0) > 0
    ok2 = top.get("backward_2", 0) > 0 and top.get("backward_2") == top.get("backward_1")
    stray = {k: v for k, v in top.items() if not k.startswith(("forward_", "backward_"))}
    if module != "cproton":
        print(f"RESULT {module} backward_2 holds its kernels: {ok2}; kernels outside the scopes: {stray}")
        return 0
    print(("PASS" if ok1 else "FAIL") + " backward_1 holds the autograd thread's kernels")
    print(("PASS" if ok2 else "FAIL") + " backward_2 holds as many (the live stack, not a stale copy)")
    print(("PASS" if not stray else "FAIL") + f" no kernel outside the scopes {stray}")
    return 0 if ok1 and ok2 and not stray else 1


if __name__ == "__main__":
    sys.exit(main())
