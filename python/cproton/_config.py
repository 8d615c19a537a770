"""The environment, read through the C configuration table
(src/core/config_table.c, docs/configuration.md): the one way the Python
package reads an environment variable, so every variable it reads is a row
of the table that ``cproton --config`` prints and the docs check."""
import os
from typing import Dict, Optional, Tuple

from . import _cproton

# name -> (name, type, default, knob, reader, doc, rank role)
ROWS: Dict[str, Tuple[str, ...]] = {row[0]: row for row in _cproton.config_table()}


def row(name: str) -> Tuple[str, ...]:
    """The table's row for `name`; KeyError for a variable not in it."""
    try:
        return ROWS[name]
    except KeyError:
        raise KeyError(f"{name} is not in the configuration table (src/core/config_table.c)") from None


def get(name: str, default: Optional[str] = None) -> Optional[str]:
    """The environment value of row `name`, or `default` when unset. A name
    missing from the table is a KeyError, as cproton_config_get refuses it
    in C. Reads os.environ (what the C library sees too: Python's writes to
    it are putenv's)."""
    row(name)
    return os.environ.get(name, default)
