"""Routes the C library's diagnostics into Python: warnings (and errors)
become ``cproton.CprotonWarning`` through :mod:`warnings`, info and debug
lines go to the ``cproton`` :mod:`logging` logger.

The C handler only queues lines (it may run on any thread, without the
GIL); :func:`drain` moves them into Python and is called after every
control call (start, activate, deactivate, finalize, data.get) and at exit.
"""
import logging
import warnings

from . import _cproton

logger = logging.getLogger("cproton")

_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}


class CprotonWarning(UserWarning):
    """A diagnostic from cproton (e.g. no GPU backend, dropped records)."""


_cproton.set_warning_type(CprotonWarning)


def drain(stacklevel: int = 3) -> None:
    for level, message in _cproton.drain_log():
        if level >= 2:
            warnings.warn(message, CprotonWarning, stacklevel=stacklevel)
        else:
            logger.log(_LEVELS.get(level, logging.INFO), message)


def warn(message: str, stacklevel: int = 3) -> None:
    warnings.warn(message, CprotonWarning, stacklevel=stacklevel)
