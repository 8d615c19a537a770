"""cproton.viewer against Proton's own Python viewer (triton.profiler.viewer 3.6).

Every function is run on both modules over the same profiles -- Proton 3.6's
outputs (tests/data/proton-3.6), profiles with known answers
(tests/golden/viewer/inputs) and cproton's own outputs (examples/results) --
and the results must agree: metric lists, device tables, dataframe columns
(values to 1e-12), the tree Hatchet renders, printed output, and for bad
requests the exception type and message. No GPU is involved. Skips when
Hatchet, pandas or triton is missing.
"""
import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("hatchet")
tv = pytest.importorskip("triton.profiler.viewer")
import cproton.viewer as cv  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROTON = ROOT / "tests" / "data" / "proton-3.6"
INPUTS = ROOT / "tests" / "golden" / "viewer" / "inputs"
OURS = ROOT / "examples" / "results"

TIME = ["time/s", "time/ms", "time/us", "time/ns", "avg_time/us", "time/%", "time", "count", "count/%"]
RATES = ["util", "byte/s", "gbyte/s", "tbyte/s", "flop8/s", "gflop16/s", "tflop16/s", "gflop32/s", "tflop/s"]
# file -> metrics to derive from it, one at a time and all together
FILES = {
    PROTON / "proton_python.hatchet": TIME,
    PROTON / "proton_hook.hatchet": TIME + ["util"],
    PROTON / "proton_shadow.hatchet": TIME,
    PROTON / "instrumentation_tree.hatchet": ["cycles", "normalized_cycles", "cycles/%", "time/ms"],
    PROTON / "pcsampling.hatchet": ["num_samples", "stalled_barrier/%", "stalled_wait", "count"],
    PROTON / "pcsampling_lines.hatchet": ["num_samples/%", "num_stalled_samples", "stalled_long_scoreboard/%"],
    INPUTS / "known.hatchet": TIME + RATES + ["cpu_time/ms", "avg_cpu_time/us", "bytes/%", "flops16/%"],
    INPUTS / "known_other.hatchet": ["util", "time/ms", "gbyte/s"],
    INPUTS / "hip.hatchet": ["util", "tflop16/s", "gflop32/s", "gbyte/s", "time/ms"],
    INPUTS / "cuda_archs.hatchet": ["util", "tflop16/s", "gflop32/s", "tflop64/s", "byte/s"],
    OURS / "proton_example.hatchet": TIME + ["util", "bytes", "flops32", "foo", "cpu_time/ms", "tflop32/s"],
    OURS / "triton_hook.hatchet": ["time/us", "bytes", "custom", "util", "gbyte/s", "tflop32/s", "flops32/%"],
    OURS / "python_context.hatchet": TIME,
    OURS / "native_injection.hatchet": TIME,
    OURS / "triton_instrumentation.hatchet": ["cycles", "normalized_time", "count/%", "normalized_cycles"],
}
BAD_METRICS = ["nosuch", "time/xx", "TIME/ms", "Time"]


def ids(path):
    return path.name.removesuffix(".hatchet") if isinstance(path, Path) else str(path)


def outcome(fn):
    """('ok', value) or ('raised', type name, message): both modules must give the same."""
    try:
        return ("ok", fn())
    except Exception as err:  # the comparison is the assertion
        return ("raised", type(err).__name__, str(err))


def same_outcome(fn_proton, fn_ours):
    """Runs both; asserts they raise alike; returns the two values (or None)."""
    theirs, ours = outcome(fn_proton), outcome(fn_ours)
    if theirs[0] == "raised" or ours[0] == "raised":
        assert ours == theirs
        return None
    return theirs[1], ours[1]


def tree(gf, metrics):
    return gf.tree(metric_column=metrics, expand_name=True, depth=100, render_header=False)


def assert_same_frames(theirs, ours, columns=None):
    """Same tree and same dataframe (the given columns, or all)."""
    assert sorted(ours.dataframe.columns) == sorted(theirs.dataframe.columns)
    columns = list(columns or sorted(theirs.dataframe.columns))
    a = theirs.dataframe[columns].reset_index(drop=True)
    b = ours.dataframe[columns].reset_index(drop=True)
    pd.testing.assert_frame_equal(b, a, check_exact=False, rtol=1e-12, atol=0)
    numeric = [c for c in columns if c != "name" and pd.api.types.is_numeric_dtype(a[c])]
    if numeric:
        assert tree(ours, numeric) == tree(theirs, numeric)


