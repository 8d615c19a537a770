"""Reading a live session's data without finalizing it, and its phases: the
``data`` module of Proton 3.9 (``get``, ``get_msgpack``, ``advance_phase``,
``is_phase_complete``, ``clear``)."""
import json
from typing import Optional

from . import _cproton, _log, metric
from .flags import flags


def _check(session, what: str) -> None:
    if isinstance(session, bool) or not isinstance(session, int):
        raise TypeError(f"session must be an int, not {type(session).__name__}")
    if flags.command_line and session != 0:
        raise ValueError(f"Only one session can {what} when running from the command line.")


def _check_phase(phase) -> None:
    if isinstance(phase, bool) or not isinstance(phase, int) or phase < 0:
        raise TypeError(f"phase must be a non-negative int, not {phase!r}")


def _data(session: int, phase: int, fmt: Optional[str]) -> bytes:
    metric.flush()  # device-recorded tensor metrics reach the tree first
    try:  # RuntimeError for an unknown session or a phase without data, as in Proton
        return _cproton.data(session, phase, fmt)
    finally:
        _log.drain()


def get(session: Optional[int] = 0, phase: int = 0):
    """
    Phase `phase` of the session as Python objects, in the session's own
    format as Proton does: for data="tree" the Hatchet literal
    ``[root, device_info]`` that finalize would write (nodes are dicts with
    "frame", "metrics" and "children"), for data="trace" the Chrome trace.
    None when `session` is None.

    Raises RuntimeError for an unknown session ("Session has not been
    initialized: N") and for a phase that was cleared, written by periodic
    flushing, or never started.
    """
    if session is None:
        return None
    _check(session, "be retrieved")
    _check_phase(phase)
    return json.loads(_data(session, phase, None))


def get_msgpack(session: Optional[int] = 0, phase: int = 0):
    """The same tree as :func:`get`, encoded with MessagePack (bytes), as the
    "hatchet_msgpack" output format writes it."""
    if session is None:
        return None
    _check(session, "be retrieved")
    _check_phase(phase)
    return _data(session, phase, "hatchet_msgpack")


def advance_phase(session: Optional[int] = 0) -> Optional[int]:
    """
    Ends the session's current phase and starts the next; returns the new
    phase's number. Kernels launched from now on are recorded in the new
    phase. Under mode="periodic_flushing", every complete phase is written to
    ``<name>.part_<phase>.<format>`` and its memory released.
    """
    if session is None:
        return None
    _check(session, "advance phase")
    try:
        metric.flush()  # records so far belong to the phase that ends
        return _cproton.advance_phase(session)
    finally:
        _log.drain()


def is_phase_complete(session: Optional[int] = 0, phase: int = 0) -> bool:
    """
    Whether phase `phase` is over and all its records have arrived, so it is
    safe to read or clear: a flush (``deactivate(..., flushing=True)``)
    happened after it ended, or records of a later phase arrived.
    """
    if session is None:
        return False
    _check(session, "check phase completion status")
    _check_phase(phase)
    return _cproton.phase_complete(session, phase)


def clear(session: Optional[int] = 0, phase: int = 0, clear_up_to_phase: bool = False) -> None:
    """
    Drops the data of phase `phase` (with `clear_up_to_phase`, of every phase
    up to and including it). The current phase is emptied and keeps
    recording.
    """
    if session is None:
        return
    _check(session, "be cleared")
    _check_phase(phase)
    try:
        _cproton.clear(session, phase, bool(clear_up_to_phase))
    finally:
        _log.drain()
