"""Backend modes, as in Proton's ``triton.profiler.mode``: the same
dataclasses, fields, defaults, validation and option strings
(``str(mode)``, which each class then has the backend's C parser validate), without depending on Triton's C module -- the enums below
have the names, values and ``str()`` of ``triton._C.libtriton.proton``'s,
and Triton's own enum members are accepted wherever these are."""
from dataclasses import dataclass, field
from enum import Enum
from typing import Dict, List


class _ProtonEnum(Enum):
    """str() is "TYPE.MEMBER", as for Triton's pybind11 enums."""

    def __str__(self):
        return f"{type(self).__name__}.{self.name}"

    def __repr__(self):
        # Proton 3.6's pybind11 enums print as <TYPE.MEMBER: value>, Proton
        # 3.9's nanobind enums as TYPE.MEMBER (a mode's repr shows them).
        from . import _compat
        return str(self) if _compat.is_39() else f"<{self}: {self.value}>"

    def __int__(self):
        return self.value


class METRIC_TYPE(_ProtonEnum):
    CYCLE = 0


class SAMPLING_STRATEGY(_ProtonEnum):
    NONE = 0
    SELECTIVE = 1


class GRANULARITY(_ProtonEnum):
    WARP = 1
    WARP_2 = 2
    WARP_4 = 3
    WARP_8 = 4
    CTA = 5
    WARP_GROUP = 6
    WARP_GROUP_2 = 7
    WARP_GROUP_4 = 8
    WARP_GROUP_8 = 9


class BUFFER_STRATEGY(_ProtonEnum):
    CIRCULAR = 0
    FLUSH = 1


class BUFFER_TYPE(_ProtonEnum):
    SHARED = 1
    GLOBAL = 2


metric_types = {"cycle": METRIC_TYPE.CYCLE}
buffer_strategies = {"circular": BUFFER_STRATEGY.CIRCULAR, "flush": BUFFER_STRATEGY.FLUSH}
buffer_types = {"shared": BUFFER_TYPE.SHARED, "global": BUFFER_TYPE.GLOBAL}
sampling_strategies = {"none": SAMPLING_STRATEGY.NONE, "selective": SAMPLING_STRATEGY.SELECTIVE}
granularities = {name.lower(): member for name, member in GRANULARITY.__members__.items()}


class Optimize(Enum):
    TIMESHIFT = "time_shift"
    SCHED_STORES = "sched_stores"
    SCHED_BARRIERS = "sched_barriers"
    CLOCK32 = "clock32"

    def __str__(self):
        return self.value


optimizations = {opt.value: opt for opt in Optimize}


