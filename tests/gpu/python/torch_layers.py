"""context="python" with PyTorch on the GPU (issue 28): GPT training steps
of bench/workloads.py, eager and torch.compile'd.

usage: torch_layers.py eager|train
Checks: no kernel at ROOT; kernels under "<backward>" == kernels the
shadow run puts under its "backward" scope; kernel counts equal to
context="shadow", also with "python,aten"; eager with "python,aten": >= 99%
of kernel time under an "aten::" frame (compiled: reported); no nn.Module
plumbing frame (module.py) and no torch.nn.functional frame doubled; eager:
every backward GEMM and layer-norm kernel under the forward path of the
operation that made its node (a forward kernel's path: nn.Linear's or
F.layer_norm's line; the fc2 line's weight-grad GEMMs under it); the
compiled step: no recompile in a python session (Dynamo's unique_graphs
count unchanged). Prints PASS/FAIL/RESULT lines."""
import contextlib
import re
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench"))
import cproton as proton  # noqa: E402
import workloads  # noqa: E402

STEPS = 3


def kernels(node, path=()):
    """(path of frame names, count, time ns, kernel name) of every kernel
    node."""
    out = []
    for c in node["children"]:
        name, m = c["frame"]["name"], c["metrics"]
        if m.get("count", 0) and not c["children"]:
            out.append((path, m["count"], m.get("time (ns)", 0), name))
        out += kernels(c, path + (name,))
    return out


def run(step, sync, ctx, name):
    sync()
    proton.start(name, context=ctx)
    for _ in range(STEPS):
        step()
    sync()
    proton.finalize()
    if ctx.startswith("python"):  # the link's counts (issue 28): lost links show here
        from cproton import _cproton
        print(f"RESULT {name} link {_cproton.link_stats()}")
    with open(name + ".hatchet") as f:
        return kernels(json.load(f)[0])


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "eager"
    scope = {"s": contextlib.nullcontext}

    def chosen(n):
        return scope["s"](n) if scope["s"] is proton.scope else contextlib.nullcontext()
    step, sync = workloads.WORKLOADS[kind](chosen)
    for _ in range(3):  # warm-up: compile, autotune, allocator
        step()
    from torch._dynamo.utils import counters
    graphs = {}
    for ctx in ("python", "python,aten"):  # no mode with "python": no recompile
        before = counters["stats"].get("unique_graphs", 0)
        proton.start(f"{kind}_warmup", context=ctx)
        step()
        sync()
        proton.finalize()
        graphs[ctx] = counters["stats"].get("unique_graphs", 0) - before
    scope["s"] = proton.scope
    shadow = run(step, sync, "shadow", f"{kind}_shadow")
    scope["s"] = contextlib.nullcontext
    python = run(step, sync, "python", f"{kind}_python")
    n_shadow, n_python = sum(c for _, c, _, _ in shadow), sum(c for _, c, _, _ in python)
    backward = sum(c for p, c, _, _ in shadow if "backward" in p)
    at_root = sum(c for p, c, _, _ in python if not p)
    linked = sum(c for p, c, _, _ in python if "<backward>" in p)
    # the seed gradient (ones_like, one per backward()) is launched by
    # backward() itself before autograd's engine runs: at the backward() line
    bw_line = f"workloads.py:{line_of('loss.backward()')}@_train_step"
    seeds = sum(c for p, c, _, _ in python if "<backward>" not in p and p and p[-1].endswith(bw_line))
    print(f"RESULT {kind} kernels shadow={n_shadow} python={n_python} backward={backward} "
          f"under <backward>={linked} seed gradients at backward()={seeds} at ROOT={at_root}")
    frames = {f for p, _, _, _ in python for f in p}
    # issue 28, profile size: nn.Module's call plumbing is not in the paths,
    # nor the routing frame of a torch function under the link's mode
    # (F.layer_norm at its handle_torch_function line above its body line)
    doubled = sum(1 for p, _, _, _ in python for a, b in zip(p, p[1:])
                  if a.rsplit("@", 1)[-1] == b.rsplit("@", 1)[-1]
                  and a.rsplit(":", 1)[0] == b.rsplit(":", 1)[0] and "functional.py" in a)
    checks = [(at_root == 0, "no kernel at ROOT"),
              (n_python == n_shadow, "kernel count unchanged against shadow"),
              (linked + seeds == backward and backward > 0 and seeds <= STEPS,
               "every backward kernel under <backward> (but one seed gradient per step)"),
              (not any("nn/modules/module.py" in f for f in frames), "no nn.Module plumbing frames"),
              (doubled == 0, "no torch function's frame doubled by the link's mode")]
    print(f"RESULT {kind} new graphs in a session: {graphs}")
    if kind == "train":
        checks.append((graphs["python"] == 0, "no recompile in a python session"))
        checks += compiled_paths(python)
    else:
        checks += forward_paths(python)
    aten = run(step, sync, "python,aten", f"{kind}_aten")
    total = sum(t for _, _, t, _ in aten)
    under = sum(t for p, _, t, _ in aten if any(f.startswith("aten::") for f in p))
    n_aten = sum(c for _, c, _, _ in aten)
    print(f"RESULT {kind} aten: {under / max(total, 1):.4f} of kernel time under aten:: ({n_aten} kernels)")
    checks += [(n_aten == n_shadow, "python,aten: kernel count unchanged against shadow"),
               (sum(c for p, c, _, _ in aten if not p) == 0, "python,aten: no kernel at ROOT")]
    if kind == "eager":  # Inductor's own Triton kernels run inside no operator
        checks.append((under >= 0.99 * total and total > 0, ">= 99% of kernel time under aten::"))
    for ok, what in checks:
        print(("PASS " if ok else "FAIL ") + f"{kind}: {what}")
    sizes = {c: os.path.getsize(f"{kind}_{c}.hatchet") for c in ("shadow", "python", "aten")}
    print(f"RESULT {kind} profile bytes {sizes}")
    return 0 if all(ok for ok, _ in checks) else 1


