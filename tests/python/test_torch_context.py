"""context="python" with PyTorch (issue 28): backward kernels under the
Python path of the forward operation they differentiate, below "<backward>"
(else under backward()'s caller, never at ROOT), and "aten::" operator
frames with context="python,aten". CPU tensors; the "kernels" are fake
launches made inside each ATen operator (torch_fake_kernels.py)."""
import os

import pytest

torch = pytest.importorskip("torch")

import cproton as proton  # noqa: E402
from cproton import context  # noqa: E402

import torch_fake_kernels  # noqa: E402
from conftest import load_tree  # noqa: E402

HERE = os.path.abspath(__file__)


@pytest.fixture(autouse=True)
def _fake_frames_skipped():
    context.set_python_skip(context.default_python_skip() + [os.path.abspath(torch_fake_kernels.__file__)])
    yield
    context.set_python_skip(context.default_python_skip())


def kernels(tree, path=(), full=()):
    """(path of function names, kernel, count, full path) for every fake
    kernel; "file:line@function" frames shortened to the function."""
    out = []
    for name, child in tree.items():
        if name == "@":
            continue
        if name.startswith("k_"):
            out.append((path, name, child["@"]["count"], full))
        out += kernels(child, path + (name.rsplit("@", 1)[-1],), full + (name,))
    return out


def model(x, w):
    h = torch.mm(x, w)  # forward op "mm"
    return torch.relu(h).sum()


def step(x, w):
    loss = model(x, w)
    loss.backward()


def profile(ctx, body):
    with torch_fake_kernels.FakeKernels():  # outer to cproton's modes, as a GPU operator's launch is
        sid = proton.start("t", context=ctx, backend="fake")
        body()
        proton.finalize(sid)
    return kernels(load_tree("t.hatchet"))


def leaves():
    return torch.randn(4, 4, requires_grad=True), torch.randn(4, 4, requires_grad=True)


def test_backward_kernels_under_forward_frames():
    x, w = leaves()
    got = profile("python", lambda: step(x, w))
    assert all(p for p, _, _, _ in got), "a kernel at ROOT"
    mm = [(p, c, f) for p, k, c, f in got if k == "k_mm"]
    # the forward mm, then MmBackward0's two matmuls under the forward line
    assert [c for p, c, _ in mm if p[-1] == "model"] == [1]
    assert [c for p, c, _ in mm if p[-2:] == ("model", "<backward>")] == [2]
    fwd_line = next(f for p, _, f in mm if p[-1] == "model")
    assert fwd_line[-1].startswith(HERE + ":") and "torch.mm(x, w)" in open(HERE).read().splitlines()[
        int(fwd_line[-1].rsplit(":", 1)[-1].split("@")[0]) - 1]
    assert next(f for p, _, f in mm if p[-1] == "<backward>")[:-1] == fwd_line
    relu_bw = [f for p, k, _, f in got if k == "k_threshold_backward"]
    assert len(relu_bw) == 1 and relu_bw[0][-1] == "<backward>"
    assert relu_bw[0][:-2] == fwd_line[:-1] and relu_bw[0][-2] != fwd_line[-1]  # the relu line


def test_unlinked_nodes_under_backward_caller():
    x, w = leaves()
    loss = model(x, w)  # built before the session: no link
    got = profile("python", loss.backward)
    assert got and all(p for p, _, _, _ in got), "a kernel at ROOT"
    for p, k, _, _ in got:
        if k == "k_ones_like":  # the seed gradient: made by backward() before the engine runs
            assert p[-1] == "profile", (p, k)
        else:
            assert p[-2:] == ("profile", "<backward>"), (p, k)
    assert {k for _, k, _, _ in got} >= {"k_mm", "k_threshold_backward"}, got


def test_python_backward_frames_kept_below_the_link():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g  # Python code run by the engine

    x, _ = leaves()

    def body():
        y = Square.apply(x).sum()
        y.backward()

    got = profile("python", body)
    in_backward = [p for p, k, _, _ in got if "backward" in p[-1] or (len(p) > 1 and p[-2] == "backward")]
    assert any(p[-1] == "backward" and "<backward>" in p for p in in_backward), got


