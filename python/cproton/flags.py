"""Process-local switches, as in Proton's ``triton.profiler.flags``.

``flags.profiling_on`` lives in the C extension (scopes read it on every
enter without touching Python objects); the other two are plain
attributes. No environment variables are read here.
"""
from dataclasses import dataclass

from . import _cproton


class ProfilerFlags:
    """Same fields as Proton's ProfilerFlags dataclass."""

    __dataclass_fields__ = None  # filled below, so dataclasses.fields() works

    def __init__(self, profiling_on: bool = False, instrumentation_on: bool = False,
                 command_line: bool = False) -> None:
        self.profiling_on = profiling_on
        self.instrumentation_on = instrumentation_on
        self.command_line = command_line

    @property
    def profiling_on(self) -> bool:
        """Whether profiling is enabled (start() sets it, finalize() clears it)."""
        return _cproton.profiling()

    @profiling_on.setter
    def profiling_on(self, value: bool) -> None:
        _cproton.set_profiling(bool(value))

    def __repr__(self) -> str:
        return (f"ProfilerFlags(profiling_on={self.profiling_on}, "
                f"instrumentation_on={self.instrumentation_on}, command_line={self.command_line})")


@dataclass
class _Shape:
    profiling_on: bool = False
    instrumentation_on: bool = False
    command_line: bool = False


ProfilerFlags.__dataclass_fields__ = _Shape.__dataclass_fields__
del _Shape, dataclass

flags = ProfilerFlags()
