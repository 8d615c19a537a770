"""Tensor metrics (Triton 3.9's metric.py) without a GPU: device tensors go
through cproton.metric's FakeDeviceBuffer, which has the device kernel's
record layout, capacity and dropping rules; the copy "kernel" is a fake
backend launch, so its attribution is checked too. tests/gpu/tensor_metrics.sh
runs the same paths on a real GPU (CUDA graphs included)."""
import struct
import types
import warnings

import pytest

import cproton as proton
from cproton import _cproton as C
from cproton import metric

from conftest import load_tree


class FakeTensor:
    """The part of torch.Tensor that tensor metrics use; a list value is a
    tensor of that many elements (a vector metric)."""

    def __init__(self, value, device="cuda", numel=None, floating=None):
        self.value = value
        self.values = list(value) if isinstance(value, list) else [value]
        self.device = types.SimpleNamespace(type=device, index=0)
        self._numel = len(self.values) if numel is None else numel
        self._floating = any(isinstance(v, float) for v in self.values) if floating is None else floating

    def data_ptr(self):
        return 0x7F0000001000

    def numel(self):
        return self._numel

    def is_floating_point(self):
        return self._floating

    def item(self):
        assert self._numel == 1, "item() of a tensor of several elements"
        return self.values[0]

    def reshape(self, *shape):
        return self

    def tolist(self):
        return list(self.values)


class KernelBuffer(metric.FakeDeviceBuffer):
    """A fake buffer whose copy is a (fake backend) kernel launch."""

    def record(self, slot, tensor, double):
        C._fake_launch("_cproton_tensor_metric")
        super().record(slot, tensor, double)


@pytest.fixture(autouse=True)
def fake_device():
    metric.use_fake_device()
    yield
    metric.use_fake_device(False)


def use_kernel_buffer():
    with metric._recorder.lock:
        metric._recorder.buffers.clear()
        metric._recorder.factory = lambda capacity, device: KernelBuffer(capacity)


def test_scope_metrics_are_recorded_on_the_device_and_folded_at_flush():
    sid = proton.start("t", backend="fake")
    for i in range(3):
        with proton.scope("step", {"tokens": FakeTensor(10 + i), "loss": FakeTensor(0.5)}):
            C._fake_launch("k")
    # nothing folded yet: the values wait in the (fake) device buffer
    buf = next(iter(metric._recorder.buffers.values()))
    assert buf.words[0] == 6 * metric.RECORD_WORDS
    proton.finalize(sid)
    m = load_tree("t.hatchet")["step"]["@"]
    assert m["tokens"] == 33 and isinstance(m["tokens"], int)
    assert m["loss"] == 1.5
    assert buf.words[0] == 0  # drained


def test_types_follow_proton_3_9():
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"flops": FakeTensor(7), "bytes": FakeTensor(2.9, floating=True),
                            "ratio": FakeTensor(0.25), "n": FakeTensor(True, floating=False)}):
        pass
    proton.finalize(sid)
    m = load_tree("t.hatchet")["s"]["@"]
    assert m["flops"] == 7.0 and isinstance(m["flops"], float)
    assert m["bytes"] == 2 and isinstance(m["bytes"], int)  # int64 as torch's .long() truncates
    assert m["ratio"] == 0.25
    assert m["n"] == 1


def test_cpu_tensors_are_numbers_added_at_once():
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"bytes": FakeTensor(4.0, device="cpu"), "x": FakeTensor(3, device="cpu")}):
        pass
    assert not metric._recorder.buffers  # no device buffer was needed
    proton.finalize(sid)
    m = load_tree("t.hatchet")["s"]["@"]
    assert m == {"bytes": 4, "x": 3}


def test_enter_exit_scope_and_add_metrics_take_tensors():
    sid = proton.start("t", backend="fake")
    sc = proton.enter_scope("a", metrics={"x": FakeTensor(1)})
    C.add_metrics(sc, {"x": FakeTensor(2)})
    proton.exit_scope("a", metrics={"x": FakeTensor(4)})
    proton.finalize(sid)
    assert load_tree("t.hatchet")["a"]["@"]["x"] == 7


