"""One behaviour per Proton version (cproton._compat): which version is
chosen (CPROTON_PROTON_VERSION, the installed Triton), and each difference
between Proton 3.6 and 3.9 that the CPU can show, under both versions --
the behaviours Proton 3.9's own tests (test_api, test_profile, test_cmd,
test_lib) check, with the fake backend standing in for the GPU."""
import json
import types

import pytest

import cproton as proton
from cproton import _compat
from cproton import _cproton as C

from conftest import load_tree
from test_tensor_metrics import FakeTensor


@pytest.fixture(params=[(3, 6), (3, 9)], ids=["proton36", "proton39"])
def version(request):
    before = _compat.PROTON_VERSION
    _compat.apply(request.param)
    yield request.param
    _compat.apply(before)


@pytest.fixture
def proton39():
    before = _compat.PROTON_VERSION
    _compat.apply((3, 9))
    yield
    _compat.apply(before)


# ---- which version -------------------------------------------------------------------


@pytest.mark.parametrize("env,triton,want", [
    (None, None, (3, 6)),
    (None, "3.6.0", (3, 6)),
    (None, "3.8.0", (3, 6)),
    (None, "3.9.0", (3, 9)),
    (None, "3.10.0+git1234", (3, 9)),
    ("3.9", "3.6.0", (3, 9)),
    ("3.6", "3.9.0", (3, 6)),
    ("3.7", "3.9.0", (3, 6)),
    ("", "3.9.0", (3, 9)),
])
def test_version_from_switch_then_triton(env, triton, want):
    assert _compat.decide(env, triton) == want


@pytest.mark.parametrize("env", ["39", "3.5", "4.0", "latest"])
def test_bad_switch_is_refused_with_its_name(env):
    with pytest.raises(ValueError, match="CPROTON_PROTON_VERSION"):
        _compat.decide(env, "3.6.0")


def test_switch_reaches_a_fresh_process(tmp_path):
    import os
    import subprocess
    import sys
    code = "import cproton._compat as c; print(c.PROTON_VERSION, c._cproton.proton_compat())"
    for value, want in (("3.9", "(3, 9) 309"), ("3.6", "(3, 6) 306")):
        env = dict(os.environ, CPROTON_PROTON_VERSION=value)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == want


def test_c_library_refuses_other_versions():
    with pytest.raises(ValueError, match="unknown Proton version 307"):
        C.set_proton_compat(307)


# ---- metrics -------------------------------------------------------------------------


def test_type_mismatch_names_int64_under_39(version):
    proton.start("m", backend="none")
    proton.enter_scope("s", metrics={"a": 1.0})
    with pytest.raises(RuntimeError) as e:
        proton.exit_scope(metrics={"a": 1})
    proton.finalize()
    new = "int64_t" if version == (3, 9) else "uint64_t"
    assert f"Metric value type mismatch for valueId 0 (a): current=double, new={new}" in str(e.value)


def test_string_metrics_only_under_36(version):
    proton.start("m", backend="none")
    if version == (3, 6):
        with proton.scope("s", {"a (pty)": "1"}):
            pass
        proton.finalize()
        assert load_tree("m.hatchet")["s"]["@"]["a"] == "1"
    else:
        with pytest.raises(TypeError, match="incompatible function arguments"):
            proton.enter_scope("s", metrics={"a (pty)": "1"})
        proton.finalize()


def test_count_is_a_user_metric_under_39(version):
    """Proton 3.9's test_periodic_flushing gives every scope {"count": 1}."""
    sid = proton.start("m", backend="fake")
    if version == (3, 6):
        with pytest.raises(ValueError, match="metric name 'count' is reserved"):
            proton.scope("s", {"count": 1}).__enter__()
        proton.finalize(sid)
        return
    with proton.scope("s", {"count": 1}):
        C._fake_launch("k")
    proton.finalize(sid)
    with open("m.hatchet") as f:
        text = f.read()
    tree = load_tree("m.hatchet")
    assert tree["s"]["@"]["count"] == 1 and tree["s"]["k"]["@"]["count"] == 1
    # ROOT's zeroed kernel "count" and the user metric's zero are one key
    assert json.loads(text)[0]["metrics"] == {"count": 0, "time (ns)": 0}


