"""Routes the C library's diagnostics into Python: warnings (and errors)
become ``cproton.CprotonWarning`` through :mod:`warnings`, info and debug
lines go to the ``cproton`` :mod:`logging` logger. While cproton follows
Proton 3.9, the warnings that Proton 3.9 writes to stderr itself (the
table below) are written to stderr in Proton's words instead: callers
such as Proton 3.9's test suite read them there (pytest records
:mod:`warnings` and would keep them off stderr).

The C handler only queues lines (it may run on any thread, without the
GIL); :func:`drain` moves them into Python and is called after every
control call (start, activate, deactivate, finalize, data.get) and at exit.
"""
import logging
import sys
import warnings

from . import _compat, _cproton

logger = logging.getLogger("cproton")

_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}


class CprotonWarning(UserWarning):
    """A diagnostic from cproton (e.g. no GPU backend, dropped records)."""


_cproton.set_warning_type(CprotonWarning)


# (cproton's prefix, Proton 3.9's prefix): a warning starting with the
# first is written to stderr as "[PROTON] " + the second + the rest, as
# Proton 3.9's C++ prints it (std::cerr in GPUProfiler.cpp).
_PROTON39_STDERR = (
    ("cupti: Cannot find graph for graphExecId:", "Cannot find graph for graphExecId:"),
)


def _proton39_stderr(message: str) -> bool:
    """Writes `message` to stderr in Proton 3.9's words when Proton 3.9
    prints it there; False when it is not such a message."""
    if not _compat.is_39():
        return False
    for ours, theirs in _PROTON39_STDERR:
        if message.startswith(ours):
            sys.stderr.write(f"[PROTON] {theirs}{message[len(ours):]}\n")
            sys.stderr.flush()
            return True
    return False


def drain(stacklevel: int = 3) -> None:
    for level, message in _cproton.drain_log():
        if level == 2 and _proton39_stderr(message):
            continue
        if level >= 2:
            warnings.warn(message, CprotonWarning, stacklevel=stacklevel)
        else:
            logger.log(_LEVELS.get(level, logging.INFO), message)


def warn(message: str, stacklevel: int = 3) -> None:
    warnings.warn(message, CprotonWarning, stacklevel=stacklevel)
