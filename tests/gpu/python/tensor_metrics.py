"""Tensor metrics on a real GPU (issue 13 item 5): device tensors given as
scope metrics and as launch_metadata values are copied on the stream by
cproton's metric kernel, with no host sync, and folded at finalize; inside a
CUDA graph the copy is captured and every replay adds its value. Vector
metrics (tensors of several elements, more than one block of the copy
kernel, non-contiguous) are summed element by element; plain numbers given
during the capture are added at every replay; under Proton 3.9 each
replay's values land at <launch scope>/<captured_at>/<capture path>.
Prints one PASS/FAIL line per check and exits non-zero on any FAIL."""
import sys
import time

import torch
import triton
import triton.language as tl

import cproton as proton
from common import find, load

failures = 0


def check(name, ok, detail=""):
    global failures
    print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    failures += not ok


def meta(grid, metadata, args):
    return {"flops": args["flops_t"], "bytes": args["n"] * 8}


@triton.jit(launch_metadata=meta)
def scale(x, n, flops_t, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = off < n
    tl.store(x + off, tl.load(x + off, mask=m) * 2.0, mask=m)


def metric(root, scope, name):
    nodes = find(root, scope)
    return sum(n["metrics"].get(name, 0) for n in nodes), nodes


def main():
    dev = torch.device("cuda")
    n = 1 << 16
    x = torch.ones(n, device=dev)
    flops_t = torch.tensor(1000.0, device=dev)
    tokens = torch.zeros((), dtype=torch.int64, device=dev)
    loss = torch.tensor(0.25, device=dev)
    hist = torch.tensor([1.0, 2.0, 3.0], device=dev)
    ids = torch.arange(200, dtype=torch.int64, device=dev)  # two blocks of 128
    mat = torch.arange(12, dtype=torch.float32, device=dev).reshape(4, 3)

    # Warm-up outside the session: Triton compiles the copy kernel per value
    # dtype, and the user kernel; a graph capture must not compile.
    scale[(n // 1024, )](x, n, flops_t, BLOCK=1024)
    sid = proton.start("warm", hook="triton")
    with proton.scope("w", {"a": tokens, "b": loss}):
        pass
    proton.finalize(sid)
    proton.metric.prepare(dtypes=(torch.int64, torch.float32))
    torch.cuda.synchronize()

    sid = proton.start("tensor_metrics", hook="triton")
    # 1. eager scopes: values read on the stream, at the point of the scope.
    for i in range(3):
        tokens.fill_(10 + i)  # a stream op before the scope
        with proton.scope("step", {"tokens": tokens, "loss": loss, "cpu": torch.tensor(2), "hist": hist,
                                   "ids": ids, "column": mat[:, 1]}):
            scale[(n // 1024, )](x, n, flops_t, BLOCK=1024)
        tokens.fill_(1000)  # after the copy, in stream order: not seen
    # 2. no host sync: with the GPU busy for ~0.2 s, recording returns at once.
    torch.cuda._sleep(int(3e8))
    t0 = time.perf_counter()
    with proton.scope("busy", {"tokens": tokens}):
        pass
    host_ms = (time.perf_counter() - t0) * 1e3
    # 3. a CUDA graph: each replay increments a counter then records it.
    counter = torch.zeros((), dtype=torch.int64, device=dev)
    counters = torch.zeros(3, dtype=torch.int64, device=dev)
    steps = torch.tensor([1, 10, 100], dtype=torch.int64, device=dev)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            with proton.scope("graph_step"):
                counter.add_(1)
                counters.add_(steps)
                with proton.scope("counted", {"counter": counter, "counters": counters, "plain": 5,
                                              "half": 0.5}):
                    scale[(n // 1024, )](x, n, flops_t, BLOCK=1024)
    torch.cuda.current_stream().wait_stream(s)
    for _ in range(4):
        g.replay()
    proton.finalize(sid)

    root = load("tensor_metrics.hatchet")[0]
    tok, nodes = metric(root, "step", "tokens")
    check("eager_scope_values", tok == 33 and len(nodes) == 1, f"tokens={tok} (want 10+11+12=33)")
    lo, _ = metric(root, "step", "loss")
    check("eager_scope_double", abs(lo - 0.75) < 1e-12, f"loss={lo} (want 0.75)")
    cpu, _ = metric(root, "step", "cpu")
    check("cpu_tensor_is_a_number", cpu == 6, f"cpu={cpu}")
    busy, _ = metric(root, "busy", "tokens")
    check("busy_value", busy == 1000, f"tokens={busy}")
    check("no_host_sync", host_ms < 50, f"scope with a tensor metric took {host_ms:.2f} ms on the host "
          "while the GPU was busy ~200 ms")
    print(f"RESULT tensor_metric_scope_host_ms {host_ms:.3f}")
    kernels = find(root, "scale")
    flops = sum(k["metrics"].get("flops", 0) for k in kernels)
    eager_ops = [k for k in kernels if k["metrics"].get("flops")]
    check("launch_metadata_tensor", flops >= 3000.0 and all(isinstance(k["metrics"]["flops"], float) for k in eager_ops),
          f"flops on scale nodes={flops}")
    cnt, cnodes = metric(root, "counted", "counter")
    check("graph_replays", cnt == 1 + 2 + 3 + 4, f"counter={cnt} over {len(cnodes)} node(s) (want 1+2+3+4=10)")
    graph_flops = sum(k["metrics"].get("flops", 0) for c in cnodes for k in find(c, "scale"))
    check("graph_launch_metadata_tensor", graph_flops == 4000.0, f"flops under counted={graph_flops} (want 4 x 1000)")
    hs = [n["metrics"].get("hist") for n in nodes]
    check("vector_double", hs == [[3.0, 6.0, 9.0]], f"hist={hs} (want [[3, 6, 9]])")
    idv = [n["metrics"].get("ids") for n in nodes]
    check("vector_int_two_blocks", idv == [[3 * i for i in range(200)]],
          f"ids[:5]={idv[0][:5] if idv and idv[0] else idv}, len={len(idv[0]) if idv and idv[0] else 0}")
    col = [n["metrics"].get("column") for n in nodes]
    check("vector_non_contiguous", col == [[3.0, 12.0, 21.0, 30.0]], f"column={col} (want [[3, 12, 21, 30]])")
    # "counted" is also under <captured_at> (the capture's kernels), without metrics
    vec_replays = [c["metrics"]["counters"] for c in cnodes if "counters" in c["metrics"]]
    check("graph_vector_replays", vec_replays == [[10, 100, 1000]],
          f"counters={vec_replays} (want [[1+2+3+4, x10, x100]])")
    plain = sum(c["metrics"].get("plain", 0) for c in cnodes)
    half = sum(c["metrics"].get("half", 0) for c in cnodes)
    check("graph_plain_numbers_per_replay", plain == 20 and half == 2.0,
          f"plain={plain} half={half} (want 4 x 5 = 20, 4 x 0.5 = 2.0)")
    graph_bytes = sum(k["metrics"].get("bytes", 0) for c in cnodes for k in find(c, "scale"))
    check("graph_launch_metadata_number_per_replay", graph_bytes == 4 * n * 8,
          f"bytes under counted={graph_bytes} (want 4 x {n * 8})")
    copies = find(root, "_cproton_tensor_metric")
    check("copy_kernels_under_metadata_state",
          bool(copies) and all(c["metrics"].get("count", 0) > 0 for c in copies) and not any(
              "_cproton_tensor_metric" == c["frame"]["name"] for k in kernels for c in k["children"]),
          f"{len(copies)} copy kernel node(s)")
    # 4. once the buffer exists, a flush (deactivate, finalize) launches no
    # kernel of its own: a later session holds only what the user ran (the
    # header reset was a fill kernel, an extra ROOT child in Proton 3.9's
    # test_metrics, test_deactivate, test_scope_multiple_threads, ...).
    sid = proton.start("after_buffer")
    with proton.scope("only"):
        x.add_(1.0)
    proton.deactivate(sid)
    proton.finalize(sid)
    after = load("after_buffer.hatchet")[0]
    names = [c["frame"]["name"] for c in after["children"]]
    check("flush_launches_no_kernel", names == ["only"], f"root children {names} (want ['only'])")
    graph_replay_places(dev, x, n, flops_t, tokens)
    return failures


def graph_replay_places(dev, x, n, flops_t, tokens):
    """5. Proton 3.9 (issue 22): a metric given during a capture lands at each
    replay's <launch scope>/<captured_at>/<capture path>, where the replayed
    kernels land; a replay while the session is deactivated adds nothing and
    shifts nothing; the warm-up's eager value stays on the capture node."""
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply((3, 9))
    try:
        tokens.fill_(7)
        sid = proton.start("graph_places", hook="triton")
        with proton.scope("cap", {"v": tokens, "k": 3}):  # eager warm-up
            scale[(n // 1024, )](x, n, flops_t, BLOCK=1024)
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            with torch.cuda.graph(g):
                with proton.scope("cap", {"v": tokens, "k": 3}):
                    scale[(n // 1024, )](x, n, flops_t, BLOCK=1024)
        torch.cuda.current_stream().wait_stream(s)
        with proton.scope("r0"):
            g.replay()
            g.replay()
        proton.deactivate(sid)
        g.replay()  # inactive: its records belong to no session
        torch.cuda.synchronize()
        proton.activate(sid)
        with proton.scope("r1"):
            g.replay()
        proton.finalize(sid)
    finally:
        _compat.apply(before)
    root = load("graph_places.hatchet")[0]

    def at(*path):
        node = root
        for name in path:
            node = next((c for c in node["children"] if c["frame"]["name"] == name), None)
            if node is None:
                return {}
        return node["metrics"]

    got = {
        "r0": (at("r0", "<captured_at>", "cap").get("v"), at("r0", "<captured_at>", "cap").get("k"),
               at("r0", "<captured_at>", "cap", "scale").get("flops")),
        "r1": (at("r1", "<captured_at>", "cap").get("v"), at("r1", "<captured_at>", "cap").get("k"),
               at("r1", "<captured_at>", "cap", "scale").get("flops")),
        "cap": (at("cap").get("v"), at("cap").get("k")),
    }
    want = {"r0": (14, 6, 2000.0), "r1": (7, 3, 1000.0), "cap": (7, 3)}
    check("graph_metrics_at_each_replay_39", got == want, f"got {got} (want {want})")


if __name__ == "__main__":
    sys.exit(1 if main() else 0)