def test_roofline_metrics_keep_their_types_under_39(version):
    proton.start("m", backend="none")
    with proton.scope("s", {"flops": 1, "bytes": 3.0, "custom": 4}):
        pass
    proton.finalize()
    m = load_tree("m.hatchet")["s"]["@"]
    if version == (3, 9):
        assert (m["flops"], type(m["flops"]), m["bytes"], type(m["bytes"])) == (1.0, float, 3, int)
    else:
        assert (type(m["flops"]), type(m["bytes"])) == (int, float)
    assert m["custom"] == 4 and type(m["custom"]) is int


def test_transform_tensor_metrics():
    """Proton 3.9's test_api.py::test_roofline_scalar_metric_types, with a
    stand-in for CPU torch tensors."""
    scalars, tensors = proton.metric.transform_tensor_metrics({
        "flops": 1, "flops16": 2, "flops32": [5, 6], "flops64": FakeTensor([7, 8], device="cpu"), "bytes": 3.0,
        "custom": 4
    })
    assert tensors == {}
    assert scalars == {"flops": 1.0, "flops16": 2.0, "flops32": [5.0, 6.0], "flops64": [7.0, 8.0], "bytes": 3,
                       "custom": 4}
    assert [type(scalars[k]) for k in ("flops", "flops16", "bytes", "custom")] == [float, float, int, int]
    scalars, tensors = proton.metric.transform_tensor_metrics({"bytes": FakeTensor([9.0, 10.0], device="cpu")})
    assert tensors == {} and scalars == {"bytes": [9, 10]}
    proton.metric.set_metric_kernels()  # nothing to compile: cproton's copy kernel compiles on first use
    assert proton.metric.FLOPS_WIDTHS == (8, 16, 32, 64)


# ---- states ----------------------------------------------------------------------------


def test_metadata_state_of_a_kernel(version):
    """Proton 3.9's metadata_state("foo") is the frames
    __proton_launch_metadata/foo; 3.6 has one frame of that name."""
    from cproton.state import COMPUTE_METADATA_SCOPE_NAME, COMPUTE_METADATA_SCOPE_PREFIX
    assert COMPUTE_METADATA_SCOPE_NAME == "__proton_launch_metadata"
    assert COMPUTE_METADATA_SCOPE_PREFIX == "__proton_launch_metadata:"
    sid = proton.start("m", backend="fake")
    with proton.scope("s"):
        with proton.metadata_state("foo"):
            C._fake_launch("helper")
        with proton.metadata_state():
            C._fake_launch("other")
    proton.finalize(sid)
    t = load_tree("m.hatchet")["s"]
    if version == (3, 9):
        assert t["__proton_launch_metadata"]["foo"]["helper"]["@"]["count"] == 1
    else:
        assert t["__proton_launch_metadata:foo"]["helper"]["@"]["count"] == 1
    assert t["__proton_launch_metadata"]["other"]["@"]["count"] == 1


# ---- the launch hook -------------------------------------------------------------------

knobs = pytest.importorskip("triton.knobs")
from triton.compiler.compiler import LazyDict  # noqa: E402


def launch(name, meta_fn=None):
    lazy = LazyDict({"name": name, "function": 1234, "stream": 0})
    if meta_fn is not None:
        lazy.add(meta_fn, (None, None, {}))
    knobs.runtime.launch_enter_hook(lazy)
    C._fake_launch(name)
    knobs.runtime.launch_exit_hook(lazy)


def test_launch_metadata_kernels_under_the_kernels_metadata_state(version):
    """Proton 3.9's test_hook_launch_context: a kernel launched by
    launch_metadata sits under __proton_launch_metadata/<kernel> (3.9)."""

    def meta(grid, metadata, args):
        C._fake_launch("helper")
        return {"name": "foo_meta", "flops": 1.0}

    sid = proton.start("h", backend="fake", hook="triton")
    launch("foo", meta)
    proton.finalize(sid)
    t = load_tree("h.hatchet")
    helper_parent = t["__proton_launch_metadata"]["foo"] if version == (3, 9) else t["__proton_launch_metadata"]
    assert helper_parent["helper"]["@"]["count"] == 1
    assert t["foo_meta"]["@"]["flops"] == 1.0