def test_function_backward_under_the_apply_line():
    """A custom Function's node is made in apply, before forward() runs:
    its backward kernels go under the line that called apply, not under
    forward()'s first kernel (for torch.compile's compiled regions that
    would be Inductor's first kernel call)."""
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            b = a * a  # forward's first kernel
            return b * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a * a * g

    x, _ = leaves()

    def body():
        y = Cube.apply(x)  # the apply line
        y.sum().backward()

    got = profile("python", body)
    lines = open(HERE).read().splitlines()

    def line_of(frame):
        return lines[int(frame.rsplit(":", 1)[-1].split("@")[0]) - 1]

    fwd = [f for p, k, _, f in got if k == "k_mul" and "<backward>" not in f and p[-1] == "forward"]
    assert fwd and "forward's first kernel" in line_of(fwd[0][-1]), got
    bw = [f for _, _, _, f in got if "<backward>" in f and f[f.index("<backward>") + 1:][:1]
          and f[f.index("<backward>") + 1].endswith("@backward")]
    assert bw, got
    for f in bw:  # Cube.backward's kernels: under the apply line, then <backward>
        pre = f[:f.index("<backward>")]
        assert "the apply line" in line_of(pre[-1]), (pre, f)


def test_aten_frames_between_python_and_kernels():
    x, w = leaves()
    got = profile("python,aten", lambda: step(x, w))
    assert got and all(p and p[-1] == "aten::" + k[2:] for p, k, _, _ in got), got
    assert any(p[-3:] == ("model", "<backward>", "aten::mm") for p, k, _, _ in got)


class Norm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(4)

    def forward(self, x):
        return self.ln(x)  # the Norm line


def test_torch_plumbing_frames_dropped():
    """Issue 28, profile size: nn.Module's call plumbing (module.py) and the
    frame that routes a torch function through the link's mode (the caller
    of handle_torch_function: F.layer_norm appeared twice, at its routing
    line and at its body) are not in the paths; the link's frames follow."""
    x, _ = leaves()
    net = Norm()
    got = profile("python", lambda: net(x).sum().backward())
    frames = [f for _, _, _, full in got for f in full]
    assert not any("nn/modules/module.py" in f for f in frames), frames
    fwd = [full for _, k, _, full in got if k == "k_native_layer_norm"]
    bwd = [full for _, k, _, full in got if k == "k_native_layer_norm_backward"]
    assert len(fwd) == 1 and len(bwd) == 1, got
    names = [f.rsplit("@", 1)[-1] for f in fwd[0]]
    assert names[-3:] == ["forward", "forward", "layer_norm"], fwd  # Norm, LayerNorm, F.layer_norm
    assert names.count("layer_norm") == 1, fwd
    line = int(fwd[0][-3].rsplit(":", 1)[-1].split("@")[0])
    assert "the Norm line" in open(HERE).read().splitlines()[line - 1]
    # backward: under the forward kernel's path (F.layer_norm's line)
    assert bwd[0][-1] == "<backward>" and bwd[0][:-1] == fwd[0], (fwd, bwd)


def test_nothing_left_after_finalize():
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    before = (len(_get_current_function_mode_stack()), len(_get_current_dispatch_mode_stack()))
    x, w = leaves()
    profile("python,aten", lambda: step(x, w))
    after = (len(_get_current_function_mode_stack()), len(_get_current_dispatch_mode_stack()))
    assert after == before
    # a later "python" session has no operator frames, a "shadow" one no links
    got = profile("python", lambda: step(x, w))
    assert not any(f.startswith("aten::") for p, _, _, _ in got for f in p)
    got = profile("shadow", lambda: step(x, w))
    assert all(p == () for p, _, _, _ in got)  # shadow: no scopes, all at ROOT as before


def test_other_context_values_unchanged():
    for bad in ("python,foo", "shadow,aten", "aten"):
        with pytest.raises(RuntimeError, match=f"unknown context '{bad}'"):
            proton.start("t", context=bad, backend="fake")


