"""PyTorch layers of the "python" context (issue 28), on while a session
with context "python" runs and torch is imported:

- Backward link: a TorchFunctionMode sees each PyTorch call of the thread
  that started the session; `_cproton.link_call` (C, _torchlink.c) runs
  the call, and for each output's autograd node adds it to the run of calls
  with the caller's frames; a run's last node gets a pre-hook that hands
  the frames to the thread that runs it; after nodes the mode did not see
  (a gap in autograd's sequence counter) the run's first node gets a
  post-hook back to the fallback (the frames of backward()'s caller).
  Tensor.backward, torch.autograd.backward and torch.autograd.grad open the
  backward pass (`backward_begin/_end`). C (_pylink.c) puts "<backward>"
  under the link.
- Operator frames ("python,aten"): a TorchDispatchMode pushes "aten::name"
  around each operator (`_cproton.op_call`, C); the modes' state is
  thread-local and autograd hands it to its engine threads, so backward
  operators get frames too.

Both modes step aside while torch.compile traces (torch.compiler
.is_compiling()), so compiled graphs do not change; a compiled region's
backward runs under the fallback."""
import os
import sys
import threading

from . import _cproton

_installed = []  # (mode, thread id), innermost last


def _roots(args, kwargs, torch):
    """The tensors backward()/grad() start from."""
    first = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
    return [first] if isinstance(first, torch.Tensor) else list(first or ())


def _backward(func, args, kwargs, torch):
    _cproton.link_flush()  # the last run of calls gets its pre-hook
    token = _cproton.backward_begin(_cproton.frame_ids())
    try:
        _cproton.backward_node(None, 0)  # a node run on this thread before any hook
        for t in _roots(args, kwargs, torch):  # the first node on an engine thread
            node = getattr(t, "grad_fn", None)
            if node is not None and "cproton" not in node.metadata:
                node.metadata["cproton"] = True  # once per graph
                node.register_prehook(_cproton.backward_root)
        return func(*args, **kwargs)
    finally:
        _cproton.backward_end(token)


_classes = []


def _modes(torch):
    """The two mode classes, made once per process: Dynamo guards on the
    mode stack, so new classes would make compiled code recompile in every
    session."""
    if not _classes:
        _classes.extend(_make_modes(torch))
    return _classes


def _make_modes(torch):
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode
    compiling = torch.compiler.is_compiling
    backward = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)
    # autograd's sequence counter (torch.autograd._get_sequence_nr): nodes
    # made between two linked calls show as a gap (see _torchlink.c)
    peek = getattr(torch.autograd, "_get_sequence_nr", None)
    _cproton.link_setup(torch.Tensor, peek, backward,
                        lambda func, args, kwargs: _backward(func, args, kwargs or {}, torch))
    call, op_call = _cproton.link_call, _cproton.op_call

    class ForwardLink(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            # Dynamo inlines this method and folds compiling() to True, so
            # a compiled graph sees only the call; outside it, link_call (C)
            # runs the call and links its outputs, or hands a backward()
            # to _backward
            if compiling():
                return func(*args, **(kwargs or {}))
            return call(func, args, kwargs)

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

    return ForwardLink, OperatorFrames


def installed() -> bool:
    return bool(_installed)


# Torch's own machinery between user code and a linked call: dispatch
# helpers, Tensor.backward's wrapper, the engine's entry, dynamo's disable,
# and nn.Module's call plumbing (two frames per module level between the
# caller's line and the module's forward, nothing of the user's in either).
_TORCH_SKIP = ("overrides.py", "_ops.py", "_tensor.py", "_compile.py", "autograd/__init__.py",
               "autograd/graph.py", "utils/_python_dispatch.py", "_dynamo/eval_frame.py",
               "nn/modules/module.py")
# Functions whose callers are dropped too: a torch function that sees a
# torch-function mode (the link's ForwardLink) calls handle_torch_function,
# which runs the function again inside the mode; its first frame (the line
# that routes it) would sit above the second (the one that runs it) in
# every path below it, one level that Proton's profile does not have.
_TORCH_SKIP_CALLERS = ("overrides.py@handle_torch_function",)


def torch_skip() -> list:
    """The files of _TORCH_SKIP, dropped from the python context while the
    link is on (see context.set_torch_skip)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    root = os.path.dirname(os.path.abspath(torch.__file__))
    return [os.path.join(root, *rel.split("/")) for rel in _TORCH_SKIP]


def torch_skip_callers() -> list:
    """The functions of _TORCH_SKIP_CALLERS ("file@function"), whose
    callers are dropped while the link is on."""
    torch = sys.modules.get("torch")
    if torch is None:
        return []
    root = os.path.dirname(os.path.abspath(torch.__file__))
    return [os.path.join(root, *rel.split("/")) for rel in _TORCH_SKIP_CALLERS]


class _TorchWatch:
    """A meta-path finder that installs the modes once torch has been
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
    """Pushes the modes on the calling thread; before torch is imported,
    waits for its import (on the importing thread)."""
    if on_install is not None:
        _on_install[:] = [on_install]
    torch = sys.modules.get("torch")
    if _installed:
        return
    if torch is None or not hasattr(torch, "compiler"):
        if not _watch:
            _watch.append(_TorchWatch(aten))
            sys.meta_path.insert(0, _watch[0])
        return
    forward, ops = _modes(torch)
    for mode in (forward(),) + ((ops(),) if aten else ()):
        mode.__enter__()
        _installed.append((mode, threading.get_ident()))


def uninstall() -> None:
    """Pops the modes (on the thread that pushed them; from another thread
    they cannot be reached and are left inert), stops waiting for torch and
    forgets the links."""
    _remove_watch()
    _on_install.clear()
    if _installed:
        _cproton.link_flush()
    while _installed:
        mode, tid = _installed.pop()
        if tid == threading.get_ident():
            mode.__exit__(None, None, None)
        else:
            type(mode).__torch_function__ = _passthrough
            type(mode).__torch_dispatch__ = _passthrough
            _classes.clear()  # those classes are inert now: new ones next time
    _cproton.link_reset()


def _passthrough(self, func, types, args=(), kwargs=None):
    return func(*args, **(kwargs or {}))