def test_same_names():
    """Every function, class and table of Proton's viewer, with the same parameters
    (cproton's `main` also takes an optional argv) and the same values."""
    import inspect
    for name, theirs in vars(tv).items():
        if inspect.isfunction(theirs) and theirs.__module__ == tv.__name__:
            ours = inspect.signature(getattr(cv, name)).parameters
            expected = inspect.signature(theirs).parameters
            assert list(ours)[:len(expected)] == list(expected), name
            assert all(p.default is not p.empty for p in list(ours.values())[len(expected):]), name
    assert cv.FactorDict._fields == tv.FactorDict._fields
    for table in ("time_factor_dict", "avg_time_factor_dict", "cpu_time_factor_dict", "avg_cpu_time_factor_dict",
                  "bytes_factor_dict", "default_flop_factor_dict", "derivable_metrics"):
        assert getattr(cv, table) == getattr(tv, table), table


def both_read(path):
    return tv.read(str(path)), cv.read(str(path))


@pytest.mark.parametrize("path", list(FILES), ids=ids)
def test_read(path):
    theirs, ours = both_read(path)
    assert ours[1:] == theirs[1:]  # inclusive, exclusive metrics, device info
    assert sorted(ours[0].inc_metrics) == sorted(theirs[0].inc_metrics)
    assert sorted(ours[0].exc_metrics) == sorted(theirs[0].exc_metrics)
    assert_same_frames(theirs[0], ours[0])


def derive_case(module, path, metrics):
    gf, inclusive, exclusive, device_info = module.read(str(path))
    derived = module.derive_metrics(gf, metrics, inclusive, exclusive, device_info)
    return gf, derived


@pytest.mark.parametrize("path,metric",
                         [(p, m) for p, ms in FILES.items() for m in ms] +
                         [(PROTON / "proton_hook.hatchet", m) for m in BAD_METRICS] +
                         [(INPUTS / "known.hatchet", m) for m in BAD_METRICS], ids=ids)
def test_derive_one(path, metric):
    values = same_outcome(lambda: derive_case(tv, path, [metric]), lambda: derive_case(cv, path, [metric]))
    if values:
        (theirs, derived_theirs), (ours, derived_ours) = values
        assert derived_ours == derived_theirs
        assert sorted(ours.inc_metrics) == sorted(theirs.inc_metrics)
        assert sorted(ours.exc_metrics) == sorted(theirs.exc_metrics)
        assert_same_frames(theirs, ours, ["name", *derived_theirs])


@pytest.mark.parametrize("path", list(FILES), ids=ids)
def test_derive_all(path):
    """All of a file's metrics at once (those Proton derives one by one)."""
    metrics = [m for m in FILES[path] if outcome(lambda: derive_case(tv, path, [m]))[0] == "ok"]
    (theirs, derived_theirs), (ours, derived_ours) = same_outcome(lambda: derive_case(tv, path, metrics),
                                                                  lambda: derive_case(cv, path, metrics))
    assert derived_ours == derived_theirs
    assert_same_frames(theirs, ours, ["name", *dict.fromkeys(derived_theirs)])


@pytest.mark.parametrize("path", [PROTON / "proton_python.hatchet", PROTON / "pcsampling_lines.hatchet",
                                  OURS / "python_context.hatchet"], ids=ids)
@pytest.mark.parametrize("format", ["full", "file_function_line", "function_line", "file_function", None])
def test_format_frames(path, format):
    theirs, ours = both_read(path)
    theirs, ours = tv.format_frames(theirs[0], format), cv.format_frames(ours[0], format)
    assert list(ours.dataframe["name"]) == list(theirs.dataframe["name"])


FILTERS = [
    (PROTON / "proton_hook.hatchet", "time/ns", dict(include="it1")),
    (PROTON / "proton_hook.hatchet", "time/ns", dict(include=".*kernel.*")),
    (PROTON / "proton_hook.hatchet", "time", dict(exclude="it")),
    (PROTON / "proton_hook.hatchet", "time/ns", dict(threshold=20000)),
    (PROTON / "proton_hook.hatchet", "time", dict(threshold=20000)),
    (PROTON / "proton_python.hatchet", "time/ms", dict(exclude=".*test.*")),
    (PROTON / "proton_python.hatchet", "time/ms", dict(include="", exclude="", threshold=0)),
    (INPUTS / "known.hatchet", "tflop16/s", dict(threshold=100)),
    (INPUTS / "known.hatchet", "util", dict(threshold=0.2)),
    (OURS / "triton_hook.hatchet", "time/us", dict(include=".*add.*")),
    (PROTON / "pcsampling_lines.hatchet", "num_samples", dict(exclude=".*:2[0-9]@.*", threshold=10)),
]