def test_compile_unchanged_and_compiled_backward_linked():
    """torch.compile traces and compiles the same graphs in a session (the
    link has no mode; the operator frames' mode steps aside), and a compiled
    region's backward kernels land under its forward path (the training
    step's frame above), below <backward>."""
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(len(gm.graph.nodes))
        return gm.forward

    x, w = leaves()
    for ctx in (None, "python", "python,aten"):
        torch._dynamo.reset()
        f = torch.compile(model, backend=counting)
        if ctx is None:
            f(x, w).backward()
        else:
            profile(ctx, lambda: f(x, w).backward())
    assert len(graphs) == 3 and len(set(graphs)) == 1, graphs
    torch._dynamo.reset()
    f = torch.compile(model, backend="aot_eager")
    f(x, w)  # compiles outside the session
    got = profile("python", lambda: step_with(f, x, w))
    bw = [p for p, k, _, _ in got if "<backward>" in p]
    assert bw and all(p for p, _, _, _ in got), got
    # under the compiled forward's path (the training step's frame above it)
    assert all("step_with" in p[:p.index("<backward>")] for p in bw), bw


def step_with(f, x, w):
    f(x, w).backward()


SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
import torch  # after the command started the session
import torch_fake_kernels
from cproton import context
context.set_python_skip(context.default_python_skip() + [torch_fake_kernels.__file__])
x = torch.randn(4, 4, requires_grad=True)
with torch_fake_kernels.FakeKernels():
    def model():
        return torch.mm(x, x).sum()
    loss = model()
    loss.backward()
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
print("modes:", [type(m).__name__ for m in _get_current_dispatch_mode_stack()])
"""


def test_command_session_started_before_torch_import(tmp_path):
    """Under the command the session starts before the script imports
    torch: the layers come on with the import; -c accepts "python,aten"."""
    from conftest import run_python
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(tests=os.path.dirname(HERE)))
    p = run_python(["-m", "cproton", "-n", "cmd", "-c", "python,aten", "-b", "fake", str(script)], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    got = kernels(load_tree(str(tmp_path / "cmd.hatchet")))
    assert got and all(p for p, _, _, _ in got), got
    # the fake kernels' mode is inside cproton's here, so its launches come
    # after the operator frame closed: check the link and that the mode is on
    assert any(k == "k_mm" and p[-2:] == ("model", "<backward>") for p, k, _, _ in got), got
    assert "modes: ['OperatorFrames']" in p.stdout
    bad = run_python(["-m", "cproton", "-c", "python,foo", str(script)], cwd=tmp_path)
    assert bad.returncode != 0 and "invalid choice: 'python,foo' (choose from 'shadow', 'python')" in bad.stderr


def spread(x, w):
    a = torch.sin(x)  # line S: a kernel
    e = w.expand(2, 4, 4)  # a view: a node (ExpandBackward0), no kernel
    t = torch.tanh(a)  # line T: the next kernel
    return (e * t).sum()


def outer(x, w):
    return spread(x, w).backward()


def test_node_without_a_kernel_under_the_common_prefix():
    """A node made by an operation that launched nothing (a view) takes the
    common prefix of the launches before and after it (here spread's
    caller, as both are in spread), not the next line's operation."""
    x, w = leaves()
    got = profile("python", lambda: outer(x, w))
    # k_sum in backward: ExpandBackward0's sum_to_size, and MulBackward0's
    # for the broadcast t (under the return line, where the mul launched)
    sums = sorted(p[-2] for p, k, _, _ in got if k == "k_sum" and "<backward>" in p)
    assert sums == ["outer", "spread"], got
    tanh_bw = [f for p, k, _, f in got if k == "k_tanh_backward"]
    sin_fw = [f for p, k, _, f in got if k == "k_sin"]
    tanh_fw = [f for p, k, _, f in got if k == "k_tanh"]
    assert len(tanh_bw) == 1 and tanh_bw[0][:-1] == tanh_fw[0] and tanh_fw[0] != sin_fw[0], got


def grad_free(x, w):
    a = torch.tanh(x)  # line A
    with torch.no_grad():
        w.mul(2)  # line N: a kernel, no node
    return torch.sigmoid(a).sum()  # line C


def test_grad_free_operation_takes_no_node():
    x, w = leaves()
    got = profile("python", lambda: grad_free(x, w).backward())
    fwd = {k: f for p, k, _, f in got if "<backward>" not in p}
    bwd = {k: f for p, k, _, f in got if "<backward>" in p}
    assert bwd["k_tanh_backward"][:-1] == fwd["k_tanh"], got
    assert bwd["k_sigmoid_backward"][:-1] == fwd["k_sigmoid"], got
    assert fwd["k_mul"] not in (bwd["k_tanh_backward"][:-1], bwd["k_sigmoid_backward"][:-1])


