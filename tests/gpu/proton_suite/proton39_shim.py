"""A pytest plugin (``-p proton39_shim``) that tests/gpu/proton_suite.sh
loads when it runs Proton's 3.9-window tests on a machine with an older
Triton: it adds the few things those tests import from Triton 3.9 itself,
when the installed Triton lacks them, and nothing else.

- ``triton.testing.cuda_graph_without_gc(*args, **kwargs)``: Triton 3.9's
  context manager, a ``torch.cuda.graph`` capture with Python's garbage
  collector paused (a collected kernel would unload its module in the middle
  of the capture).
- ``triton.experimental.gluon.language.nvidia.blackwell.clc``: Gluon's
  Blackwell cluster-launch-control module, which test_instrumentation.py
  imports at the top and uses only in a test that skips below Blackwell. The
  stand-in is an empty module whose attributes raise, so the file collects
  on an older Triton and any use says what is missing.

The test files themselves get only the imports-only rewrite.
"""
import contextlib
import gc
import importlib
import sys
import types


@contextlib.contextmanager
def _cuda_graph_without_gc(*args, **kwargs):
    import torch
    paused = gc.isenabled()
    gc.disable()
    try:
        with torch.cuda.graph(*args, **kwargs) as captured:
            yield captured
    finally:
        if paused:
            gc.enable()


class _Missing(types.ModuleType):
    """A module Triton lacks: importable, every attribute an error."""

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"{self.__name__}.{attr}: not in this Triton (a stand-in of proton39_shim)")


def _stand_in_module(parent: str, leaf: str) -> bool:
    """Makes `parent.leaf` importable when the parent exists and the module
    does not; whether it did."""
    name = f"{parent}.{leaf}"
    try:
        importlib.import_module(name)
        return False
    except ImportError:
        pass
    try:
        package = importlib.import_module(parent)
    except ImportError:
        return False
    module = _Missing(name)
    sys.modules[name] = module
    setattr(package, leaf, module)
    return True


def _install() -> list:
    """Adds what is missing; the names it added."""
    added = []
    try:
        import triton.testing as testing
    except ImportError:
        return added
    if not hasattr(testing, "cuda_graph_without_gc"):
        testing.cuda_graph_without_gc = _cuda_graph_without_gc
        added.append("triton.testing.cuda_graph_without_gc")
    if _stand_in_module("triton.experimental.gluon.language.nvidia.blackwell", "clc"):
        added.append("triton.experimental.gluon.language.nvidia.blackwell.clc (empty)")
    return added


ADDED = _install()


def pytest_report_header(config):
    return f"proton39_shim: added {', '.join(ADDED) or 'nothing (Triton has it all)'}"
