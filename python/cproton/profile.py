"""Sessions: start, activate, deactivate, finalize and the ``profile``
decorator, as in Proton's ``triton.profiler.profile``.

Differences from Proton, all deliberate:
- ``backend=None`` lets the C library choose ("cupti" when a CUDA driver
  and device are present); with no GPU the session records CPU scopes only
  and one CprotonWarning says so. Backend names are passed through.
- Under the ``cproton`` command, ``start`` and ``finalize`` inside the
  script are ignored (the command owns the session).
- Wrong argument types raise TypeError; unknown context/data/backend/format
  strings raise RuntimeError (Proton's type) naming the valid ones; a bad
  mode string raises ValueError (as Proton's parsers do).
- ``finalize`` of an unknown session warns (Proton ignores it).

Like Proton's, ``start`` does nothing and returns None when
``triton.knobs.proton.disable`` (TRITON_PROTON_DISABLE) is on, and copies
the Proton knobs into the environment the C library reads (cproton.knobs).
"""
import atexit
import functools
from typing import Optional, Union

from . import _compat, _config, _cproton, _log, _torchlink, context as _context, knobs, metric
from .flags import flags
from .hooks import HookManager, LaunchHook, InstrumentationHook
from .hooks import facts
from .hooks.hook import Hook
from .mode import BaseMode

DEFAULT_PROFILE_NAME = "proton"

_sessions: dict = {}  # session id -> the options it was started with


def _session_info(session):
    return _sessions.get(session)


def _gpu_present() -> bool:
    """True when the default GPU backend's C probe finds a driver with at
    least one device (``cproton_backend_probe``: the driver only; its device
    count, not the name of the backend it answers with)."""
    _backend, _runs, devices = _cproton.probe(None)
    return devices > 0


_warned_no_gpu = False


# Proton's profiler for each Triton backend (its select_profiler_from_triton_backend)
_PROFILER_OF_TRITON_BACKEND = {(3, 6): {"cuda": "cupti", "hip": "roctracer"},
                               (3, 9): {"cuda": "cupti", "hip": "rocprofiler"}}

_NO_ARGUMENT = object()


def _select_backend(backend=_NO_ARGUMENT) -> Optional[str]:
    """None -> None (the library's default) when a GPU is present, else
    "none" with one warning per process.

    Called with no argument, Proton 3.9's form: the profiler Proton picks
    for the active Triton target ("cupti" for CUDA), with Proton's errors
    (Triton's own when no driver is active; ValueError for a backend no
    profiler serves)."""
    global _warned_no_gpu
    if backend is _NO_ARGUMENT:
        import triton
        target = triton.runtime.driver.active.get_current_target().backend
        table = _PROFILER_OF_TRITON_BACKEND[_compat.PROTON_VERSION]
        if target not in table:
            if _compat.is_39():
                raise ValueError(f"No profiler registered for triton backend {target}")
            raise ValueError("No backend is available for the current target.")
        return table[target]
    if backend is not None:
        return backend
    if _gpu_present():
        return None
    if not _warned_no_gpu:
        _warned_no_gpu = True
        _log.warn("no GPU backend is available (no CUDA driver or device found); "
                  "cproton records CPU scopes, states and metrics only", stacklevel=4)
    return "none"


def _get_mode_str(backend: Optional[str], mode: Optional[Union[str, BaseMode]]) -> Optional[str]:
    if mode is None or mode == "":
        return None
    if isinstance(mode, (str, BaseMode)):
        return str(mode)
    raise TypeError(f"mode must be a str or a cproton.mode.BaseMode, not {type(mode).__name__}")


