"""Cost of the "python" context's PyTorch layers (issue 28) on a GPT
training step of bench/workloads.py: unprofiled, cproton context="python",
"python,aten", torch.profiler(with_stack=True) and Proton 3.6 (triton.profiler,
context="python"). One fresh process per variant and round, rounds
interleaved, medians of the per-step times.

usage: context_layers.py [eager|train] [ROUNDS] [OUT_DIR] [VARIANT,...]
Prints RESULT lines and PASS/FAIL for the targets: cproton python ≤ 1.15×
unprofiled and ≤ 1/3 of torch.profiler's added time; profile size ≤ 2× a
shadow profile of the same steps."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
from fresh_worker import interleaved, median_of  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ("none", "python", "python_aten", "torch_profiler", "proton36", "shadow",
            "python_nolink", "shadow_callbacks")
# python_nolink: context="python" without the PyTorch layers (backward at
# ROOT, as Proton), to split the cost between the Python context and the
# link; shadow_callbacks: "shadow" with a CUPTI callback per launch
# (CPROTON_CUPTI_LAZY=0), the floor that "python" pays: it reads a call path
# per launch, so lazy callbacks (docs/cupti.md) stay on.
# Timed steps per process: the eager step is ~7 ms, so 60 steps (~0.4 s)
# keep a process's figure from hanging on a few slow steps (20 steps gave
# spreads of ~1 ms/step between rounds).
STEPS = int(os.environ.get("CONTEXT_LAYERS_STEPS", "60"))


def child(variant, kind, out):
    sys.path.insert(0, HERE)
    import contextlib
    import workloads
    workloads.configure_caches(os.path.join(out, "cache"))
    step, sync = workloads.WORKLOADS[kind](lambda n: contextlib.nullcontext())
    for _ in range(3):
        step()
    sync()
    stop, path = (lambda: None), None
    if variant in ("python", "python_aten", "shadow", "python_nolink", "shadow_callbacks"):
        if variant == "shadow_callbacks":
            os.environ["CPROTON_CUPTI_LAZY"] = "0"
        import cproton as proton
        if variant == "python_nolink":
            from cproton import _torchlink
            _torchlink.install = lambda *a, **k: None
        path = os.path.join(out, f"{variant}")
        proton.start(path, context={"python_aten": "python,aten", "python_nolink": "python",
                                    "shadow_callbacks": "shadow"}.get(variant, variant))
        stop = proton.finalize
    elif variant == "proton36":
        import triton.profiler as proton
        path = os.path.join(out, "proton36")
        proton.start(path, context="python")
        stop = proton.finalize
    elif variant == "torch_profiler":
        import torch
        prof = torch.profiler.profile(with_stack=True)
        prof.__enter__()
        stop = lambda: prof.__exit__(None, None, None)  # noqa: E731
    for _ in range(3):  # under the profiler first (torch.profiler's own warm-up)
        step()
    sync()
    t = time.perf_counter()
    for _ in range(STEPS):
        step()
    sync()
    dt = (time.perf_counter() - t) / STEPS
    link = _link_stats(variant, 3 + STEPS)
    stop()
    size = os.path.getsize(path + ".hatchet") if path and os.path.exists(path + ".hatchet") else None
    print("JSON " + json.dumps({"variant": variant, "step_s": dt, "bytes": size, "link": link}))


def _link_stats(variant, steps):
    """The backward link's counts per step (_cproton.link_stats: forward
    records, nodes linked exactly and at a common prefix, backward lookups,
    linked, fallback, evicted, fallback not found, paths not stored), or
    None."""
    if variant not in ("python", "python_aten"):
        return None
    from cproton import _cproton
    return {k: round(v / steps, 1) for k, v in _cproton.link_stats().items()}


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "eager"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    out = os.path.abspath(sys.argv[3] if len(sys.argv) > 3 else "out/context_layers")
    variants = sys.argv[4].split(",") if len(sys.argv) > 4 else VARIANTS
    if "none" not in variants:
        variants = ["none"] + list(variants)
    os.makedirs(out, exist_ok=True)
    got = interleaved(__file__, variants, [kind, out], rounds, timeout=600)
    size = {v: rs[-1]["bytes"] for v, rs in got.items() if rs}
    med = median_of(got, "step_s")
    for v, m in med.items():
        print(f"RESULT {kind} {v}: {m * 1e3:.3f} ms/step ({m / med['none']:.3f}x), bytes={size.get(v)}")
    for v, rs in got.items():
        if rs and rs[-1].get("link"):
            print(f"RESULT {kind} {v} link per step: {json.dumps(rs[-1]['link'])}")
    base, tp = med["none"], med.get("torch_profiler")
    ok = True
    for v in ("python", "python_aten"):
        if v not in med:
            continue
        ratio = med[v] / base
        third = tp is not None and (med[v] - base) <= (tp - base) / 3
        print(("PASS" if ratio <= 1.15 else "FAIL") + f" {kind} {v} ≤ 1.15x unprofiled ({ratio:.3f}x)")
        print(("PASS" if third else "FAIL") + f" {kind} {v} ≤ 1/3 of torch.profiler's added time")
        if size.get(v) and size.get("shadow"):
            grow = size[v] / size["shadow"]
            print(("PASS" if grow <= 2 else "FAIL") + f" {kind} {v} profile ≤ 2x shadow ({grow:.2f}x)")
        ok = ok and ratio <= 1.15 and third
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:5])  # VARIANT KIND OUT
    else:
        sys.exit(main())
