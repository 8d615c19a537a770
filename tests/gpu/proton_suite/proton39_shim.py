"""A pytest plugin (``-p proton39_shim``) that tests/gpu/proton_suite.sh
loads when it runs Proton's 3.9-window tests on a machine with an older
Triton: it adds the few things those tests import from Triton 3.9 itself,
when the installed Triton lacks them, and nothing else.

- ``triton.testing.cuda_graph_without_gc(*args, **kwargs)``: Triton 3.9's
  context manager, a ``torch.cuda.graph`` capture with Python's garbage
  collector paused (a collected kernel would unload its module in the middle
  of the capture).

The test files themselves get only the imports-only rewrite.
"""
import contextlib
import gc


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
    return added


ADDED = _install()


def pytest_report_header(config):
    return f"proton39_shim: added {', '.join(ADDED) or 'nothing (Triton has it all)'}"
