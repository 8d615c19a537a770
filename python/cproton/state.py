"""States, as in Proton's ``triton.profiler.state``: the innermost state of
a thread becomes the parent frame of every kernel it launches. cproton keeps
a stack of states per thread (Proton keeps one), so nested states restore
the outer one on exit. ``exit_state`` with no open state raises ValueError
(the C API's ESTATE); the ``state`` context manager and decorator exit only
what they entered."""
from functools import wraps

from . import _cproton

# Proton 3.9's names (libproton.metadata_scope_name / _prefix); 3.6 has
# the first one in hooks.launch. Under Proton 3.9 (cproton._compat) a state
# named COMPUTE_METADATA_SCOPE_PREFIX + kernel is two frames, the metadata
# scope and the kernel's name; under 3.6 it is one frame.
COMPUTE_METADATA_SCOPE_NAME = "__proton_launch_metadata"
COMPUTE_METADATA_SCOPE_PREFIX = COMPUTE_METADATA_SCOPE_NAME + ":"


class state:
    """
    A context manager and decorator for entering and exiting a state.

    Usage:
        context manager:
        ```python
        with proton.state("test0"):
            foo[1,](x, y)
        ```

        decorator:
        ```python
        @proton.state("test0")
        def foo(x, y):
            ...
        ```

    Args:
        name (str): The name of the state.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"state name must be a str, not {type(name).__name__}")
        self.name = name
        self._entered = []  # per __enter__: whether it entered a state

    def __enter__(self):
        entered = _cproton.profiling()
        if entered:
            _cproton.enter_state(self.name)
        self._entered.append(entered)
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if self._entered and self._entered.pop():
            _cproton.exit_state()

    def __call__(self, func):

        @wraps(func)
        def wrapper(*args, **kwargs):
            entered = _cproton.profiling()
            if entered:
                _cproton.enter_state(self.name)
            try:
                return func(*args, **kwargs)
            finally:
                if entered:
                    _cproton.exit_state()

        return wrapper


def enter_state(name: str) -> None:
    """Enters state `name` on the calling thread (TypeError/ValueError for a
    bad name)."""
    _cproton.enter_state(name)


def exit_state() -> None:
    """Exits the innermost state of the calling thread."""
    _cproton.exit_state()


def get_metadata_state_name(kernel_name=None) -> str:
    """The metadata state's name: COMPUTE_METADATA_SCOPE_NAME, or the prefix
    and `kernel_name` when one is given (Proton 3.9)."""
    if not kernel_name:
        return COMPUTE_METADATA_SCOPE_NAME
    return f"{COMPUTE_METADATA_SCOPE_PREFIX}{kernel_name}"


class metadata_state(state):
    """The state under which the Triton launch hook computes a kernel's
    ``launch_metadata``: kernels launched there (and tensor metrics given
    there) land under it instead of under the op. With `kernel_name`,
    Proton 3.9's per-kernel form (see COMPUTE_METADATA_SCOPE_PREFIX)."""

    def __init__(self, kernel_name=None) -> None:
        super().__init__(get_metadata_state_name(kernel_name))