def test_launch_hook_configure_filters_before_metadata(proton39):
    """Proton 3.9's test_hook_launch_filter: LaunchHook().configure(include=
    ...) and start(hook=<the hook>); a filtered kernel's metadata function
    is never called."""
    called = []

    def meta_of(name):
        def meta(grid, metadata, args):
            called.append(name)
            return {"name": f"{name}_meta", "flops": 1.0}

        return meta

    hook = proton.hooks.launch.LaunchHook()
    hook.configure(include=".*foo")
    try:
        sid = proton.start("h", backend="fake", hook=hook)
        with proton.scope("test0"):
            launch("foo", meta_of("foo"))
            launch("bar", meta_of("bar"))
            launch("xfoo_not_at_start", None)
        proton.finalize(sid)
    finally:
        hook.configure(include=None, exclude=None)
    assert called == ["foo"]
    t = load_tree("h.hatchet")["test0"]
    assert "foo_meta" in t and "bar_meta" not in t
    assert t["bar"]["@"]["count"] == 1  # still profiled, without metadata


def test_launch_hook_configure_anchors_like_re_match():
    hook = proton.hooks.launch.LaunchHook()
    assert hook is proton.hooks.launch.LaunchHook()  # a singleton, as in Proton
    hook.configure(exclude="add")
    try:
        sid = proton.start("h", backend="fake", hook="triton")
        launch("add_kernel", lambda g, m, a: {"flops": 1.0})
        launch("fused_add", lambda g, m, a: {"flops": 2.0})
        proton.finalize(sid)
    finally:
        hook.configure()
    t = load_tree("h.hatchet")
    assert "flops" not in t["add_kernel"]["@"] and t["fused_add"]["@"]["flops"] == 2.0


def test_unknown_hook_text(version):
    want = "Unsupported hook: 'bogus'" if version == (3, 9) else "unknown hook 'bogus'"
    with pytest.raises(ValueError, match=want):
        proton.start("h", backend="none", hook="bogus")


# ---- backends, ROCm, the viewer --------------------------------------------------------


@pytest.mark.parametrize("target", ["cuda", "hip", "invalid_triton_backend"])
def test_select_backend_without_argument(version, target, monkeypatch):
    import triton
    from cproton.profile import _select_backend
    driver = types.SimpleNamespace(get_current_target=lambda: types.SimpleNamespace(backend=target))
    monkeypatch.setattr(triton.runtime.driver, "_active", driver, raising=False)
    monkeypatch.setattr(type(triton.runtime.driver), "active", property(lambda self: driver), raising=False)
    if target == "cuda":
        assert _select_backend() == "cupti"
    elif target == "hip":
        assert _select_backend() == ("rocprofiler" if version == (3, 9) else "roctracer")
    else:
        want = ("No profiler registered for triton backend invalid_triton_backend"
                if version == (3, 9) else "No backend is available for the current target.")
        with pytest.raises(ValueError, match=want):
            _select_backend()


def test_rocm_runtime_without_therock(monkeypatch):
    """Proton 3.9's test_cmd.py::test_configure_runtime_without_therock."""
    from cproton import _rocm
    monkeypatch.setattr(_rocm, "find_therock_rocm_libraries", lambda: None)
    assert _rocm.configure_runtime() is None
    assert _rocm.find_therock_rocm_libraries() is None


def test_viewer_reads_a_parsed_profile():
    """Proton 3.9's get_raw_metrics takes the profile cproton.data.get
    returns (3.6's takes an open file); the metadata frames of both
    versions are left out."""
    pytest.importorskip("hatchet")
    import cproton.viewer as viewer
    sid = proton.start("v", backend="fake")
    with proton.scope("test"):
        C._fake_launch("foo")
        C._fake_launch("foo")
    with proton.metadata_state("foo"):
        C._fake_launch("helper")
    proton.deactivate(sid, flushing=True)
    database = proton.data.get(sid)
    proton.finalize(sid)
    gf, inclusive, _, _ = viewer.get_raw_metrics(database)
    assert "count" in inclusive
    names = {str(n.frame["name"]) for n in gf.graph.traverse()}
    assert "foo" in names and "helper" not in names
    with open("v.hatchet") as f:
        gf2, _, _, _ = viewer.get_raw_metrics(f)
    assert len(gf2.dataframe) == len(gf.dataframe)


# ---- Proton 3.9's Chrome trace (io/chrome_trace39.c) ------------------------------------


