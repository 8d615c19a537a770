"""Scopes: named regions on the calling thread's shadow stack, as in
Proton's ``triton.profiler.scope``. Every kernel launched inside a scope is
attributed under it; metrics given to a scope are added to its node.

The enter/exit work is done by the C type ``_cproton.Scope`` (no Python
frame on the hot path); this module adds the decorator form, the timed
variant and the free functions.
"""
import time
from functools import wraps
from typing import Optional, Union

from . import _cproton
from ._log import warn as _warn

MetricValueType = Union[float, int]


class scope(_cproton.Scope):
    """
    A context manager and decorator for entering and exiting a scope.

    Usage:
        context manager:
        ```python
        with proton.scope("test0", {metric_name: metric_value}):
            foo[1,](x, y)
        ```

        decorator:
        ```python
        @proton.scope("test0", {metric_name: metric_value})
        def foo(x, y):
            ...
        ```

    Args:
        name (str): The name of the scope.
        metrics (dict[str, float], optional): The metrics of the scope. Default is None.
    """

    # __init__(name, metrics=None), __enter__ and __exit__ come from the C
    # type: `with scope(...)` runs no Python code of its own.
    __slots__ = ()

    def __call__(self, func):

        @wraps(func)
        def wrapper(*args, **kwargs):
            self._enter_scope()
            try:
                return func(*args, **kwargs)
            finally:
                self._exit_scope()

        return wrapper


class cpu_timed_scope(scope):
    """
    A scope that measures elapsed time (cpu_time).

    Args:
        name (str): The name of the scope.
        metrics (dict[str, float], optional): Additional metrics to add. Default is None.
    """

    def __init__(self, name: str, metrics: Optional[dict[str, float]] = None) -> None:
        super().__init__(name, metrics)
        self.start_time = None
        if metrics and "cpu_time" in metrics:
            raise ValueError("The metric name 'cpu_time' is reserved.")

    def _enter_scope(self):
        if not _cproton.profiling():
            return
        self.start_time = time.time_ns()
        super()._enter_scope()

    def _exit_scope(self):
        if not _cproton.profiling():
            return
        super()._exit_scope()
        if self.start_time is not None and self.id is not None:
            cpu_time = time.time_ns() - self.start_time
            _cproton.add_metrics(self.id, {"cpu_time (ns)(exc)": cpu_time})

    def __enter__(self):
        self._enter_scope()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self._exit_scope()


# enter_scope(name, *, metrics=None) -> Optional[int] and
# exit_scope(name=None, *, metrics=None) -> Optional[int] are the C functions
# themselves (no Python frame per call); see their docstrings.
enter_scope = _cproton.enter_scope
exit_scope = _cproton.exit_scope