def test_empty_tensors_and_other_devices_are_refused_clearly():
    sid = proton.start("t", backend="fake")
    with pytest.raises(ValueError, match="tensor metric 'v' has no elements"):
        with proton.scope("s", {"v": FakeTensor([])}):
            pass
    assert C.depth() == 0  # the failed scope did not stay open
    metric.use_fake_device(False)
    with pytest.raises(TypeError, match="device 'mps'"):
        with proton.scope("s", {"v": FakeTensor(1, device="mps")}):
            pass
    proton.finalize(sid)


def test_cuda_tensor_without_torch_or_gpu_says_why():
    metric.use_fake_device(False)
    sid = proton.start("t", backend="fake")
    with pytest.raises(RuntimeError, match="tensor metric"):
        with proton.scope("s", {"v": FakeTensor(1)}):
            pass
    proton.finalize(sid)


def test_no_session_means_no_slot():
    proton.start("t", backend="fake")
    proton.deactivate()
    # profiling is off for the deactivated session: the metric is ignored like a number
    with proton.scope("s", {"v": FakeTensor(1)}):
        pass
    proton.finalize()


def metric_frame():
    """The copy kernel's frame: its own name, or "<metric>" under Proton 3.9
    (src/core/compat.c, as Proton 3.9 names its metric kernels)."""
    return "<metric>" if proton._compat.is_39() else "_cproton_tensor_metric"


def test_copy_kernels_run_under_the_metadata_state():
    use_kernel_buffer()
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"x": FakeTensor(5)}):
        C._fake_launch("k")
    proton.finalize(sid)
    t = load_tree("t.hatchet")
    assert t["s"]["@"]["x"] == 5
    assert t["s"]["k"]["@"]["count"] == 1
    assert t["s"]["__proton_launch_metadata"][metric_frame()]["@"]["count"] == 1


knobs = pytest.importorskip("triton.knobs")
from triton.compiler.compiler import LazyDict  # noqa: E402
from test_hook import launch  # noqa: E402  (the simulated Triton launcher)


def test_launch_metadata_tensors_land_on_the_op_and_copies_outside_it():
    use_kernel_buffer()

    def meta(grid, metadata, args):
        return {"flops": FakeTensor(2 * args["n"]), "bytes": FakeTensor(3 * args["n"]), "plain": 1}

    sid = proton.start("h", backend="fake", hook="triton")
    with proton.scope("fwd"):
        for n in (10, 20):
            launch("matmul_kernel", meta, {"n": n})
    proton.finalize(sid)
    t = load_tree("h.hatchet")["fwd"]
    m = t["matmul_kernel"]["@"]
    assert m["count"] == 2  # the copy kernels are not counted on the op
    assert m["flops"] == 60.0 and m["bytes"] == 90.0 and m["plain"] == 2.0
    if proton._compat.is_39():  # Proton 3.9: flops double, bytes int64, others by value
        assert [type(m[k]) for k in ("flops", "bytes", "plain")] == [float, int, int]
    else:  # Proton 3.6's hook rule in cproton: every launch-metadata value is a double
        assert all(isinstance(m[k], float) for k in ("flops", "bytes", "plain"))
    metadata = t["__proton_launch_metadata"]
    if proton._compat.is_39():  # Proton 3.9: under the kernel's own metadata state
        metadata = metadata["matmul_kernel"]
    assert metadata[metric_frame()]["@"]["count"] == 4