def test_trace_scopes_metrics_flows_under_39(proton39):
    """Proton 3.9's test_trace_flexible_metrics_scope_ranges with the fake
    backend: one event per scope ("metric" when it has metrics), kernels with
    call stacks, a flow per kernel launched in a scope."""
    proton.start("t", data="trace", backend="fake")
    with proton.scope("scope_3", metrics={"m3": 3.0}):
        with proton.scope("scope_2", metrics={"m2": 2.0}):
            with proton.scope("scope_1", metrics={"m1": 1.0}):
                C._fake_launch("foo")
            with proton.scope("scope_4"):
                C._fake_launch("foo")
            with proton.scope("scope_5"):
                C._fake_launch("foo")
        with proton.scope("scope_6"):
            with proton.scope("scope_7"):
                C._fake_launch("foo")
    proton.finalize()
    with open("t.chrome_trace") as f:
        data = json.load(f)
    import time
    assert abs(time.time_ns() - data["baseTimeNanoseconds"]) < 24 * 3600 * 10**9
    events = data["traceEvents"]
    by_cat = {cat: [e for e in events if e.get("cat") == cat] for cat in ("kernel", "metric", "scope", "flow")}
    assert [len(by_cat[c]) for c in ("kernel", "metric", "scope", "flow")] == [4, 3, 4, 8]
    assert {tuple(e["args"]["call_stack"]) for e in by_cat["kernel"]} == {
        ("ROOT", "scope_3", "scope_2", "scope_1", "foo"), ("ROOT", "scope_3", "scope_2", "scope_4", "foo"),
        ("ROOT", "scope_3", "scope_2", "scope_5", "foo"), ("ROOT", "scope_3", "scope_6", "scope_7", "foo")}
    metrics = {next(iter(e["args"]["metrics"])): (e["name"], tuple(e["args"]["call_stack"]), e["args"]["metrics"])
               for e in by_cat["metric"]}
    assert metrics == {
        "m1": ("scope_1: <m1, 1.000000>", ("ROOT", "scope_3", "scope_2", "scope_1"), {"m1": "1.000000"}),
        "m2": ("scope_2: <m2, 2.000000>", ("ROOT", "scope_3", "scope_2"), {"m2": "2.000000"}),
        "m3": ("scope_3: <m3, 3.000000>", ("ROOT", "scope_3"), {"m3": "3.000000"}),
    }
    gpu_tid = by_cat["kernel"][0]["tid"]
    cpu_tid = by_cat["metric"][0]["tid"]
    starts = {e["id"]: e for e in by_cat["flow"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in by_cat["flow"] if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) == 4
    assert all(e["name"] == "launch->kernel" and e["bp"] == "e" and e["tid"] == cpu_tid for e in starts.values())
    assert all(e["name"] == "launch->kernel" and e["bp"] == "e" and e["tid"] == gpu_tid for e in ends.values())
    # as Proton 3.9, a flow starts where the scope the kernel was launched in starts
    scope_starts = {e["ts"] for e in by_cat["metric"] + by_cat["scope"] if e["tid"] == cpu_tid}
    assert all(e["ts"] in scope_starts for e in starts.values())
    scope = next(e for e in by_cat["scope"] if e["name"] == "scope_4")
    kernel = next(e for e in by_cat["kernel"] if e["args"]["call_stack"][-2] == "scope_4")
    # the fake backend's kernels run after their scope: only the order of launch and scope holds
    assert scope["ts"] <= kernel["ts"] and isinstance(scope["args"]["scope_id"], int)


def test_trace_of_metrics_only(version):
    """Proton 3.9's test_trace_flexible_metrics_no_kernel_anchor; under 3.6
    a trace holds kernels only."""
    proton.start("t", data="trace", backend="none")
    with proton.scope("metric_only", metrics={"foo": 1.0}):
        pass
    proton.finalize()
    with open("t.chrome_trace") as f:
        events = json.load(f)["traceEvents"]
    if version == (3, 6):
        assert events == []
        return
    assert len(events) == 1
    e = events[0]
    assert (e["cat"], e["name"], e["args"]["call_stack"], e["args"]["metrics"]) == (
        "metric", "metric_only: <foo, 1.000000>", ["ROOT", "metric_only"], {"foo": "1.000000"})
    assert isinstance(e["args"]["scope_id"], int)


def test_metadata_tensor_copies_under_the_kernels_state(version):
    """Proton 3.9 launches the metric kernels of a launch's metadata under
    that kernel's metadata state; cproton's copy kernels follow."""
    from cproton import metric
    from test_tensor_metrics import KernelBuffer

    metric.use_fake_device()
    with metric._recorder.lock:
        metric._recorder.factory = lambda capacity, device: KernelBuffer(capacity)
    try:
        sid = proton.start("h", backend="fake", hook="triton")
        launch("foo", lambda g, m, a: {"name": "foo_test", "flops": FakeTensor(8.0)})
        proton.finalize(sid)
    finally:
        metric.use_fake_device(False)
    t = load_tree("h.hatchet")
    assert t["foo_test"]["@"]["flops"] == 8.0
    metadata = t["__proton_launch_metadata"]
    copies = metadata["foo"] if version == (3, 9) else metadata
    # Proton 3.9 names its metric kernels' frames "<metric>"
    frame = "<metric>" if version == (3, 9) else "_cproton_tensor_metric"
    assert copies[frame]["@"]["count"] == 1


def test_kernel_unload_reaches_the_hooks():
    """Triton 3.9's kernel_unload_hook chain calls Hook.destroy_handle
    (Proton 3.9); Triton 3.6 has no such chain."""
    if not hasattr(knobs.runtime, "kernel_unload_hook"):
        pytest.skip("Triton before 3.9 unloads no kernel through a hook")
    seen = []

    class Recorder(proton.hooks.hook.Hook):
        def init_handle(self, *args):
            pass

        def enter(self, metadata):
            pass

        def exit(self, metadata):
            pass

        def activate(self):
            pass

        def deactivate(self):
            pass

        def destroy_handle(self, module, function, name, metadata_group, hash):
            seen.append(name)

    sid = proton.start("h", backend="fake", hook=Recorder())
    knobs.runtime.kernel_unload_hook(None, 1, "k", {}, "h")
    proton.finalize(sid)
    knobs.runtime.kernel_unload_hook(None, 1, "k2", {}, "h")  # unregistered at finalize
    assert seen == ["k"]


def test_kernels_launched_by_launch_metadata_are_not_hooked_under_39(version):
    """Proton 3.9's test_tensor_metrics_cudagraph_hook: a Triton kernel
    launched inside launch_metadata is a plain kernel under the metadata
    state (3.9's LaunchHook does not re-enter); cproton under 3.6 hooks it
    (an op named by its own metadata, which ignores the state)."""

    def inner_meta(grid, metadata, args):
        return {"name": "helper_meta"}

    def outer_meta(grid, metadata, args):
        launch("metadata_helper_kernel", inner_meta)
        return {"name": "owner", "flops": 1.0}

    sid = proton.start("h", backend="fake", hook="triton")
    launch("owner_kernel", outer_meta)
    proton.finalize(sid)
    t = load_tree("h.hatchet")
    if version == (3, 9):
        helper = t["__proton_launch_metadata"]["owner_kernel"]["metadata_helper_kernel"]
        assert helper["@"]["count"] == 1 and "helper_meta" not in t
    else:
        assert t["helper_meta"]["@"]["count"] == 1
    assert t["owner"]["@"]["flops"] == 1.0


# what backend/cupti/records.c logs for a graph built before profiling began
_UNKNOWN_GRAPH = ("cupti: Cannot find graph for graphExecId: 7: its kernels land under the launch "
                  "context without <captured_at>; to see where they were captured, start "
                  "profiling before the graph is created")


def test_unknown_graph_warning_reaches_stderr_under_39(version, monkeypatch, capfd, recwarn):
    """Proton 3.9 prints "Cannot find graph for graphExecId:" to stderr
    (its test_cudagraph_not_captured_by_profiler reads it with capfd);
    Proton 3.6 has no such line: cproton's CprotonWarning stays."""
    from cproton import _log
    monkeypatch.setattr(_log._cproton, "drain_log", lambda: [(2, _UNKNOWN_GRAPH), (2, "other")])
    _log.drain()
    err = capfd.readouterr().err
    texts = [str(w.message) for w in recwarn.list]
    if version == (3, 9):
        assert err.count("[PROTON] Cannot find graph for graphExecId: 7: its kernels") == 1
        assert texts == ["other"]
    else:
        assert "Cannot find graph" not in err
        assert texts == [_UNKNOWN_GRAPH, "other"]