def test_no_recompile_in_a_session():
    """No mode: Dynamo's guards see the same state in a python session, so
    a function compiled before it runs its cache entry (no recompile, the
    same frame count)."""
    from torch._dynamo.utils import counters
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(len(gm.graph.nodes))
        return gm.forward

    torch._dynamo.reset()
    f = torch.compile(model, backend=counting)
    x, w = leaves()
    f(x, w).backward()
    frames = dict(counters["stats"])
    for _ in range(2):
        profile("python", lambda: f(x, w).backward())
    f(x, w).backward()
    assert len(graphs) == 1, graphs
    assert dict(counters["stats"]).get("unique_graphs") == frames.get("unique_graphs"), counters["stats"]


def test_compiled_optimizer_step_graph_unchanged():
    """A compiled optimizer step traces the same graph in a session."""
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(str(gm.graph))
        return gm.forward

    for ctx in (None, "python"):
        torch._dynamo.reset()
        p = torch.nn.Parameter(torch.ones(4, 4))
        p.grad = torch.full((4, 4), 0.5)
        opt = torch.optim.Adam([p], lr=0.1)
        step = torch.compile(opt.step, backend=counting)
        if ctx is None:
            step()
        else:
            profile(ctx, step)
    assert len(graphs) == 2 and graphs[0] == graphs[1], graphs


def test_no_mode_in_a_python_session():
    """context="python" pushes no PyTorch mode (the link works at launches);
    "python,aten" pushes the operator frames' dispatch mode only."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    seen = []

    def stacks():
        seen.append((len(_get_current_function_mode_stack()), len(_get_current_dispatch_mode_stack())))

    stacks()
    profile("python", stacks)
    profile("python,aten", stacks)
    base = seen[0]
    assert seen[1] == (base[0], base[1] + 1)  # + FakeKernels, profile()'s
    assert seen[2] == (base[0], base[1] + 2)  # + the operator frames


def test_finalize_from_another_thread_leaves_inert_modes():
    """The operator frames' mode lives on the starting thread's stack; a
    finalize from another thread cannot pop it, so it passes calls through
    untouched, and the link is off."""
    import threading
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    depth = len(_get_current_dispatch_mode_stack())
    x, w = leaves()
    sid = proton.start("t", context="python,aten", backend="fake")
    t = threading.Thread(target=proton.finalize, args=(sid,))
    t.start()
    t.join()
    assert len(_get_current_dispatch_mode_stack()) == depth + 1
    step(x, w)  # passes through: no error, no session
    assert x.grad is not None
    _get_current_dispatch_mode_stack()[-1].__exit__(None, None, None)  # the caller may pop it
    got = profile("python", lambda: step(x, w))  # a later session works
    assert any("<backward>" in p for p, _, _, _ in got)


def test_link_counts():
    """Issue 28: the link records a node at its first launch (one record per
    operation that made a node, none for launches without one) and looks
    the node up at each backward launch (_cproton.link_stats)."""
    from cproton import _cproton
    x, w = leaves()
    seen = {}

    def body():
        h = x
        for _ in range(10):
            h = torch.tanh(h @ w)  # two nodes, two launches
        with torch.no_grad():
            for _ in range(5):
                h.shape, w.mul(2)  # a launch without a node: no record
        loss = h.sum()
        seen["before"] = _cproton.link_stats()
        loss.backward()
        seen["after"] = _cproton.link_stats()

    got = profile("python", body)
    zero = dict.fromkeys(("records", "exact", "prefix", "lookups", "linked", "fallback", "evicted",
                          "fallback_not_found", "paths_full"), 0)
    assert seen["before"] == {**zero, "records": 21, "exact": 21}, seen
    after = seen["after"]
    n_bw = sum(c for p, _, c, _ in got if "<backward>" in p)
    assert after["lookups"] == n_bw and after["linked"] + after["fallback"] == n_bw, (after, n_bw)
    # every node of the graph has a record; only AccumulateGrad's (no
    # sequence number) would not, and it launches nothing here
    assert after["linked"] == n_bw and after["evicted"] == 0, after


def test_evicted_records_counted_and_fall_back():
    """A node whose record the ring overwrote before its backward ran is
    counted and its kernels take the fallback (backward()'s caller)."""
    from cproton import _cproton
    x, w = leaves()
    seen = {}

    def body():
        h = x
        for _ in range(20):
            h = torch.tanh(h)
        h.sum().backward()
        seen.update(_cproton.link_stats())

    _cproton._link_ring_size(8)
    try:
        got = profile("python", body)
    finally:
        _cproton._link_ring_size(0)
    assert seen["evicted"] > 0 and seen["linked"] > 0, seen
    bw = {f[-2] for p, k, _, f in got if k == "k_tanh_backward"}
    caller = next(f[-1] for p, k, _, f in got if k == "k_ones_like")  # the backward() line
    fwd = next(f[-1] for p, k, _, f in got if k == "k_tanh")  # the tanh line
    assert bw == {caller, fwd}, (bw, caller, fwd)  # evicted: the fallback; the newest: linked


def test_missing_libtorch_symbols_turn_the_link_off(monkeypatch):
    """A torch build without the two functions: one warning, no link (the
    kernels land as the python context puts them without torch)."""
    from cproton import _cproton, _log, _torchlink
    monkeypatch.setattr(_torchlink, "_libtorch_cpu", lambda torch: "libc.so.6")
    x, w = leaves()
    before = _cproton.link_stats()
    with pytest.warns(_log.CprotonWarning, match="backward link is off .*not found in libc.so.6"):
        got = profile("python", lambda: step(x, w))
    assert got and not any("<backward>" in p for p, _, _, _ in got), got
    assert _cproton.link_stats() == before  # nothing recorded


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(4)
        self.fc1, self.fc2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x))))  # the MLP line


