"""PyTorch layers of the "python" context (issue 28), on while a session
with context "python" runs and torch is imported:

- Backward link, made at kernel launches (C: _pylink.c, _torchlink.c,
  _pyframes.c; no PyTorch mode, so programs and torch.compile's graphs are
  the same as without a session): each launch of the thread that started
  the session reads autograd's sequence counter; the first launch after a
  node was made records the node's forward path; a launch inside a
  backward pass asks which node runs (torch._C._current_autograd_node)
  and lands under that node's forward path + "<backward>", or under the
  frames of backward()'s caller + "<backward>" when the node has none.
  A node made in autograd.Function.apply (custom Functions, compiled
  regions) is recorded at apply's caller. `install` turns it on
  (link_setup: libtorch_cpu's path, the node query, the code objects of
  the engine's entry and of the node makers).
- Operator frames ("python,aten"): a TorchDispatchMode pushes "aten::name"
  around each operator (`_cproton.op_call`, C); the mode's state is
  thread-local and autograd hands it to its engine threads, so backward
  operators get frames too. It steps aside while torch.compile traces
  (torch.compiler.is_compiling()), so compiled graphs do not change."""
import os
import sys
import threading

from . import _cproton, _log

_installed = []  # (mode, thread id), innermost last
_linked = []  # True while the backward link is on


_classes = []


def _modes(torch):
    """The operator-frames mode class, made once per process (a new class
    per session would be a new guard for Dynamo)."""
    if not _classes:
        _classes.append(_make_mode(torch))
    return _classes[0]


def _make_mode(torch):
    from torch.utils._python_dispatch import TorchDispatchMode
    compiling = torch.compiler.is_compiling
    op_call = _cproton.op_call

    class OperatorFrames(TorchDispatchMode):
        @classmethod
        def ignore_compile_internals(cls):
            # torch.compile compiles as without the mode (any other dispatch
            # mode makes it run the frame eagerly); the compiled code's own
            # operator calls still come here
            return True

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if compiling():
                return func(*args, **(kwargs or {}))
            return op_call(func, args, kwargs)  # C: under the "aten::" frame

    return OperatorFrames


def _engine_entries(torch):
    """The code objects whose frames separate backward()'s caller from the
    frames that run a node on the thread that called it: the engine's entry
    where this torch has it, else the two public entries."""
    run = getattr(getattr(torch.autograd, "graph", None), "_engine_run_backward", None)
    fns = [run] if run is not None else [torch.autograd.backward, torch.autograd.grad]
    return [f.__code__ for f in fns if hasattr(f, "__code__")]


def _node_makers(torch):
    """The code objects of functions that make an autograd node and then run
    Python that launches: autograd.Function.apply (custom Functions, and
    torch.compile's compiled regions). A backward kernel of such a node goes
    under apply's caller, not under the first forward kernel's launch site."""
    apply = getattr(getattr(torch.autograd, "Function", None), "apply", None)
    code = getattr(getattr(apply, "__func__", apply), "__code__", None)
    return [code] if code is not None else []


def _libtorch_cpu(torch):
    return os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "lib", "libtorch_cpu.so")


def _link(torch) -> None:
    """The backward link on (once per install), or one warning why not."""
    node = getattr(torch._C, "_current_autograd_node", None)
    why = "torch._C._current_autograd_node is missing" if node is None else \
        _cproton.link_setup(_libtorch_cpu(torch), node, _engine_entries(torch),
                            _node_makers(torch))
    if why is None:
        _linked.append(True)
    else:
        _log.warn(f"context='python': the backward link is off ({why}); backward kernels "
                  "of autograd's threads land as without torch", stacklevel=4)


def installed() -> bool:
    return bool(_linked or _installed)


# Torch's own machinery between user code and a launch: dispatch helpers,
# Tensor.backward's wrapper, the engine's entry, dynamo's disable,
# nn.Module's call plumbing (two frames per module level between the
# caller's line and the module's forward, nothing of the user's in either),
# autograd.Function's apply (forward and backward side), and a compiled
# region's runtime between the compiled module's call and Inductor's
# generated code: AOTAutograd's wrappers (up to 10 frames on each side of
# "<backward>") and Inductor's call and launch plumbing. What stays: the
# user's lines, the generated code's `call` line of each kernel, Triton's
# launcher stub.
_TORCH_SKIP = ("overrides.py", "_ops.py", "_tensor.py", "_compile.py", "autograd/__init__.py",
               "autograd/graph.py", "utils/_python_dispatch.py", "_dynamo/eval_frame.py",
               "nn/modules/module.py", "autograd/function.py", "_functorch/aot_autograd.py",
               "_functorch/_aot_autograd/", "_inductor/output_code.py", "_inductor/utils.py",
               "_inductor/runtime/triton_heuristics.py",
               "_inductor/runtime/static_triton_launcher.py")


def torch_skip() -> list:
    """The files of _TORCH_SKIP, dropped from the python context while the
    link is on (see context.set_torch_skip)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    root = os.path.dirname(os.path.abspath(torch.__file__))
    return [os.path.join(root, *rel.split("/")) for rel in _TORCH_SKIP]


class _TorchWatch:
    """A meta-path finder that installs the layers once torch has been
    imported (a session started before `import torch`, e.g. under the
    cproton command): it wraps the loader's exec_module of torch's spec."""

    def __init__(self, aten):
        self.aten = aten

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        _remove_watch()
        import importlib.util
        spec = importlib.util.find_spec("torch")
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real, aten = loader.exec_module, self.aten

        def exec_module(module):
            real(module)
            loader.exec_module = real
            install(aten)
            if _on_install:
                _on_install[0]()

        loader.exec_module = exec_module
        return spec


_watch = []
_on_install = []  # profile.py's callback (the torch skip list)


def _remove_watch():
    while _watch:
        try:
            sys.meta_path.remove(_watch.pop())
        except ValueError:
            pass


def install(aten: bool, on_install=None) -> None:
    """Turns the backward link on with the calling thread as the forward
    thread and, with `aten`, pushes the operator-frames mode on it; before
    torch is imported, waits for its import (on the importing thread)."""
    if on_install is not None:
        _on_install[:] = [on_install]
    torch = sys.modules.get("torch")
    if installed():
        return
    if torch is None or not hasattr(torch, "compiler"):
        if not _watch:
            _watch.append(_TorchWatch(aten))
            sys.meta_path.insert(0, _watch[0])
        return
    _link(torch)
    if aten:
        mode = _modes(torch)()
        mode.__enter__()
        _installed.append((mode, threading.get_ident()))


def uninstall() -> None:
    """Turns the link off (its record freed), pops the mode (on the thread
    that pushed it; from another thread it cannot be reached and is left
    inert) and stops waiting for torch."""
    _remove_watch()
    _on_install.clear()
    _linked.clear()
    while _installed:
        mode, tid = _installed.pop()
        if tid == threading.get_ident():
            mode.__exit__(None, None, None)
        else:
            type(mode).__torch_dispatch__ = _passthrough
            _classes.clear()  # that class is inert now: a new one next time
    _cproton.link_reset()


def _passthrough(self, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))