def _check_str(what: str, value, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")


# Where launchers put a process's rank, most specific first (torchrun, Open
# MPI, Slurm, MPICH/PMI; a lone LOCAL_RANK is a rank too): the rows of the C
# configuration table (src/core/config_table.c) that the injection reads too.
# They fill "{rank}" and "{local_rank}" in session names.
def _rank_rows(role):
    return tuple(row[0] for row in _cproton.config_table() if role in row[6].split(","))


_RANK_VARS = _rank_rows("rank")
_LOCAL_RANK_VARS = _rank_rows("local_rank")


def _first_rank(names) -> int:
    for var in names:
        value = _config.get(var, "")
        # ASCII digits only, as the C side (config.c's int_env): str.isdigit
        # also accepts "²" or "٣", which int() then refuses or reads.
        if value.isascii() and value.isdigit() and int(value) < (1 << 30):
            return int(value)
    return -1


def _ranks():
    return _first_rank(_RANK_VARS), _first_rank(_LOCAL_RANK_VARS)


def _check_session(session) -> None:
    if session is not None and (isinstance(session, bool) or not isinstance(session, int)):
        raise TypeError(f"session must be an int or None, not {type(session).__name__}")


def start(
    name: Optional[str] = None,
    *,
    context: Optional[str] = "shadow",
    data: Optional[str] = "tree",
    backend: Optional[str] = None,
    mode: Optional[Union[str, BaseMode]] = None,
    hook: Optional[Union[str, Hook]] = None,
):
    """
    Start profiling with the given name and backend.

    Usage:

        ```python
        proton.start("my_profile")
        # do something
        proton.finalize()
        ```

    Args:
        name (str, optional): The name (with path) of the profiling session; the
                              extension follows the data kind ("proton.hatchet" by default).
        context (str, optional): "shadow" (scopes, default) or "python" (Python frames);
                              "python,aten" adds PyTorch operator frames (a cproton
                              extension, see docs/python.md).
        data (str, optional): "tree" (default) or "trace".
        backend (str, optional): None (automatic), "cupti", "instrumentation" or "none".
        mode (Union[str, BaseMode], optional): The backend-specific mode, e.g.
                              "pcsampling:interval=1000" or cproton.mode.Default().
        hook (Union[str, Hook], optional): None, "triton" (Triton launch metadata: flops,
                              bytes, ...) or a Hook object (Proton 3.9), e.g. a
                              LaunchHook() after its configure().

    Returns:
        session (int): The session ID of the profiling session (None when
        ignored under the cproton command).
    """
    if flags.command_line or knobs.disabled():
        # Ignored when run from the command line, or when Proton is disabled.
        return None
    _check_str("name", name)
    _check_str("context", context)
    context, layers = _context_layers(context)
    _check_str("data", data)
    _check_str("backend", backend)
    if not isinstance(hook, Hook):
        _check_str("hook", hook)
        if hook not in (None, "triton", "launch"):
            if _compat.is_39():
                raise ValueError(f"Unsupported hook: {hook!r}")
            raise ValueError(f"unknown hook '{hook}' (valid: None, 'triton')")
    name = DEFAULT_PROFILE_NAME if name is None else name
    mode_str = _get_mode_str(backend, mode)
    chosen = _select_backend(backend)
    knobs.export()
    rank, local_rank = _ranks()
    # Records replayed while no session was active belong to none: fold
    # them now, before this session can receive them.
    metric.flush()
    try:
        session = _cproton.start(name, context, data, chosen, mode_str, rank=rank, local_rank=local_rank)
    finally:
        _log.drain()
    flags.profiling_on = True
    metric.reserve_for_capture()
    _sessions[session] = {"name": name, "context": context or "shadow", "data": data or "tree",
                          "backend": chosen, "mode": mode_str, "hook": hook, "layers": layers}
    if context == "python":
        _link_torch()
    if isinstance(hook, Hook):  # Proton 3.9: a Hook object, e.g. a configured LaunchHook()
        HookManager.register(hook, session)
    elif hook in ("triton", "launch"):
        HookManager.register(LaunchHook(), session)
    if isinstance(hook, LaunchHook) or hook in ("triton", "launch"):
        facts.record_loaded()  # the advisor's facts of kernels loaded before start
    if _cproton.session_wants_instrumentation_hook(session):  # the backend's flag, not its name
        # the mode as the session's backend parsed it at start (a mode it
        # refuses started no session: _cproton.start raised its message)
        config = _cproton.session_instr_config(session)
        HookManager.register(InstrumentationHook(mode, data, config), session)
    if _cproton.session_wants_loaded_cubins(session):  # from the session's parsed mode
        _add_loaded_cubins()
    return session


def _add_loaded_cubins() -> None:
    """PC sampling maps samples to lines through each module's cubin; CUDA
    hands cubins over only when a module loads, so kernels Triton compiled
    and loaded before start() would have no lines (Proton gives none).
    Triton keeps every compiled kernel's cubin: hand those over once."""
    for obj in facts.loaded_kernels():
        cubin = getattr(obj, "asm", {}).get("cubin")
        if isinstance(cubin, (bytes, bytearray)):
            _cproton.pcsampling_add_cubin(cubin)


def activate(session: Optional[int] = None) -> None:
    """
    Activate the specified session (None: all sessions).
    The profiling session will be active and data will be recorded.
    """
    _check_session(session)
    if flags.command_line and session != 0:
        raise ValueError("Only one session can be activated when running from the command line.")
    HookManager.activate(session)
    # Tensor-metric records written while the session was inactive (a graph
    # replayed then) belong to no inactive session: fold them now, before
    # it is active again (Proton 3.9's test_cudagraph_metric_queue_handles_
    # inactive_replay; start does the same).
    metric.flush()
    try:
        _cproton.activate(-1 if session is None else session)
    finally:
        _log.drain()
    metric.reserve_for_capture()


def deactivate(session: Optional[int] = None, flushing: bool = False) -> None:
    """
    Stop the specified session (None: all sessions).
    The profiling session's data will still be in the memory, but no more data will be recorded.
    cproton always flushes pending records here (`flushing` is accepted for
    Proton 3.9 compatibility); afterwards every phase that ended before is
    complete (see cproton.data.is_phase_complete).
    """
    _check_session(session)
    if flags.command_line and session != 0:
        raise ValueError("Only one session can be deactivated when running from the command line.")
    HookManager.deactivate(session)
    metric.flush()  # while the session is active: its records fold into it
    try:
        _cproton.deactivate(-1 if session is None else session)
    finally:
        _log.drain()


def finalize(session: Optional[int] = None, output_format: Optional[str] = "") -> None:
    """
    Finalizes a profiling session (None: all sessions).
    Flush and write the profiling data to the file specified by the session name.

    Args:
        session (int, optional): The session ID to finalize. If None, all sessions are finalized.
        output_format (str, optional): "hatchet", "hatchet_msgpack" (tree sessions) or
            "chrome_trace", "perfetto" (trace sessions; ".pftrace", Perfetto's
            protobuf format); "" uses the session's default (the
            periodic_flushing format, else the data kind's default).
    """
    _check_session(session)
    _check_str("output_format", output_format)
    if flags.command_line:
        if session not in (None, 0):
            raise ValueError("Only one session can be finalized when running from the command line.")
        return  # the cproton command finalizes when the script ends
    _finalize(session, output_format)


def _finalize(session, output_format):
    # A bad format keeps the session, its hooks and its data (the C library
    # checks the format before it touches a session; so do we).
    _cproton.check_format(output_format or None)
    HookManager.unregister(session)
    metric.flush()
    try:
        if session is None:
            flags.profiling_on = False
            _cproton.finalize(-1, output_format or None)
            _sessions.clear()
        else:
            _cproton.finalize(session, output_format or None)
            _sessions.pop(session, None)
        if not _cproton.session_count():
            _drop_open_scopes()
    finally:
        _unlink_torch()
        _log.drain()


def _context_layers(context):
    """Splits "python,aten" into the context the C library records
    ("python") and the PyTorch layers added to it. Any other value goes to
    the C library whole, which accepts or refuses it as Proton does."""
    if context is None or "," not in context:
        return context, ()
    base, *extra = [part.strip() for part in context.split(",")]
    if base != "python" or not extra or any(e != "aten" for e in extra):
        return context, ()
    return base, ("aten",)


def _link_torch():
    """Backward links and operator frames for PyTorch (_torchlink.py): on
    while a "python" session exists; operator frames while one asks."""
    pythons = [s for s in _sessions.values() if s["context"] == "python"]
    aten = any("aten" in s["layers"] for s in pythons)
    _torchlink.uninstall()
    _torchlink.install(aten, on_install=_torch_skip)
    _torch_skip()


def _torch_skip():
    if _torchlink.installed():
        _context.set_torch_skip(_torchlink.torch_skip())
    else:
        _context.set_torch_skip([])


def _unlink_torch():
    if any(s["context"] == "python" for s in _sessions.values()):
        return
    _torchlink.uninstall()
    _context.set_torch_skip([])


def _drop_open_scopes():
    """After the last finalize, the calling thread's scopes still open are
    dropped: their exits come when profiling is off and are no-ops, and the
    next session starts at depth 0, as Proton's (its contexts live in the
    session; Proton 3.9's test_finalize_within_scope)."""
    was, flags.profiling_on = flags.profiling_on, True  # exit_scope is a no-op while off
    try:
        for _ in range(_cproton.depth()):
            _cproton.exit_scope()
    finally:
        flags.profiling_on = was


def _profiling(
    func,
    name: Optional[str] = None,
    context: Optional[str] = "shadow",
    data: Optional[str] = "tree",
    backend: Optional[str] = None,
    mode: Optional[str] = None,
    hook: Optional[str] = None,
):
    """Wraps `func` in a session that is started before and deactivated after each call."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        session = start(name, context=context, data=data, backend=backend, mode=mode, hook=hook)
        ret = func(*args, **kwargs)
        if session is not None:  # None: ignored under the cproton command
            deactivate(session)
        return ret

    return wrapper


def profile(
    func=None,
    *,
    name: Optional[str] = None,
    context: Optional[str] = "shadow",
    data: Optional[str] = "tree",
    backend: Optional[str] = None,
    mode: Optional[str] = None,
    hook: Optional[str] = None,
):
    """
    Decorator for profiling.

    Usage:

    ```python
    @proton.profile
    def foo():
        pass
    ```

    Args:
        See start() for the arguments.
    """
    if func is None:

        def decorator(f):
            return _profiling(f, name=name, context=context, data=data, backend=backend, mode=mode, hook=hook)

        return decorator
    return _profiling(func, name=name, context=context, data=data, backend=backend, mode=mode, hook=hook)


@atexit.register
def _at_exit():
    metric.flush()  # under the cproton command, finalize follows
    _log.drain(stacklevel=1)
    _cproton.shutdown()
