"""cproton.viewer: Proton's Python viewer, for notebooks and scripts.

The same functions, signatures and results as ``triton.profiler.viewer``
(Proton 3.6): a profile (``*.hatchet``, written by cproton or Proton) is
loaded into a Hatchet ``GraphFrame``, derived metrics (``time/ms``,
``tflop16/s``, ``util``, ``time/%``...) are added as dataframe columns,
frames are filtered with Hatchet queries and the tree is printed by
Hatchet::

    from cproton.viewer import parse, print_tree
    gf, metrics = parse(["time/ms"], "matmul.hatchet")
    print_tree(gf, metrics)

``python -m cproton.viewer`` takes ``proton-viewer``'s command line. The C
``cproton-viewer`` prints the same from the same flags without Python;
this module is for code that wants the ``GraphFrame`` itself.

Hatchet (``pip install llnl-hatchet``, which brings pandas and numpy) is
needed by this module only, and only when a function that builds or reads a
``GraphFrame`` is called: importing the module, ``--help`` and the metric
tables work without it. Nothing here touches the profiler itself.
"""
import argparse
import importlib
import json
from collections import namedtuple

from . import specs
from .hooks.launch import LaunchHook
from .state import COMPUTE_METADATA_SCOPE_NAME, COMPUTE_METADATA_SCOPE_PREFIX

__all__ = [
    "FactorDict", "apply_diff_profile", "avg_cpu_time_factor_dict", "avg_time_factor_dict", "bytes_factor_dict",
    "cpu_time_factor_dict", "default_flop_factor_dict", "derivable_metrics", "derive_metrics", "emit_warnings",
    "filter_frames", "format_frames", "get_min_time_bytes", "get_min_time_flops", "get_raw_metrics", "main",
    "match_available_metrics", "parse", "print_tree", "read", "remove_frames", "show_metrics", "time_factor_dict"
]

# ---------------------------------------------------------------------------
# Optional dependencies, imported on first use.

_MISSING = ("cproton.viewer needs {name}: `pip install llnl-hatchet` (it brings pandas and numpy). "
            "The C viewer `cproton-viewer` prints the same trees without Python packages.")