def test_copy_kernels_do_not_reenter_the_launch_hook():
    seen = []

    class Reentrant(metric.FakeDeviceBuffer):
        def record(self, slot, tensor, double):
            # Triton calls the launch hook for the copy kernel too: ignored.
            lazy = LazyDict({"name": "_cproton_tensor_metric", "function": 1, "stream": 0})
            knobs.runtime.launch_enter_hook(lazy)
            seen.append(C._fake_launch("_cproton_tensor_metric"))
            knobs.runtime.launch_exit_hook(lazy)
            super().record(slot, tensor, double)

    metric._recorder.factory = lambda capacity, device: Reentrant(capacity)
    sid = proton.start("h", backend="fake", hook="triton")
    launch("k", lambda g, md, a: {"x": FakeTensor(1)})
    launch("k", lambda g, md, a: {"x": FakeTensor(1)})
    proton.finalize(sid)
    t = load_tree("h.hatchet")
    assert t["k"]["@"] == {"count": 2, "device_id": "0", "device_type": "CUDA", "time (ns)": t["k"]["@"]["time (ns)"],
                           "x": 2.0}
    assert "_cproton_tensor_metric" not in t and "<metric>" not in t
    assert len(seen) == 2


def test_graph_replays_append_records_that_sum():
    """A captured copy kernel appends one record per replay: emulate three
    replays of one captured record."""
    sid = proton.start("t", backend="fake")
    with proton.scope("graph", {"tokens": FakeTensor(8)}):
        pass
    replay(next(iter(metric._recorder.buffers.values())), 2, 2)
    assert metric.drain() == 3
    assert metric.drain() == 0
    proton.finalize(sid)
    assert load_tree("t.hatchet")["graph"]["@"]["tokens"] == 24


def test_a_graph_replayed_after_the_tree_was_freed_lands_on_its_scope():
    """The last finalize frees the context tree and the scope names (issue
    16.13); a record captured before it and replayed in the next session
    still lands on its scope path (the slot's path is re-created)."""
    sid = proton.start("t", backend="fake")
    with proton.scope("outer"):
        with proton.scope("graph", {"tokens": FakeTensor(8)}):
            pass
        for i in range(100):  # names the finalize frees
            with proton.scope(f"junk{i}"):
                pass
    buf = next(iter(metric._recorder.buffers.values()))
    record = buf.words[metric.HEADER_WORDS:metric.HEADER_WORDS + 2]
    proton.finalize(sid)
    sid = proton.start("t2", backend="fake")
    for i in range(100):  # new nodes where the freed ones were
        with proton.scope(f"other{i}"):
            pass
    off = buf.words[0]  # a replay of the captured copy kernel
    buf.words[metric.HEADER_WORDS + off:metric.HEADER_WORDS + off + 2] = record
    buf.words[0] = off + 2
    proton.finalize(sid)
    t = load_tree("t2.hatchet")
    assert t["outer"]["graph"]["@"]["tokens"] == 8


def test_full_buffer_drops_are_counted_and_reported(monkeypatch):
    monkeypatch.setenv("CPROTON_TENSOR_METRIC_WORDS", "4")
    metric.use_fake_device()
    sid = proton.start("t", backend="fake")
    for _ in range(3):
        with proton.scope("s", {"x": FakeTensor(1)}):
            pass
    with pytest.warns(proton.CprotonWarning, match="1 records dropped.*4 words"):
        proton.finalize(sid)
    assert load_tree("t.hatchet")["s"]["@"]["x"] == 2


def test_a_drain_that_dropped_records_forgets_queued_graph_places(monkeypatch):
    """A dropped record of a metric captured in a CUDA graph leaves its
    replay's place queued (docs/tensor-metrics.md); once every buffer is
    drained, those places are forgotten so that later records of the metric
    do not land one replay late (placement: tests/unit/
    backend_cupti_graph_test.c, places_of_dropped_records_are_forgotten)."""
    calls = []
    monkeypatch.setattr(C, "tensor_metric_forget_places", lambda: calls.append(1) or 0)
    monkeypatch.setenv("CPROTON_TENSOR_METRIC_WORDS", "4")
    metric.use_fake_device()
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"x": FakeTensor(1)}):
        pass
    metric.drain()
    assert calls == []  # nothing dropped: nothing forgotten
    for _ in range(3):
        with proton.scope("s", {"x": FakeTensor(1)}):
            pass
    with pytest.warns(proton.CprotonWarning, match="1 records dropped"):
        metric.drain()
    assert calls == [1]
    proton.finalize(sid)


