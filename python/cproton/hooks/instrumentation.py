"""The instrumentation hook (``start(backend="instrumentation")``).

Proton compiles kernels through its MLIR passes here. cproton lowers the
``cproton.language`` markers in PTX instead (src/instrument); this hook
only records the mode and switches ``flags.instrumentation_on`` while a
session uses it. Wiring the PTX pass and the profile-buffer allocator into
Triton is done by the instrumentation runtime (see docs/python.md).
"""
from typing import Any, Dict, Optional, Union

from .. import mode as _mode
from ..flags import flags
from .hook import Hook


def _interpret_mode(mode_obj: Union[None, str, _mode.InstrumentationMode]) -> _mode.InstrumentationMode:
    if isinstance(mode_obj, _mode.InstrumentationMode):
        return mode_obj
    return _mode.parse_instrumentation_mode(mode_obj or "default")


class InstrumentationHook(Hook):
    priority: int = 0
    active_count: int = 0

    def __init__(self, mode_obj: Union[None, str, _mode.InstrumentationMode]):
        self.mode: _mode.InstrumentationMode = _interpret_mode(mode_obj)

    def activate(self):
        if InstrumentationHook.active_count > 0:
            raise RuntimeError("Only one instance of the instrumentation hook can be active at a time.")
        InstrumentationHook.active_count += 1
        flags.instrumentation_on = True

    def deactivate(self):
        if InstrumentationHook.active_count == 0:
            return
        InstrumentationHook.active_count -= 1
        flags.instrumentation_on = False

    def init_handle(self, module: Any, function: Any, name: str, metadata_group: Dict[str, str], hash: str) -> None:
        pass

    def enter(self, metadata) -> None:
        pass

    def exit(self, metadata) -> None:
        pass