def test_module_backward_under_its_forward_kernels():
    """A GPT block's MLP (as bench/workloads.py's, 3-d input): each backward
    GEMM (AddmmBackward0's mm) and the layer norm's backward sit under the
    path of a forward kernel: nn.Linear's forward under the MLP line, and
    F.layer_norm; the views around the GEMMs (aten::linear on 3-d input)
    launch nothing and do not take a kernel's place."""
    net = Mlp()
    x = torch.randn(2, 3, 4, requires_grad=True)
    got = profile("python", lambda: net(x).sum().backward())
    forward = {f for p, _, _, f in got if "<backward>" not in p}
    bw = {k: [(f[:f.index("<backward>")], c) for p, kk, c, f in got if kk == k and "<backward>" in p]
          for k in ("k_mm", "k_native_layer_norm_backward")}
    line = next(i + 1 for i, s in enumerate(open(HERE)) if "# the MLP line" in s and "return" in s)
    # two linears, two GEMMs each (input and weight gradients), one path:
    # fc1 and fc2 are called from one line
    assert sum(c for _, c in bw["k_mm"]) == 4 and len(bw["k_native_layer_norm_backward"]) == 1, got
    bw = {k: [pre for pre, _ in v] for k, v in bw.items()}
    for pre in bw["k_mm"]:
        assert pre in forward and pre[-1].rsplit("@", 1)[-1] == "forward" and "linear.py" in pre[-1], pre
        assert pre[-2].startswith(f"{HERE}:{line}@"), pre
    (ln,) = bw["k_native_layer_norm_backward"]
    assert ln in forward and ln[-1].endswith("@layer_norm"), ln


def test_backward_caller_found_from_another_thread():
    """On autograd's device threads (CUDA) the fallback is the frames of the
    thread inside backward(), found with the GIL: here a thread waits inside
    a custom Function's backward while this one looks (as a device thread's
    first unlinked launch does)."""
    import threading
    from cproton import _cproton
    ready, done = threading.Event(), threading.Event()

    class Wait(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            ready.set()
            done.wait(10)
            return g

    x, _ = leaves()

    def caller():
        Wait.apply(x).sum().backward()  # the caller line

    sid = proton.start("t", context="python", backend="fake")
    try:
        assert _cproton._frames_before_entry() is None  # no thread inside backward()
        t = threading.Thread(target=caller)
        t.start()
        assert ready.wait(10)
        found = _cproton._frames_before_entry()
        done.set()
        t.join()
    finally:
        done.set()
        proton.finalize(sid)
    line = next(i + 1 for i, s in enumerate(open(HERE)) if "# the caller line" in s and "backward()" in s)
    assert found and found[-1] == _cproton.frame_id(f"{HERE}:{line}@caller"), found