@pytest.mark.parametrize("value", ["x", "0", "-2", "3"])
def test_bad_capacity_is_refused(monkeypatch, value):
    monkeypatch.setenv("CPROTON_TENSOR_METRIC_WORDS", value)
    metric.use_fake_device()
    sid = proton.start("t", backend="fake")
    with pytest.raises(ValueError, match="CPROTON_TENSOR_METRIC_WORDS"):
        with proton.scope("s", {"x": FakeTensor(1)}):
            pass
    proton.finalize(sid)


def test_data_get_and_phases_see_drained_values():
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"x": FakeTensor(2)}):
        pass
    tree = proton.data.get(sid)
    (s, ) = [c for c in tree[0]["children"] if c["frame"]["name"] == "s"]
    assert s["metrics"]["x"] == 2
    with proton.scope("s", {"x": FakeTensor(5)}):
        pass
    proton.data.advance_phase(sid)
    tree = proton.data.get(sid, 0)
    (s, ) = [c for c in tree[0]["children"] if c["frame"]["name"] == "s"]
    assert s["metrics"]["x"] == 7
    proton.finalize(sid)


def test_fold_rejects_bad_records():
    sid = proton.start("t", backend="fake")
    with pytest.raises(ValueError, match="whole number of 64-bit words"):
        C.tensor_metric_fold(b"\0" * 12)
    with pytest.raises(ValueError, match="word 0 names no reserved slot"):
        C.tensor_metric_fold(struct.pack("<qq", 10**6, 1))
    with pytest.raises(RuntimeError, match="type mismatch"):
        with proton.scope("s", {"x": 1}):
            pass
        with proton.scope("s", {"x": FakeTensor(0.5)}):
            pass
        metric.drain()
    proton.finalize(sid)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metric.drain() == 0


@pytest.mark.parametrize("dtype,double,from_args", [("*fp32", True, False), ("*i1", False, False),
                                                    ("*i64", False, True), ("*i64", True, True)])
def test_the_copy_kernel_compiles_for_a_gpu_without_one(dtype, double, from_args):
    """The device kernel, for tensors and for numbers given during a capture
    (FROM_ARGS), compiles ahead of time for sm_90 and ptxas assembles it (no
    GPU needed); tests/gpu/tensor_metrics.sh runs it."""
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    sig = {"buf_ptr": "*i64", "capacity": "i64", "slot": "i64", "value_ptr": dtype, "n": "i32", "lo": "i32",
           "mid": "i32", "hi": "i32", "IS_DOUBLE": "constexpr", "FROM_ARGS": "constexpr"}
    src = ASTSource(fn=metric._record_kernel(), signature=sig,
                    constexprs={"IS_DOUBLE": double, "FROM_ARGS": from_args})
    try:
        compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1})
    except RuntimeError as e:  # no ptxas on this machine
        pytest.skip(f"Triton cannot compile for CUDA here: {e}")
    ptx = compiled.asm["ptx"]
    assert "atom.global" in ptx and "_cproton_tensor_metric" in ptx and len(compiled.asm["cubin"]) > 0


def replay(buf, n_words, times):
    """Emulates `times` more replays of a captured graph whose copies wrote
    the buffer's first `n_words` words."""
    record = buf.words[metric.HEADER_WORDS:metric.HEADER_WORDS + n_words]
    for _ in range(times):
        off = buf.words[0]
        buf.words[metric.HEADER_WORDS + off:metric.HEADER_WORDS + off + n_words] = record
        buf.words[0] = off + n_words


def msgpack_tree(sid):
    msgpack = pytest.importorskip("msgpack")
    return msgpack.unpackb(proton.data.get_msgpack(sid))


