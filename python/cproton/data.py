"""Reading a live session's data without finalizing it (the ``data``
module of later Proton releases)."""
import json
from typing import Optional

from . import _cproton, _log
from .flags import flags


def get(session: Optional[int] = 0):
    """
    The session's call-path tree as Python objects: the Hatchet literal
    ``[root, device_info]`` that finalize would write (nodes are dicts with
    "frame", "metrics" and "children").

    Raises ValueError for an unknown session (or, under the cproton command,
    for a session other than 0).
    """
    if isinstance(session, bool) or not isinstance(session, int):
        raise TypeError(f"session must be an int, not {type(session).__name__}")
    if flags.command_line and session != 0:
        raise ValueError("Only one session can be retrieved when running from the command line.")
    try:
        text = _cproton.data_json(session)
    finally:
        _log.drain()
    return json.loads(text)