def _coerce(enum_cls, lookup: Dict[str, Enum], field_name: str, value):
    """Maps a string (Proton's option spelling) or a foreign enum member with
    the same name (Triton's) to our member; leaves our members alone."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        if value not in lookup:
            raise ValueError(f"Unknown {field_name}: {value}")
        return lookup[value]
    name = getattr(value, "name", None)
    if isinstance(name, str) and name in enum_cls.__members__:
        return enum_cls.__members__[name]
    raise TypeError(f"{field_name} must be a str or {enum_cls.__name__}, not {type(value).__name__}")


def _check_in_c(backend, text: str) -> None:
    """The mode string a class built, validated by the backend's own C
    parser (the one every session's mode goes through; backend None: the
    default GPU backend's). ValueError with the C parser's message; the
    class's own checks before it keep Proton's messages for what Proton's
    classes check."""
    from cproton import _cproton
    _cproton.check_mode(backend, text)


@dataclass(frozen=True)
class BaseMode:
    name: str


@dataclass(frozen=True)
class PCSampling(BaseMode):
    name: str = field(default="pcsampling", init=False)
    interval: int = 1000

    def __post_init__(self):
        if isinstance(self.interval, bool) or not isinstance(self.interval, int):
            raise TypeError("Interval must be an int.")
        if self.interval <= 0:
            raise ValueError("Interval must be a positive integer.")
        # Proton's class takes any positive interval (interval=1 too), so
        # the CUPTI backend's parser checks the range when a session starts.

    def __str__(self):
        return f"{self.name}:interval={self.interval}"


@dataclass(frozen=True)
class PMSampling(BaseMode):
    """Hardware counters (a cproton extension; docs/hardware-metrics.md):
    ``PMSampling()`` is ``"pmsampling"``, ``PMSampling(metrics=["dram_throughput%"],
    interval=100000)`` is ``"pmsampling:metrics=dram_throughput%:interval=100000"``,
    ``PMSampling(exact=True)`` reads them per launch by replay. Like
    ``PCSampling``, the class checks types and signs; the CUPTI backend's parser
    checks names and ranges when a session starts."""
    name: str = field(default="pmsampling", init=False)
    metrics: tuple = ()
    interval: int = 0   # 0: the backend's default (250 us)
    exact: bool = False
    ranges: int = 0     # exact mode: launches per decode, 0: the default

    def __post_init__(self):
        if isinstance(self.metrics, str) or not all(isinstance(m, str) and m and "," not in m
                                                     and ":" not in m for m in self.metrics):
            raise TypeError("metrics must be a sequence of counter names (no ',' or ':').")
        object.__setattr__(self, "metrics", tuple(self.metrics))
        for what in ("interval", "ranges"):
            v = getattr(self, what)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{what} must be a non-negative integer.")
        if not isinstance(self.exact, bool):
            raise TypeError("exact must be a bool.")

    def __str__(self):
        parts = [self.name]
        if self.metrics:
            parts.append("metrics=" + ",".join(self.metrics))
        if self.interval:
            parts.append(f"interval={self.interval}")
        if self.exact:
            parts.append("exact")
        if self.ranges:
            parts.append(f"ranges={self.ranges}")
        return ":".join(parts)


@dataclass(frozen=True)
class InstrumentationMode(BaseMode):
    """Common base class for instrumentation modes with shared configuration."""
    metric_type: METRIC_TYPE = METRIC_TYPE.CYCLE
    sampling_strategy: SAMPLING_STRATEGY = SAMPLING_STRATEGY.NONE
    sampling_options: str = ""
    granularity: GRANULARITY = GRANULARITY.WARP
    buffer_strategy: BUFFER_STRATEGY = BUFFER_STRATEGY.CIRCULAR
    buffer_type: BUFFER_TYPE = BUFFER_TYPE.SHARED
    buffer_size: int = 0
    optimizations: List[Optimize] = field(default_factory=list)

    def __post_init__(self):
        for field_name, enum_cls, lookup in (
            ("metric_type", METRIC_TYPE, metric_types),
            ("sampling_strategy", SAMPLING_STRATEGY, sampling_strategies),
            ("granularity", GRANULARITY, granularities),
            ("buffer_strategy", BUFFER_STRATEGY, buffer_strategies),
            ("buffer_type", BUFFER_TYPE, buffer_types),
        ):
            value = _coerce(enum_cls, lookup, field_name, getattr(self, field_name))
            object.__setattr__(self, field_name, value)
        if isinstance(self.buffer_size, bool) or not isinstance(self.buffer_size, int) or self.buffer_size < 0:
            raise ValueError(f"buffer_size must be a non-negative int, not {self.buffer_size!r}")
        if not isinstance(self.sampling_options, str):
            raise TypeError("sampling_options must be a str")
        opts = self.optimizations
        if isinstance(opts, str):
            values = [v.strip() for v in opts.split(",")] if opts else []
            for v in values:
                if v not in optimizations:
                    raise ValueError(f"Unknown optimization: {v}")
            object.__setattr__(self, "optimizations", [optimizations[v] for v in values])
        else:
            object.__setattr__(self, "optimizations", [o if isinstance(o, Optimize) else optimizations[str(o)]
                                                       for o in opts])
        _check_in_c("instrumentation", str(self))

    def __str__(self):
        optimizations_str = ",".join(str(opt) for opt in self.optimizations)
        return (f"{self.name}:metric_type={self.metric_type}:sampling_strategy={self.sampling_strategy}"
                f":sampling_options={self.sampling_options}:granularity={self.granularity}"
                f":buffer_strategy={self.buffer_strategy}:buffer_type={self.buffer_type}"
                f":buffer_size={self.buffer_size}:optimizations={optimizations_str}")


@dataclass(frozen=True)
class Default(InstrumentationMode):
    name: str = field(default="default", init=False)


@dataclass(frozen=True)
class MMA(InstrumentationMode):
    name: str = field(default="mma", init=False)


_OPTION_KEYS = ("metric_type", "buffer_type", "buffer_strategy", "buffer_size", "granularity",
                "sampling_strategy", "sampling_options", "optimizations")
# cproton's own key: where tree-mode per-scope totals are made ("reduce=kernel",
# "reduce=device" or "reduce=host"; unset: in the kernel for tree profiles that
# need no records; docs/instrumentation-runtime.md). Only in mode strings: the
# dataclasses keep Proton's fields.
_RUNTIME_KEY = "reduce"


def parse_instrumentation_mode(text: str) -> InstrumentationMode:
    """Parses Proton's instrumentation mode strings: "default", "mma",
    "default:granularity=warp_group:buffer_size=4096", ... (ValueError for
    unknown modes or options). The C parser decides which strings are valid
    (``cproton_instr_mode_normalize``, the one the sessions and the injection
    use): this reads only the canonical form it returns, so the two agree
    on every string (tests/python/test_mode_agreement.py)."""
    if not isinstance(text, str):
        raise TypeError("mode must be a str")
    from cproton import _cproton
    return from_canonical(_cproton.instr_mode_normalize(text))


def from_canonical(canonical: str) -> InstrumentationMode:
    """The mode class for the C parser's canonical form of a valid mode
    string (``cproton_instr_mode_normalize``, ``cproton_instr_mode_parse``):
    every key is known and every value valid, so nothing is checked here."""
    parts = canonical.split(":")
    opts = {}
    for opt in parts[1:]:
        key, val = opt.split("=", 1)
        if key == _RUNTIME_KEY:  # the runtime's, not the pass's: the session reads it
            continue
        opts[key] = int(val) if key == "buffer_size" else val
    classes = {"default": Default, "mma": MMA}
    return classes[parts[0]](**opts)