def test_vector_tensors_fold_element_by_element():
    """numel() > 1: Proton 3.9's vector metrics, one record of n values per
    copy, summed element by element; bytes stays int64, flops double."""
    sid = proton.start("t", backend="fake")
    for k in range(2):
        with proton.scope("step", {"hist": FakeTensor([1.0, 2.0, 3.5 + k]), "bytes": FakeTensor([4.0, 5.0]),
                                   "ids": FakeTensor([7, -8, 9])}):
            pass
    buf = next(iter(metric._recorder.buffers.values()))
    assert buf.words[0] == 2 * (4 + 3 + 4)  # {slot, n values} per record
    assert metric.drain() == 6
    (step, ) = [c for c in msgpack_tree(sid)[0]["children"] if c["frame"]["name"] == "step"]
    assert step["metrics"] == {"hist": [2.0, 4.0, 8.0], "bytes": [8, 10], "ids": [14, -16, 18]}
    proton.finalize(sid)
    assert load_tree("t.hatchet")["step"]["@"] == {"hist": [2.0, 4.0, 8.0], "bytes": [8, 10], "ids": [14, -16, 18]}


def test_cpu_vector_tensors_and_lists_are_added_at_once():
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"v": FakeTensor([1, 2], device="cpu"), "w": [0.5, 1.5], "e": []}):
        pass
    proton.enter_scope("s", metrics={"v": [10, 20], "w": (1.0, 1.0)})
    proton.exit_scope()
    assert not metric._recorder.buffers  # nothing went to the device
    proton.finalize(sid)
    assert load_tree("t.hatchet")["s"]["@"] == {"v": [11, 22], "w": [1.5, 2.5], "e": []}


def test_vector_errors_are_protons():
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"v": [1, 2, 3]}):
        pass
    with pytest.raises(ValueError, match=r"Vector metric size mismatch for valueId 0 \(v\): current=3, new=2"):
        with proton.scope("s", {"v": [1, 2]}):
            pass
    with pytest.raises(RuntimeError, match=r"current=std::vector<int64_t>, new=std::vector<double>"):
        with proton.scope("s", {"v": [1.0, 2.0, 3.0]}):
            pass
    new = "int64_t" if proton._compat.is_39() else "uint64_t"  # Proton 3.9's integers are all int64_t
    with pytest.raises(RuntimeError, match=rf"current=std::vector<int64_t>, new={new}$"):
        with proton.scope("s", {"v": 1}):
            pass
    with pytest.raises(TypeError, match="vector metric 'v' must hold numbers, not str"):
        with proton.scope("s", {"v": [1, "a", 3]}):
            pass
    # a device vector of another length: found when the records are folded
    with proton.scope("s", {"d": FakeTensor([1.0, 2.0])}):
        pass
    with proton.scope("s", {"d": FakeTensor([1.0, 2.0, 3.0])}):
        pass
    with pytest.raises(ValueError, match=r"size mismatch for valueId 0 \(d\): current=2, new=3"):
        metric.drain()
    proton.finalize(sid)
    assert load_tree("t.hatchet")["s"]["@"] == {"v": [1, 2, 3], "d": [1.0, 2.0]}


def test_a_record_that_does_not_fit_pads_the_buffer(monkeypatch):
    """Records have different lengths: the first one that does not fit
    writes the padding word where it would have started, so the drain knows
    where the records end; it and every later one are counted as dropped."""
    monkeypatch.setenv("CPROTON_TENSOR_METRIC_WORDS", "8")
    metric.use_fake_device()
    sid = proton.start("t", backend="fake")
    with proton.scope("s", {"x": FakeTensor(1), "v": FakeTensor([1, 2, 3])}):  # 2 + 4 words
        pass
    with proton.scope("s", {"v": FakeTensor([1, 2, 3]), "x": FakeTensor(1)}):  # do not fit
        pass
    buf = next(iter(metric._recorder.buffers.values()))
    assert buf.words[metric.HEADER_WORDS + 6] == metric.PAD
    with pytest.warns(proton.CprotonWarning, match="2 records dropped.*8 words"):
        proton.finalize(sid)
    assert load_tree("t.hatchet")["s"]["@"] == {"x": 1, "v": [1, 2, 3]}


