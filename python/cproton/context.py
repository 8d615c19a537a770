"""Context queries, as in Proton's ``triton.profiler.context``."""
from typing import Optional

from . import _cproton
from .flags import flags


def depth(session: Optional[int] = 0) -> Optional[int]:
    """
    Get the depth of the context.

    Args:
        session (int): The session ID of the profiling session. Defaults to 0.

    Returns:
        depth (int or None): The depth of the context. If profiling is off, returns None.
        For a "shadow" session it is the calling thread's scope depth; for a
        "python" session the number of Python frames the session would record.
        Raises RuntimeError ("Session has not been initialized: N") for a
        session that does not exist, as Proton does.
    """
    if not flags.profiling_on:
        return None
    if not flags.command_line:  # Proton: RuntimeError "Session has not been initialized: N"
        _cproton.output_path(session)
    from .profile import _session_info
    info = _session_info(session)
    if info is not None and info.get("context") == "python":
        return len(_cproton.python_frames())
    return _cproton.depth()


def python_frames() -> list:
    """The calling thread's frames, outermost first, as the "python" context
    records them ("file:line@function", Triton's launch machinery and
    cproton's own frames dropped). A cproton extension."""
    return _cproton.python_frames()


def set_python_skip(prefixes, callers_of=()) -> None:
    """Replaces the file-path prefixes whose frames the "python" context
    drops (default: cproton's package and Triton's runtime, backends,
    compiler and profiler folders), and the functions whose callers it
    drops, as "file-prefix@function" (default: none; a router such as
    torch's handle_torch_function, which calls its caller again). A cproton
    extension."""
    global _skip, _callers
    _skip, _callers = list(prefixes), list(callers_of)
    _cproton.set_frame_skip(_skip + _torch_skip, _callers + _torch_callers)


def set_torch_skip(prefixes, callers_of=()) -> None:
    """PyTorch's dispatch helpers and nn.Module's call plumbing, dropped
    too while the backward link is on (profile._link_torch), and the callers
    of the functions in `callers_of` ("file-prefix@function"; none now)."""
    global _torch_skip, _torch_callers
    _torch_skip, _torch_callers = list(prefixes), list(callers_of)
    _cproton.set_frame_skip(_skip + _torch_skip, _callers + _torch_callers)


def default_python_skip() -> list:
    """The default list of prefixes for :func:`set_python_skip`."""
    import importlib.util
    import os
    skip = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            for sub in ("runtime", "backends", "compiler", "profiler"):
                skip.append(os.path.join(root, sub) + os.sep)
    return skip


_skip: list = []
_callers: list = []
_torch_skip: list = []
_torch_callers: list = []
set_python_skip(default_python_skip())