def _require(name):
    """The module `name` (hatchet, pandas, numpy...), or ImportError saying how to get it."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise ImportError(_MISSING.format(name=name)) from err


# ---------------------------------------------------------------------------
# Metric names and units (tables, shared by derive_metrics and --help).

FLOPS_WIDTHS = tuple(LaunchHook.flops_width)  # the launch hook's flops8..flops64 metrics

FactorDict = namedtuple("FactorDict", ["name", "factor"])

_SECONDS = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_RATE_PREFIX = {"": 1, "g": 1e9, "t": 1e12}


def _time_factors(name):
    return FactorDict(name, {f"{name}/{unit}": value for unit, value in _SECONDS.items()})


time_factor_dict = _time_factors("time")
avg_time_factor_dict = _time_factors("avg_time")
cpu_time_factor_dict = _time_factors("cpu_time")
avg_cpu_time_factor_dict = _time_factors("avg_cpu_time")
bytes_factor_dict = FactorDict("bytes", {f"{p}byte/s": v for p, v in _RATE_PREFIX.items()})

# The time-like derived metrics: their FactorDict and the raw metric they scale.
_TIME_METRICS = {
    factors.name: (factors, source)
    for factors, source in ((time_factor_dict, "time"), (avg_time_factor_dict, "time"),
                            (cpu_time_factor_dict, "cpu_time"), (avg_cpu_time_factor_dict, "cpu_time"))
}


def _flop_factors(width=""):
    return {f"{prefix}flop{width}/s": scale for prefix, scale in _RATE_PREFIX.items()}


default_flop_factor_dict = _flop_factors()


def _rate_metrics():
    """Rates (per second of `time`): derived name -> FactorDict(raw metric, scale)."""
    table = {key: bytes_factor_dict for key in bytes_factor_dict.factor}
    for width in ("", *FLOPS_WIDTHS):
        factors = FactorDict(f"flops{width}", _flop_factors(width))
        table.update({key: factors for key in factors.factor})
    return table


derivable_metrics = _rate_metrics()


def _bare_name(column):
    """`Time (ns)` -> `time`: how users name a raw metric."""
    return column.split("(")[0].strip().lower()


def _unit_of(column):
    """`time (ns) (inc)` -> `ns`: the unit a raw metric is stored in."""
    return column.split("(")[1].split(")")[0]


def match_available_metrics(metrics, inclusive_metrics, exclusive_metrics):
    """The dataframe columns for metric names (case-insensitive, units
    optional): inclusive metrics get their ` (inc)` column. Names that match
    nothing are skipped; RuntimeError if none matches."""
    names = metrics if isinstance(metrics, list) else [metrics]
    columns = list(inclusive_metrics) + list(exclusive_metrics)
    found = []
    wanted = None
    for name in names:
        wanted = name.lower()
        for column in columns:
            if wanted in (column, _bare_name(column)):
                found.append(f"{column} (inc)" if column in inclusive_metrics else column)
                break
    if not found:
        raise RuntimeError(f"Metric {wanted} is not found. Use the --list flag to list available metrics")
    return found


# ---------------------------------------------------------------------------
# Reading a profile.


def _prune(node):
    """`node` without launch-metadata frames (and their subtrees) and without
    frames that have no metric in their own subtree, or None when nothing is
    left of it. A frame that holds metrics stays even when all its children
    went (Proton drops it then and loses a CPU scope whose nested scopes hold
    nothing; docs/viewer.md, "Which frames are shown")."""
    if "frame" not in node:  # the device table, not a frame
        return node
    name = node["frame"].get("name")
    if name == COMPUTE_METADATA_SCOPE_NAME or (isinstance(name, str) and name.startswith(COMPUTE_METADATA_SCOPE_PREFIX)):
        return None
    kept = [child for child in map(_prune, node.get("children", [])) if child is not None]
    if not kept and not node.get("metrics"):
        return None
    node["children"] = kept
    return node


def remove_frames(database):
    """The profile's top-level list with launch-metadata frames and frames
    without a metric in their subtree dropped."""
    return [node for node in map(_prune, database) if node is not None]


def get_raw_metrics(file):
    """Loads a profile: (GraphFrame, inclusive metrics, exclusive metrics,
    device info). `file` is an open profile file (Proton 3.6's argument) or
    the profile already parsed, as ``cproton.data.get`` returns it (Proton
    3.9's); a parsed profile is not modified. Inclusive metrics are the
    root's; the exclusive ones are every other dataframe column."""
    ht = _require("hatchet")
    if isinstance(file, list):
        import copy
        database = remove_frames(copy.deepcopy(file))
    else:
        database = remove_frames(json.load(file))
    if not database or "frame" not in database[0]:
        raise ValueError(f"{getattr(file, 'name', 'profile')}: no frame with metrics (an empty profile?)")
    device_info = database.pop(1) if len(database) > 1 else {}  # Proton's files always have it
    gf = ht.GraphFrame.from_literal(database)
    inclusive = gf.show_metric_columns()
    exclusive = [column for column in gf.dataframe.columns if column not in inclusive]
    return gf, inclusive, exclusive, device_info


def read(filename):
    """`get_raw_metrics` of a file name, with the inclusive (` (inc)`)
    columns summed over subtrees."""
    with open(filename, "r") as file:
        gf, inclusive, exclusive, device_info = get_raw_metrics(file)
    assert inclusive + exclusive, "No metrics found in the input file"
    gf.update_inclusive_columns()
    return gf, inclusive, exclusive, device_info


# ---------------------------------------------------------------------------
# Device peaks: the least time the work of each frame could take.


def _devices(device_info):
    for device_type, devices in device_info.items():
        for index, device in devices.items():
            yield device_type, index, device


def _zero_min_time(df):
    return _require("pandas").DataFrame(0.0, index=df.index, columns=["min_time"])


def get_min_time_flops(df, device_info):
    """Per frame: sum over widths W of flopsW / the device's peak at W, in
    seconds (a dataframe with one column, `min_time`)."""
    out = _zero_min_time(df)
    for device_type, index, device in _devices(device_info):
        rows = df["device_id"] == index
        for width in FLOPS_WIDTHS:
            column = f"flops{width}"
            if column not in df.columns:
                continue
            peak = specs.max_flops(device_type, device["arch"], width, device["num_sms"], device["clock_rate"])
            out.loc[rows, "min_time"] += df.loc[rows, column].fillna(0) / peak
    return out


def get_min_time_bytes(df, device_info):
    """Per frame: bytes / the device's peak bandwidth, in seconds (a
    dataframe with one column, `min_time`)."""
    out = _zero_min_time(df)
    for device_type, index, device in _devices(device_info):
        rows = df["device_id"] == index
        peak = specs.max_bps(device_type, device["arch"], device["bus_width"], device["memory_clock_rate"])
        out.loc[rows, "min_time"] += df.loc[rows, "bytes"] / peak
    return out


# ---------------------------------------------------------------------------
# Derived metrics: each rule adds its column(s) and returns the column name.


def _seconds(df, source, factors, inclusive, exclusive):
    """The raw metric `source` (a time) converted to seconds."""
    column = match_available_metrics(source, inclusive, exclusive)[0]
    return df[column] * factors.factor[f"{factors.name}/{_unit_of(column)}"]


def _derive_util(df, metric, inclusive, exclusive, device_info):
    np = _require("numpy")
    memory = get_min_time_bytes(df, device_info)["min_time"]
    flops = get_min_time_flops(df, device_info)["min_time"]
    df["util"] = flops.combine(memory, max) / _seconds(df, "time", time_factor_dict, inclusive, exclusive)
    df.loc[df["device_id"].isna(), "util"] = np.nan  # scopes are not kernels
    return "util"


def _derive_rate(df, metric, inclusive, exclusive, device_info):
    factors = derivable_metrics[metric]
    column = match_available_metrics(factors.name, inclusive, exclusive)[0]
    seconds = _seconds(df, "time", time_factor_dict, inclusive, exclusive)
    df[f"{metric} (inc)"] = df[column] / seconds / factors.factor[metric]
    return f"{metric} (inc)"


def _derive_time(df, metric, inclusive, exclusive, device_info):
    factors, source = _TIME_METRICS[metric.split("/")[0]]
    value = _seconds(df, source, factors, inclusive, exclusive)
    if factors.name.startswith("avg_"):
        value = value / df["count (inc)"]
    df[f"{metric} (inc)"] = value / factors.factor[metric]
    return f"{metric} (inc)"


def _derive_percent(df, metric, inclusive, exclusive, device_info):
    name, unit = metric.split("/")[:2]
    if unit != "%":
        raise ValueError(f"Unsupported unit {unit}")
    column = match_available_metrics(name, inclusive, exclusive)[0]
    if "(inc)" in column:  # share of the root
        derived, total = f"{metric} (inc)", df[column].iloc[0]
    else:  # share of the sum over frames
        derived, total = metric, df[column].sum()
    df[derived] = (df[column] / total) * 100.0
    return derived


_HWM_WEIGHT = "pm_sampled_ns"


def _derive_hwm(df, metric, inclusive, exclusive):
    """cproton's hardware counters (PM sampling, docs/hardware-metrics.md):
    for a metric X whose `X*ns` the profile has, the column `X (inc)` =
    `X*ns` / `pm_sampled_ns`, both summed over each frame's subtree (NaN
    where nothing was sampled). None when the profile has no `X*ns`: Proton
    has no such metric, so its names and errors stay as they were."""
    columns = list(inclusive) + list(exclusive)
    weighted = next((c for c in columns if c.lower() == f"{metric.lower()}*ns"), None)
    if weighted is None or _HWM_WEIGHT not in columns:
        return None
    np = _require("numpy")

    def subtree_sum(column):
        if column in inclusive:
            return df[f"{column} (inc)"]
        return df[column]  # not on the root: a kernel's own value

    weight = subtree_sum(_HWM_WEIGHT)
    name = f"{weighted[:-len('*ns')]} (inc)"
    df[name] = (subtree_sum(weighted) / weight.where(weight > 0)).astype(float).replace([np.inf], np.nan)
    return name


def _derive_raw(df, metric, inclusive, exclusive, device_info):
    hwm = _derive_hwm(df, metric, inclusive, exclusive)
    if hwm is not None:
        return hwm
    column = match_available_metrics(metric, inclusive, exclusive)[0]
    # Proton 3.9's vector metrics are lists in the column: nothing to print
    # or sum (Hatchet's renderer would fail on them with a numpy TypeError)
    if column in df and df[column].map(lambda v: isinstance(v, list)).any():
        raise ValueError(f"metric {column!r} holds vectors (arrays), not numbers")
    return column


def _rule(metric):
    """The derivation for a metric name (case-sensitive, like Proton)."""
    if metric == "util":
        return _derive_util
    if metric in derivable_metrics:
        return _derive_rate
    factors = _TIME_METRICS.get(metric.split("/")[0])
    if factors and metric in factors[0].factor:
        return _derive_time
    return _derive_percent if "/" in metric else _derive_raw


def derive_metrics(gf, metrics, inclusive_metrics, exclusive_metrics, device_info):
    """Adds the requested metrics to `gf.dataframe` and returns their column
    names, registering each in `gf.inc_metrics` (names ending `(inc)`) or
    `gf.exc_metrics`. Raw metrics are returned as their existing column."""
    derived = [
        _rule(metric)(gf.dataframe, metric, inclusive_metrics, exclusive_metrics, device_info) for metric in metrics
    ]
    for column in derived:
        (gf.inc_metrics if column.endswith("(inc)") else gf.exc_metrics).append(column)
    return derived


# ---------------------------------------------------------------------------
# Frame names and filters.

_NAME_FORMATS = {
    "file_function_line": lambda name: name.rpartition("/")[2],
    "function_line": lambda name: name.rpartition(":")[2],
    "file_function":
    lambda name: f"{name.rpartition('/')[2].partition(':')[0]}@{name.rpartition('@')[2].partition(':')[0]}",
}


def format_frames(gf, format):
    """Shortens frame names (`path/file.py:line@function`) in place:
    `file_function_line`, `function_line`, `file_function`; anything else
    (`full`, None) keeps them. Returns `gf`."""
    shorten = _NAME_FORMATS.get(format)
    if shorten is not None:
        gf.dataframe["name"] = gf.dataframe["name"].apply(shorten)
    return gf


def _name_query(path, regex):
    return f'\nMATCH {path}\nWHERE p."name" =~ "{regex}"\n'


def filter_frames(gf, include=None, exclude=None, threshold=None, metric=None):
    """A new GraphFrame (squashed) keeping the paths through frames whose
    name matches `include`, dropping frames matching `exclude` with their
    subtrees, and keeping frames whose `metric` is >= `threshold`. Empty
    and zero arguments filter nothing."""
    if include:
        gf = gf.filter(_name_query('("*")->(".", p)->("*")', include), squash=True)
    if exclude:
        negation = _require("hatchet.query").NegationQuery
        gf = gf.filter(negation(_name_query('(".", p)->("*")', exclude)), squash=True)
    if threshold:
        gf = gf.filter(["*", {metric: f">= {threshold}"}], squash=True)
    return gf


# ---------------------------------------------------------------------------
# The pipeline and printing.


def parse(metrics, filename, include=None, exclude=None, threshold=None):
    """Reads `filename`, derives `metrics` and filters on the first one:
    (GraphFrame, derived column names)."""
    gf, inclusive, exclusive, device_info = read(filename)
    derived = derive_metrics(gf, metrics, inclusive, exclusive, device_info)
    return filter_frames(gf, include, exclude, threshold, derived[0]), derived


def apply_diff_profile(gf, derived_metrics, diff_file, metrics, include, exclude, threshold):
    """`gf` minus the profile `diff_file` (parsed the same way), frame by
    frame, on the derived metrics only."""
    other, _ = parse(metrics, diff_file, include, exclude, threshold)
    inclusive = [m for m in derived_metrics if m.endswith("(inc)")]
    exclusive = [m for m in derived_metrics if not m.endswith("(inc)")]
    for frame in (gf, other):
        frame.inc_metrics, frame.exc_metrics = list(inclusive), list(exclusive)
    graphframe = _require("hatchet.graphframe")
    cython_helpers = graphframe._gfm_cy
    graphframe._gfm_cy = _MissingMarks(cython_helpers)
    try:
        return gf.sub(other)
    finally:
        graphframe._gfm_cy = cython_helpers


class _MissingMarks:
    """Hatchet's Cython helpers, with `insert_one_for_self_nodes` able to
    mark a read-only array (issue 22). Hatchet's `unify` (behind `sub`)
    passes `dataframe["_missing_node"].values` to that helper, which writes
    1 at the rows of `self` missing from `other`; its typed memoryview
    refuses the read-only view that pandas 3 (Copy-on-Write) returns, so
    every diff of profiles whose frames differ raised ValueError. Hatchet
    copies the marks right after the call and the frame is `sub`'s private
    copy, so writing through that view is what pandas 2 did: the marks are
    set the same way here, and the result is the same."""

    def __init__(self, helpers):
        self._helpers = helpers

    def __getattr__(self, name):
        return getattr(self._helpers, name)

    @staticmethod
    def insert_one_for_self_nodes(count, marks, indices):
        if not marks.flags.writeable:
            marks.flags.writeable = True  # a view of the private copy's writable column
        marks[indices[:count]] = 1


def emit_warnings(gf, metrics):
    """Warns when byte counts are negative (an overflow where they were counted)."""
    if "bytes (inc)" in metrics:
        if _require("numpy").nanmin(gf.dataframe["bytes (inc)"].values) < 0:
            print("Warning: Negative byte values detected, this is usually the result of a datatype overflow\n")


def _sorted_lines(gf, metric):
    """`name value` lines of every frame but the largest, by `metric` descending."""
    frames = gf.dataframe.sort_values(by=[metric], ascending=False)
    for position in range(1, len(frames)):
        row = frames.iloc[position]
        name = row["name"] if len(row["name"]) <= 100 else row["name"][:100] + "..."
        yield "{:105} {:.4}".format(name, row[metric])


def print_tree(gf, metrics, depth=100, format=None, print_sorted=False):
    """Prints the tree with `metrics` (the first one colored), then with
    `print_sorted` the frames sorted by the first metric."""
    gf = format_frames(gf, format)
    print(gf.tree(metric_column=metrics, expand_name=True, depth=depth, render_header=False))
    if print_sorted:
        print("Sorted kernels by metric " + metrics[0])
        for line in _sorted_lines(gf, metrics[0]):
            print(line)
    emit_warnings(gf, metrics)


def show_metrics(file_name):
    """Prints the metric names a profile offers, inclusive then exclusive."""
    with open(file_name, "r") as file:
        _, inclusive, exclusive, _ = get_raw_metrics(file)
    for title, columns in (("inclusive", inclusive), ("exclusive", exclusive)):
        print(f"Available {title} metrics:")
        for column in columns:
            print(f"- {_bare_name(column)}")
    columns = list(inclusive) + list(exclusive)
    counters = [c[:-len("*ns")] for c in columns if c.endswith("*ns")] if _HWM_WEIGHT in columns else []
    if counters:  # cproton's hardware counters: -m X derives X*ns / pm_sampled_ns
        print(f"Available hardware metrics (X*ns / {_HWM_WEIGHT}):")
        for counter in counters:
            print(f"- {counter}")


# ---------------------------------------------------------------------------
# Command line: proton-viewer's.

_LIST_HELP = """List available metrics. Metric names are case insensitive and ignore units.
Derived metrics can be created when source metrics are available.
- time/s, time/ms, time/us, time/ns: time
- avg_time/s, avg_time/ms, avg_time/us, avg_time/ns: time / count
- cpu_time/*, avg_cpu_time/*: the same on cpu_time
- flop[<8/16/32/64>]/s, gflop[<8/16/32/64>]/s, tflop[<8/16/32/64>]/s: flops / time
- byte/s, gbyte/s, tbyte/s: bytes / time
- util: max(sum(flops<width>) / peak_flops<width>_time, sum(bytes) / peak_bandwidth_time)
- <metric>/%%: frame(metric) / sum(metric). Only available for inclusive metrics (e.g. time)
- X for a hardware counter X*ns (cproton's PM sampling): X*ns / pm_sampled_ns (e.g. sm_throughput%%)
"""

_FORMAT_HELP = """Formatting the frame name.
- full: path, file name, function name and line number.
- file_function_line: file name, function name and line number.
- function_line: function name and line number.
- file_function: file name and function name.
"""

_OPTIONS = [
    (("-l", "--list"), dict(action="store_true", help=_LIST_HELP)),
    (("-m", "--metrics"),
     dict(type=str, default=None, help="Metrics to show, separated by commas: raw metrics (case insensitive,\n"
          "units ignored) or derived ones (see --list); the first one is colored.")),
    (("-i", "--include"),
     dict(type=str, default=None, help="Keep the paths through frames whose name matches this regular expression,\n"
          "e.g. -i \".*test.*\"")),
    (("-e", "--exclude"),
     dict(type=str, default=None, help="Drop the frames whose name matches this regular expression, with their\n"
          "subtrees.")),
    (("-t", "--threshold"),
     dict(type=float, default=None, help="Drop frames whose first metric is below this value.")),
    (("-d", "--depth"), dict(type=int, default=100, help="The depth of the tree to display")),
    (("-f", "--format"),
     dict(type=str, choices=["full", "file_function_line", "function_line", "file_function"], default="full",
          help=_FORMAT_HELP)),
    (("--print-sorted", ), dict(action="store_true", default=False,
                                help="After the tree, list the frames sorted by the first metric.")),
    (("--diff-profile", "-diff"),
     dict(type=str, default=None, help="Show FILE minus this profile, frame by frame, on the shown metrics.")),
]


def _argument_parser():
    parser = argparse.ArgumentParser(
        prog="python -m cproton.viewer",
        description="Performance data viewer for proton profiles (the Python twin of cproton-viewer).",
        formatter_class=argparse.RawTextHelpFormatter)
    for flags, options in _OPTIONS:
        parser.add_argument(*flags, **options)
    return parser


def main(argv=None):
    """proton-viewer's command line (`argv`: the arguments, default sys.argv[1:])."""
    args, files = _argument_parser().parse_known_args(argv)
    assert len(files) == 1, "Must specify a file to read"
    if args.include and args.exclude:
        raise ValueError("Cannot specify both include and exclude")
    if args.list:
        show_metrics(files[0])
    elif args.metrics:
        filters = (args.include, args.exclude, args.threshold)
        metrics = args.metrics.split(",")
        gf, derived = parse(metrics, files[0], *filters)
        if args.diff_profile:
            gf = apply_diff_profile(gf, derived, args.diff_profile, metrics, *filters)
        print_tree(gf, derived, args.depth, args.format, args.print_sorted)


if __name__ == "__main__":
    main()