def test_graph_replays_of_a_vector_record_sum():
    sid = proton.start("t", backend="fake")
    with proton.scope("graph", {"tokens": FakeTensor([1, 10])}):
        pass
    replay(next(iter(metric._recorder.buffers.values())), 3, 3)
    assert metric.drain() == 4
    proton.finalize(sid)
    assert load_tree("t.hatchet")["graph"]["@"]["tokens"] == [4, 40]


def test_launch_metadata_vectors_are_doubles_on_the_op():
    knobs = pytest.importorskip("triton.knobs")
    from triton.compiler.compiler import LazyDict
    sid = proton.start("t", backend="fake", hook="triton")
    for _ in range(2):
        lazy = LazyDict({"name": "k", "function": 1, "stream": 0})
        lazy.add(lambda grid, meta, args: {"per_expert": [1, 2], "hist": FakeTensor([0.5, 0.25])}, (None, None, {}))
        knobs.runtime.launch_enter_hook(lazy)
        C._fake_launch("k")
        knobs.runtime.launch_exit_hook(lazy)
    proton.finalize(sid)
    m = load_tree("t.hatchet")["k"]["@"]
    assert m["per_expert"] == [2.0, 4.0] and m["hist"] == [1.0, 0.5] and m["count"] == 2


def test_numbers_during_a_graph_capture_are_added_per_replay():
    """Proton records a number given during CUDA graph capture at every
    replay (its scalar metric kernel); cproton queues a copy whose value is
    the kernel's argument, so the captured launch appends it per replay."""
    sid = proton.start("t", backend="fake")
    with proton.scope("eager", {"n": 5}):  # no capture: added at once
        pass
    metric.fake_capture(True)
    label = {} if proton._compat.is_39() else {"label": "text"}  # Proton 3.9 has no string metrics
    try:
        with proton.scope("graph", {"tokens": 3, "loss": 0.5, **label}):
            pass
    finally:
        metric.fake_capture(False)
    buf = next(iter(metric._recorder.buffers.values()))
    assert buf.words[0] == 4  # two records {slot, value}; the string stayed on the host
    replay(buf, 4, 2)  # two more replays of the captured copies
    assert metric.drain() == 6
    proton.finalize(sid)
    t = load_tree("t.hatchet")
    assert t["eager"]["@"] == {"n": 5}
    assert t["graph"]["@"] == {"tokens": 9, "loss": 1.5, **label}


def test_launch_metadata_numbers_during_a_capture_land_on_the_op():
    knobs = pytest.importorskip("triton.knobs")
    from triton.compiler.compiler import LazyDict
    sid = proton.start("t", backend="fake", hook="triton")
    metric.fake_capture(True)
    try:
        lazy = LazyDict({"name": "k", "function": 1, "stream": 0})
        lazy.add(lambda grid, meta, args: {"flops": 8, "bytes": 4}, (None, None, {}))
        knobs.runtime.launch_enter_hook(lazy)
        C._fake_launch("k")
        knobs.runtime.launch_exit_hook(lazy)
    finally:
        metric.fake_capture(False)
    assert metric.drain() == 2
    proton.finalize(sid)
    m = load_tree("t.hatchet")["k"]["@"]
    assert m["flops"] == 8.0 and m["bytes"] == 4.0 and m["count"] == 1


@pytest.mark.parametrize("bits", [0, 1, -1, 2**63 - 1, -2**63, 0x123456789ABCDEF])
def test_scalar_kernel_pieces_cover_64_bits(bits):
    lo, mid, hi = metric._pieces(bits)
    assert all(0 <= p < 2**22 for p in (lo, mid, hi))
    word = lo | (mid << 22) | (hi << 44)
    assert (word - (1 << 64) if word >= 1 << 63 else word) == bits