@pytest.mark.parametrize("path,metric,filters", FILTERS, ids=ids)
def test_filter_frames(path, metric, filters):
    (theirs, derived), (ours, _) = derive_case(tv, path, [metric]), derive_case(cv, path, [metric])
    theirs, ours = same_outcome(lambda: tv.filter_frames(theirs, metric=derived[0], **filters),
                                lambda: cv.filter_frames(ours, metric=derived[0], **filters))
    assert_same_frames(theirs, ours, ["name", derived[0]])


@pytest.mark.parametrize("path,metrics,filters", [(p, [m], f) for p, m, f in FILTERS] +
                         [(INPUTS / "known.hatchet", ["util", "time/ms", "count"], {})], ids=ids)
def test_parse(path, metrics, filters):
    (theirs, derived_theirs), (ours, derived_ours) = same_outcome(lambda: tv.parse(metrics, str(path), **filters),
                                                                  lambda: cv.parse(metrics, str(path), **filters))
    assert derived_ours == derived_theirs
    assert_same_frames(theirs, ours, ["name", *derived_theirs])


@pytest.mark.parametrize("path", [INPUTS / "known.hatchet", INPUTS / "hip.hatchet", INPUTS / "cuda_archs.hatchet",
                                  OURS / "triton_hook.hatchet", OURS / "proton_example.hatchet",
                                  PROTON / "proton_hook.hatchet"], ids=ids)
@pytest.mark.parametrize("helper", ["get_min_time_flops", "get_min_time_bytes"])
def test_min_time(path, helper):
    theirs, ours = both_read(path)
    values = same_outcome(lambda: getattr(tv, helper)(theirs[0].dataframe, theirs[3]),
                          lambda: getattr(cv, helper)(ours[0].dataframe, ours[3]))
    if values:
        pd.testing.assert_frame_equal(values[1].reset_index(drop=True), values[0].reset_index(drop=True),
                                      check_exact=False, rtol=1e-12, atol=0)


DIFFS = [
    (PROTON / "proton_hook.hatchet", PROTON / "proton_shadow.hatchet", ["time/us", "count"], (None, None, None)),
    (PROTON / "proton_python.hatchet", PROTON / "proton_hook.hatchet", ["time/us"], (None, None, None)),
    (INPUTS / "known.hatchet", INPUTS / "known_other.hatchet", ["util", "time/ms"], (None, None, None)),
    (INPUTS / "known.hatchet", INPUTS / "known_other.hatchet", ["gbyte/s", "time/%"], (None, None, 0.0)),
    (PROTON / "proton_hook.hatchet", PROTON / "proton_shadow.hatchet", ["time/ns"], ("it1", None, None)),
]


@pytest.mark.parametrize("left,right,metrics,filters", DIFFS, ids=ids)
def test_apply_diff_profile(left, right, metrics, filters):
    def diff(module):
        gf, derived = module.parse(metrics, str(left), *filters)
        return module.apply_diff_profile(gf, derived, str(right), metrics, *filters), derived

    (theirs, derived), (ours, _) = diff(tv), diff(cv)
    assert ours.inc_metrics == theirs.inc_metrics and ours.exc_metrics == theirs.exc_metrics
    assert_same_frames(theirs, ours, ["name", *derived])


def copy_on_write():
    """Pandas' Copy-on-Write: always on from pandas 3, an option before."""
    if int(pd.__version__.split(".")[0]) >= 3:
        return contextlib.nullcontext()
    return pd.option_context("mode.copy_on_write", True)


@pytest.mark.parametrize("left,right,metrics,filters", DIFFS, ids=ids)
def test_apply_diff_profile_copy_on_write(left, right, metrics, filters):
    """Issue 22: under Copy-on-Write `Series.values` is read-only and
    Hatchet's `sub` raised ValueError from its Cython helper. cproton's diff
    works there and equals Hatchet's `sub` without Copy-on-Write (pandas 2),
    and leaves its input frame as it was."""
    if int(pd.__version__.split(".")[0]) >= 3:
        pytest.skip("the reference (Hatchet's sub without Copy-on-Write) needs pandas 2")
    gf, derived = tv.parse(metrics, str(left), *filters)
    reference = tv.apply_diff_profile(gf, derived, str(right), metrics, *filters)
    with copy_on_write():
        gf, derived = cv.parse(metrics, str(left), *filters)
        before = gf.dataframe.copy()
        ours = cv.apply_diff_profile(gf, derived, str(right), metrics, *filters)
        pd.testing.assert_frame_equal(gf.dataframe, before)
    assert ours.inc_metrics == reference.inc_metrics and ours.exc_metrics == reference.exc_metrics
    assert_same_frames(reference, ours, ["name", *derived])

