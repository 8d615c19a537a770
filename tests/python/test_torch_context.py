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
    # backward: under LayerNorm.forward's line (the routing frame is gone)
    assert bwd[0][-1] == "<backward>" and bwd[0][:-1] == fwd[0][:-1], (fwd, bwd)


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
    """torch.compile traces and compiles the same graphs with the modes on
    (they step aside), and a compiled region's backward kernels land under
    backward()'s caller, below <backward>."""
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
    assert all(p[p.index("<backward>") - 1] == "step_with" for p in bw), bw


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


def mixed(x, w, f):
    a = torch.tanh(x)  # line A
    b = f(a, w)  # a compiled region: nodes the mode does not see
    return torch.sigmoid(b).sum()  # line C


def test_nodes_between_linked_calls_take_the_fallback():
    """Consecutive calls with the same frames share one pair of hooks; nodes
    made between two linked calls by code the mode does not see (here a
    compiled region) run under backward()'s caller, not under the next
    line's link (autograd's sequence counter shows the gap)."""
    torch._dynamo.reset()
    f = torch.compile(lambda a, w: torch.mm(a, w) * 2, backend="aot_eager")
    x, w = leaves()
    mixed(x, w, f)  # compiles outside the session

    def body():
        for _ in range(2):  # one run per line: the loop repeats the lines
            mixed(x, w, f).backward()

    got = profile("python", body)
    at = {k: {p[-2:] for p, kk, _, _ in got if kk == k} for k in ("k_tanh_backward", "k_sigmoid_backward", "k_mm")}
    assert at["k_tanh_backward"] == {("mixed", "<backward>")}, got
    assert at["k_sigmoid_backward"] == {("mixed", "<backward>")}, got
    bw_mm = {p for p, k, _, _ in got if k == "k_mm" and "<backward>" in p}
    assert bw_mm and all(p[p.index("<backward>") - 1] == "body" for p in bw_mm), bw_mm
    tanh_line = {f[-2] for p, k, _, f in got if k == "k_tanh_backward"}
    sig_line = {f[-2] for p, k, _, f in got if k == "k_sigmoid_backward"}
    assert len(tanh_line) == 1 and len(sig_line) == 1 and tanh_line != sig_line


def test_compiled_before_the_session_recompiles_once():
    """Dynamo guards on the mode stack: a function compiled before the
    session recompiles once in it (same graph), not again in later sessions
    nor outside them."""
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(len(gm.graph.nodes))
        return gm.forward

    torch._dynamo.reset()
    f = torch.compile(model, backend=counting)
    x, w = leaves()
    f(x, w).backward()
    for _ in range(2):
        profile("python", lambda: f(x, w).backward())
    f(x, w).backward()
    assert len(graphs) == 2 and graphs[0] == graphs[1], graphs


def test_finalize_from_another_thread_leaves_inert_modes():
    """The modes live on the starting thread's stack; a finalize from another
    thread cannot pop them, so they pass calls through untouched."""
    import threading
    from torch.overrides import _get_current_function_mode_stack
    depth = len(_get_current_function_mode_stack())
    x, w = leaves()
    sid = proton.start("t", context="python,aten", backend="fake")
    t = threading.Thread(target=proton.finalize, args=(sid,))
    t.start()
    t.join()
    assert len(_get_current_function_mode_stack()) == depth + 1
    step(x, w)  # passes through: no error, no session
    assert x.grad is not None
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    _get_current_dispatch_mode_stack()[-1].__exit__(None, None, None)  # the caller may pop them
    _get_current_function_mode_stack()[-1].__exit__(None, None, None)
    got = profile("python", lambda: step(x, w))  # a later session works
    assert any("<backward>" in p for p, _, _, _ in got)


def test_link_counts_one_run_per_line_and_walks_only_linked_calls():
    """Issue 28, cost: the link walks the frames only for a call whose
    output has an autograd node, and registers one pre-hook per run of calls
    from the same line (a loop of 10 iterations, two operations on one line:
    one run), not one per node; calls without a node (a shape read, calls
    under no_grad) pass through. Counts, not timings (_cproton.link_stats)."""
    from cproton import _cproton
    x, w = leaves()
    seen = {}

    def body():
        h = x
        for _ in range(10):
            h = torch.tanh(h @ w)  # one line: one run
        with torch.no_grad():
            for _ in range(5):
                h.shape, w.mul(2)  # no node: not linked
        loss = h.sum()  # a second run
        before = _cproton.link_stats()
        loss.backward()
        seen.update(before=before, after=_cproton.link_stats())

    got = profile("python", body)
    # 20 in the loop, no_grad's two grad-mode switches, 10 without a node,
    # sum; the loop's run ended (its pre-hook) when sum's began, and only
    # the first run follows a gap (the session's start: one post-hook)
    assert seen["before"] == {"calls": 20 + 2 + 10 + 1, "linked": 20 + 1, "runs": 1, "post_hooks": 1}, seen
    # backward() goes through the mode too and ends the last run
    assert seen["after"] == {"calls": 34, "linked": 21, "runs": 2, "post_hooks": 1}, seen
    assert {k for _, k, _, _ in got} >= {"k_tanh_backward", "k_mm"}, got