def test_a_graph_replayed_while_deactivated_adds_nothing():
    """Proton 3.9's test_cudagraph_metric_queue_handles_inactive_replay: the
    copy kernel of a graph replayed while the session is deactivated writes a
    record, which must not land in the session once it is active again."""
    sid = proton.start("t", backend="fake")
    with proton.scope("graph", {"tokens": FakeTensor(8)}):
        pass
    buf = next(iter(metric._recorder.buffers.values()))
    proton.deactivate(sid)
    replay(buf, 2, 1)  # the inactive replay's record
    proton.activate(sid)
    replay(buf, 2, 1)  # a replay while active
    proton.finalize(sid)
    assert load_tree("t.hatchet")["graph"]["@"]["tokens"] == 16


@pytest.mark.parametrize("version", [(3, 6), (3, 9)], ids=["proton36", "proton39"])
def test_start_and_activate_reserve_the_buffer_under_39(version, monkeypatch):
    """Proton 3.9 reserves its metric buffer before a capture begins, so a
    graph's first tensor metric may be given during the capture (its
    test_cudagraph_metric_queue_handles_inactive_replay); cproton allocates
    it at start and activate under 3.9 (the current CUDA device's), and
    under 3.6 only at the first tensor metric, as before."""
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply(version)
    monkeypatch.setattr(metric, "_current_cuda_device", lambda: metric._FakeDevice())
    try:
        sid = proton.start("t", backend="fake")
        assert (("cuda", 0) in metric._recorder.buffers) == (version == (3, 9))
        proton.deactivate(sid)
        metric._recorder.buffers.clear()
        proton.activate(sid)
        assert (("cuda", 0) in metric._recorder.buffers) == (version == (3, 9))
        proton.finalize(sid)
    finally:
        _compat.apply(before)


def test_no_buffer_reserved_without_an_initialised_cuda(monkeypatch):
    """Starting a session must not import torch or create a CUDA context."""
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply((3, 9))
    monkeypatch.setitem(__import__("sys").modules, "torch", None)
    try:
        sid = proton.start("t", backend="fake")
        assert metric._recorder.buffers == {}
        proton.finalize(sid)
    finally:
        _compat.apply(before)


@pytest.mark.parametrize("version", [(3, 6), (3, 9)], ids=["proton36", "proton39"])
def test_copies_made_during_a_capture_are_tagged_with_a_captured_slot(version, monkeypatch):
    """Proton 3.9 puts a metric given during a capture at each replay's
    <launch context>/<captured_at>/<capture path>. cproton gives such a value
    a captured slot (never the eager one of the same scope and metric) and
    tags its copy kernel's launch with it, so that the CUPTI backend knows
    the graph node's replays (the placement itself: tests/unit/
    backend_cupti_graph_test.c). Under Proton 3.6 the slot is the eager one."""
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply(version)
    tags, recorded = [], []

    class TagCheckingBuffer(metric.FakeDeviceBuffer):
        def record(self, slot, tensor, double):
            recorded.append((slot, tags[-1]))  # the tag in force at the launch
            super().record(slot, tensor, double)

    with metric._recorder.lock:
        metric._recorder.buffers.clear()
        metric._recorder.factory = lambda capacity, device: TagCheckingBuffer(capacity)
    monkeypatch.setattr(C, "tensor_metric_tag", tags.append)
    try:
        sid = proton.start("t", backend="fake")
        with proton.scope("s", {"v": FakeTensor(1)}):
            pass
        metric.fake_capture(True)
        try:
            with proton.scope("s", {"v": FakeTensor(2)}):
                pass
        finally:
            metric.fake_capture(False)
        proton.finalize(sid)
    finally:
        _compat.apply(before)
    (eager, eager_tag), (captured, captured_tag) = recorded
    assert (eager_tag, captured_tag) == (eager, captured)  # each launch tagged with its slot
    assert tags == [eager, C.TENSOR_METRIC_NONE, captured, C.TENSOR_METRIC_NONE]  # and untagged after
    assert (captured != eager) == (version == (3, 9))