CLI = [
    ["-m", "time/ms", PROTON / "proton_python.hatchet"],
    ["-m", "time/%,avg_time/us", "--print-sorted", PROTON / "proton_hook.hatchet"],
    ["-m", "cycles,normalized_cycles", PROTON / "instrumentation_tree.hatchet"],
    ["-l", PROTON / "pcsampling.hatchet"],
    ["-l", OURS / "proton_example.hatchet"],
    ["-m", "time/us,count", "-diff", PROTON / "proton_shadow.hatchet", PROTON / "proton_hook.hatchet"],
    ["-m", "time", "-t", "20000", PROTON / "proton_hook.hatchet"],
    ["-m", "time", "-e", "it", PROTON / "proton_hook.hatchet"],
    ["-m", "time/ns", "--include", "it1", "--depth", "2", PROTON / "proton_hook.hatchet"],
    ["-m", "time/s", "-f", "file_function", "-d", "4", PROTON / "proton_python.hatchet"],
    ["-m", "avg_time/ns", "-f", "function_line", PROTON / "proton_python.hatchet"],
    ["-m", "util,tflop16/s,gflop32/s", INPUTS / "hip.hatchet"],
    ["-m", "flops16/%,bytes", "--print-sorted", INPUTS / "known.hatchet"],
    ["-m", "util,time/ms", "--diff-profile", INPUTS / "known_other.hatchet", INPUTS / "known.hatchet"],
    ["-m", "time/ms,bytes,custom", OURS / "triton_hook.hatchet"],
    ["-m", "time/ms", "-i", "a", "-e", "b", PROTON / "proton_hook.hatchet"],  # ValueError
    ["-m", "nosuch", PROTON / "proton_hook.hatchet"],  # RuntimeError
    [PROTON / "proton_hook.hatchet"],  # no metric: prints nothing
]


def run_main(main, argv, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["proton-viewer", *argv])
    result = outcome(main)
    return result, capsys.readouterr().out


@pytest.mark.parametrize("argv", CLI, ids=lambda a: " ".join(ids(x) for x in a))
def test_main(argv, monkeypatch, capsys):
    argv = [str(a) for a in argv]
    assert run_main(cv.main, argv, monkeypatch, capsys) == run_main(tv.main, argv, monkeypatch, capsys)


def test_python_dash_m(capsys):
    """`python -m cproton.viewer` is proton-viewer's command line."""
    help_text = subprocess.run([sys.executable, "-m", "cproton.viewer", "-h"], capture_output=True, text=True,
                               check=True).stdout
    assert "--diff-profile" in help_text and "--print-sorted" in help_text
    argv = ["-m", "time/ms,count", "-d", "3", str(PROTON / "proton_hook.hatchet")]
    printed = subprocess.run([sys.executable, "-m", "cproton.viewer", *argv], capture_output=True, text=True,
                             check=True).stdout
    cv.main(argv)
    assert printed == capsys.readouterr().out and "ROOT" in printed


def test_missing_hatchet(monkeypatch):
    """Without Hatchet the module still imports; using it says what to install."""
    monkeypatch.setitem(sys.modules, "hatchet", None)
    assert "time/ms" in cv.time_factor_dict.factor
    with pytest.raises(ImportError, match="pip install llnl-hatchet"):
        cv.read(str(PROTON / "proton_hook.hatchet"))


def test_profile_without_device_table_or_frames(tmp_path):
    """Deliberate differences (Proton raises IndexError): a profile without the
    device table reads with an empty one; a profile with no frame left after
    dropping launch-metadata frames and empty leaves is a ValueError naming it."""
    root = {"frame": {"name": "ROOT", "type": "function"}, "metrics": {},
            "children": [{"frame": {"name": "k", "type": "function"}, "metrics": {"time (ns)": 5, "count": 1},
                          "children": []}]}
    (tmp_path / "bare.hatchet").write_text(json.dumps([root]))
    gf, inclusive, _, device_info = cv.read(str(tmp_path / "bare.hatchet"))
    assert device_info == {} and list(gf.dataframe["name"]) == ["ROOT", "k"]
    metadata = {"frame": {"name": cv.COMPUTE_METADATA_SCOPE_NAME, "type": "function"}, "metrics": {"count": 1},
                "children": []}
    (tmp_path / "empty.hatchet").write_text(json.dumps([dict(root, children=[metadata]), {}]))
    with pytest.raises(ValueError, match="empty.hatchet: no frame with metrics"):
        cv.read(str(tmp_path / "empty.hatchet"))


