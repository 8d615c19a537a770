"""Profile size of the "python" context on a GPT training step (issue 28),
without a GPU: bench/workloads.py's GPT (same layers and sizes) on CPU
tensors, its eager forward, backward and AdamW step, with a fake kernel
launched inside each ATen operator (tests/python/torch_fake_kernels.py), as
a GPU operator launches its CUDA kernel. Variants: context="shadow",
"python" without the backward link, "python", "python,aten".

usage: context_profile_cpu.py [STEPS] [OUT_DIR]
Prints per variant: kernels, nodes, bytes, bytes per node, and what the
bytes are (frame names, metrics); RESULT lines."""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ("shadow", "python_nolink", "python", "python,aten")


def child(variant, steps, out):
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "tests", "python")))
    import torch
    import workloads
    from torch_fake_kernels import FakeKernels
    import cproton as proton
    from cproton import _cproton, _torchlink
    torch.set_num_threads(1)
    model = workloads._gpt("cpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, workloads.VOCAB, (workloads.BATCH, workloads.SEQ), generator=g)
    y = torch.roll(x, -1, dims=1)
    if variant == "python_nolink":
        _torchlink.install = lambda *a, **k: None
    fake_dir = os.path.dirname(os.path.abspath(sys.modules["torch_fake_kernels"].__file__))
    proton.context.set_python_skip(proton.context.default_python_skip() + [fake_dir + os.sep])
    with FakeKernels():  # under the session's modes: "aten::" frames hold the launches
        proton.start(os.path.join(out, variant.replace(",", "_")), context=variant.replace("_nolink", ""),
                     backend="fake")
        _cproton._fake_add_device(0)
        for _ in range(steps):
            workloads._train_step(model, opt, x, y, lambda n: proton.scope(n))
        proton.finalize()


def walk(node, depth=0):
    yield node, depth
    for c in node.get("children", ()):
        yield from walk(c, depth + 1)


def analyse(path):
    with open(path) as f:
        text = f.read()
    root = json.loads(text)[0]
    nodes = list(walk(root))
    kernels = [n for n, _ in nodes if n["frame"].get("type") == "function" and not n.get("children")
               and n["metrics"].get("count")]
    name_bytes = sum(len(json.dumps(n["frame"]["name"])) for n, _ in nodes)
    metric_keys = {}
    for n, _ in nodes:
        for k, v in n["metrics"].items():
            metric_keys.setdefault(k, [0, 0])
            metric_keys[k][0] += 1
            metric_keys[k][1] += v == 0
    indent = sum(len(ln) - len(ln.lstrip(" ")) for ln in text.splitlines())
    return {"bytes": len(text), "indent": indent, "nodes": len(nodes), "kernel_nodes": len(kernels),
            "launches": sum(n["metrics"].get("count", 0) for n in kernels),
            "name_bytes": name_bytes, "max_depth": max(d for _, d in nodes),
            "metrics": metric_keys}


def main():
    steps = sys.argv[1] if len(sys.argv) > 1 else "2"
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="ctxprof")
    os.makedirs(out, exist_ok=True)
    import subprocess
    base = None
    for v in VARIANTS:
        p = subprocess.run([sys.executable, __file__, "--child", v, steps, out], capture_output=True, text=True)
        if p.returncode:
            print(f"FAIL {v}: {p.stderr[-500:]}")
            continue
        a = analyse(os.path.join(out, v.replace(",", "_") + ".hatchet"))
        base = base or a["bytes"]
        print(f"RESULT {v}: {a['launches']} launches, {a['kernel_nodes']} kernel nodes, {a['nodes']} nodes, "
              f"{a['bytes']} bytes ({a['bytes'] / base:.1f}x shadow, {a['bytes'] / a['nodes']:.0f} B/node), "
              f"indentation {100 * a['indent'] // a['bytes']}%, frame names {a['name_bytes']} B, "
              f"depth {a['max_depth']}")
        print(f"  metrics (entries, zero-valued): {json.dumps(a['metrics'])}")
    print(f"profiles in {out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