GEMM = re.compile(r"^(?!.*(fmha|flash)).*(gemm|nvjet|xmma|cutlass)", re.I)  # not attention's
NORM = re.compile(r"layer_?norm|GammaBeta", re.I)


def line_of(text):
    """The line number of the first line of bench/workloads.py holding text."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "bench", "workloads.py")
    return next(i + 1 for i, line in enumerate(open(src)) if text in line)


def compiled_paths(python):
    """Compiled step: the compiled region's node is made in
    autograd.Function.apply, so its backward kernels sit under the line
    that called the compiled module (GPT.forward's frame), not under
    Inductor's first forward kernel; and no AOTAutograd or Inductor runtime
    plumbing frame is in any path."""
    pre = [p[:p.index("<backward>")] for p, _, _, _ in python if "<backward>" in p]
    ends = {q[-1].rsplit("/", 1)[-1] for q in pre if q}
    plumbing = {f for p, _, _, _ in python for f in p
                if "_functorch/" in f or "_inductor/runtime/" in f or "autograd/function.py" in f}
    print(f"RESULT train forward paths of backward kernels end at {sorted(ends)}")
    return [(pre and all(q and ("workloads.py:" in q[-1] or "functional.py:" in q[-1]) for q in pre),
             "every backward kernel under a line of the program (or torch.nn.functional's)"),
            (not plumbing, "no AOTAutograd/Inductor runtime frames")]


def forward_paths(python):
    """Eager: each backward GEMM / layer-norm kernel sits under the path of
    a forward kernel (the node's first launch), which ends in nn.Linear's
    forward or F.layer_norm; the fc2 line's weight-grad GEMMs under it."""
    forward = {p for p, _, _, _ in python if "<backward>" not in p}
    bw = [(p[:p.index("<backward>")], k) for p, _, _, k in python if "<backward>" in p]
    gemm = [pre for pre, k in bw if GEMM.search(k)]
    norm = [pre for pre, k in bw if NORM.search(k)]
    fc2 = line_of("self.fc2(")
    under_fc2 = [pre for pre in gemm if len(pre) > 1 and pre[-2].endswith(f"workloads.py:{fc2}@forward")
                 and "nn/modules/linear.py" in pre[-1]]
    print(f"RESULT eager backward GEMM kernels {len(gemm)}, layer-norm {len(norm)}, "
          f"under the fc2 line {len(under_fc2)}")
    return [(gemm and all(pre in forward and "nn/modules/linear.py" in pre[-1] for pre in gemm),
             "every backward GEMM under nn.Linear's forward path (a forward kernel's)"),
            (norm and all(pre in forward and pre[-1].endswith("@layer_norm") for pre in norm),
             "every backward layer-norm kernel under F.layer_norm's forward path"),
            (len(under_fc2) > 0, "weight-grad GEMMs under the fc2 line")]


if __name__ == "__main__":
    sys.exit(main())