def test_vector_metrics_are_refused_by_name_and_others_still_shown(capsys):
    """Proton 3.9's vector metrics (tests/golden/viewer/inputs/proton39_vectors.hatchet,
    written by its libproton) are lists in the dataframe: asking for one says so,
    instead of Hatchet's numpy TypeError; a number beside them prints."""
    path = str(INPUTS / "proton39_vectors.hatchet")
    with pytest.raises(ValueError, match="metric 'v' holds vectors"):
        cv.main(["-m", "v", path])
    cv.main(["-m", "x", path])
    assert "4.000 a" in capsys.readouterr().out


def test_frame_with_metrics_stays_when_its_children_are_pruned(capsys):
    """Deliberate difference (issue 24, item 11): a CPU scope holding flops whose
    nested scopes hold nothing stays, and so does a scope whose only child is a
    launch-metadata frame; Proton drops them and, here, everything (IndexError)."""
    path = str(INPUTS / "nested_cpu.hatchet")
    gf, inclusive, _, _ = cv.read(path)
    assert sorted(gf.dataframe["name"]) == ["ROOT", "launcher", "outer"]
    assert inclusive == ["flops"]
    with pytest.raises(IndexError):
        tv.read(path)
    cv.main(["-m", "flops", path])
    out = capsys.readouterr().out
    assert "100.000 outer" in out and "5.000 launcher" in out and "105.000 ROOT" in out


def test_hardware_counter_columns(tmp_path, capsys):
    """cproton's addition (no Proton file has them): a profile of the
    PM-sampling mode stores pm_sampled_ns and X*ns per kernel; -m X is
    X*ns / pm_sampled_ns over each frame's subtree, NaN where nothing was
    sampled, the same numbers the C viewer prints
    (tests/tools/hwm_viewer_test.sh). Proton's viewer knows no such metric."""
    def node(name, metrics=None, children=()):
        return {"frame": {"name": name, "type": "function"}, "metrics": metrics or {}, "children": list(children)}

    def kernel(name, ns, sampled=None, sm=0, dram=0):
        m = {"count": 1, "time (ns)": ns, "device_id": "0", "device_type": "CUDA"}
        if sampled is not None:
            m.update({"pm_sampled_ns": sampled, "pm_unsampled_ns": ns - sampled, "pm_samples": sampled // 100_000,
                      "pm_shared_samples": 0, "sm_throughput%*ns": sm * sampled, "dram_throughput%*ns": dram * sampled})
        return node(name, m)

    root = {"count": 0, "time (ns)": 0, "pm_sampled_ns": 0, "sm_throughput%*ns": 0, "dram_throughput%*ns": 0}
    profile = [node("ROOT", root, [
        node("fwd", {}, [kernel("k1", 1_000_000, 800_000, 50, 90), kernel("k2", 500_000, 200_000, 10, 20),
                         kernel("short", 1000, 0)]),
        node("bwd", {}, [kernel("plain", 2000)])]),
        {"CUDA": {"0": {"arch": "90", "bus_width": 5120, "clock_rate": 1755000, "memory_clock_rate": 2619000,
                        "num_sms": 132}}}]
    path = tmp_path / "hw.hatchet"
    path.write_text(json.dumps(profile))
    gf, columns = cv.parse(["sm_throughput%", "DRAM_THROUGHPUT%"], str(path))
    assert columns == ["sm_throughput% (inc)", "dram_throughput% (inc)"]
    df = gf.dataframe.set_index("name")
    for name, sm, dram in [("ROOT", 42, 76), ("fwd", 42, 76), ("k1", 50, 90), ("k2", 10, 20)]:
        assert df.loc[name, columns[0]] == pytest.approx(sm) and df.loc[name, columns[1]] == pytest.approx(dram)
    for name in ("short", "plain", "bwd"):
        assert df.loc[name, columns].isna().all(), name
    with pytest.raises(RuntimeError, match="Metric sm_throughput% is not found"):
        tv.parse(["sm_throughput%"], str(path))
    cv.show_metrics(str(path))
    listed = capsys.readouterr().out
    assert "Available hardware metrics (X*ns / pm_sampled_ns):\n- sm_throughput%\n- dram_throughput%\n" in listed
