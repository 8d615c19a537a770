"""Perfetto traces (`output_format="perfetto"`, `.pftrace`) decoded with
Perfetto's own generated protobuf classes (the `perfetto` PyPI package's
perfetto_trace_pb2), not with cproton's code: tracks, interned names,
sequence flags, slices and their nesting, flows, graph replays, per-warp
intra-kernel timelines and the bytes each intra-kernel event costs.

Timestamps are rebuilt as Perfetto documents them (clock_snapshot.proto):
clock 64 is incremental (a delta from the previous packet on that clock),
clock 65 absolute, both in ns since the snapshot's instant; slices are
rebuilt the way trace_processor nests them (time order, file order for
equal times, an END closes the innermost open slice of its track)."""
import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

import cproton as proton
from cproton import _cproton as C

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("CPROTON_BUILD_DIR", ROOT / "build"))
SAMPLE = BUILD / "tests" / "perfetto_sample"
BASE = 5_000_000_000  # tests/testutil/trace_sample.c
TP = pb.TracePacket
BEGIN, END, INSTANT = 1, 2, 3


def load(path):
    trace = pb.Trace()
    trace.ParseFromString(Path(path).read_bytes())
    return trace


def sample(path, *args):
    if not SAMPLE.exists():
        pytest.fail(f"{SAMPLE} is missing: build the C tree first (make build)")
    out = subprocess.run([str(SAMPLE), str(path), *map(str, args)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


class Seq:
    """Per-sequence state: interned data and clocks live per sequence."""

    def __init__(self):
        self.names, self.strings, self.da_names = {}, {}, {}
        self.delta = self.base = None


class Decoded:
    """What a trace says, rebuilt from the decoded packets."""

    def __init__(self, trace):
        self.packets = list(trace.packet)
        self.tracks = {}
        self.seqs = defaultdict(Seq)
        self.points = defaultdict(list)  # uuid -> [(ts, order, packet)]
        self._walk()

    def seq(self, p):
        return self.seqs[p.trusted_packet_sequence_id]

    @property
    def da_names(self):
        return {k: v for s in self.seqs.values() for k, v in s.da_names.items()}

    def _interned(self, st, p):
        for n in p.interned_data.event_names:
            assert n.iid not in st.names, f"event name {n.iid} interned twice"
            st.names[n.iid] = n.name
        for s in p.interned_data.debug_annotation_string_values:
            assert s.iid not in st.strings
            st.strings[s.iid] = s.str.decode()
        for n in p.interned_data.debug_annotation_names:
            st.da_names[n.iid] = n.name

    def _timestamp(self, st, p):
        if p.timestamp_clock_id == 65:
            return st.base + p.timestamp
        assert not p.HasField("timestamp_clock_id")
        st.delta += p.timestamp
        return st.base + st.delta

    def _walk(self):
        for order, p in enumerate(self.packets):
            assert p.trusted_packet_sequence_id > 0
            st = self.seq(p)
            if p.HasField("clock_snapshot"):
                clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
                assert clocks[64].is_incremental and not clocks[65].is_incremental
                st.base = clocks[5].timestamp  # MONOTONIC_RAW, our event clock
                st.delta = clocks[64].timestamp
                assert clocks[65].timestamp == st.delta == 0
            self._interned(st, p)
            if p.HasField("track_descriptor"):
                td = p.track_descriptor
                assert td.uuid not in self.tracks, f"track {td.uuid} described twice"
                self.tracks[td.uuid] = td
            if p.HasField("track_event"):
                te = p.track_event
                if te.HasField("name_iid"):
                    assert te.name_iid in st.names, "name used before it was interned"
                    assert p.sequence_flags & TP.SEQ_NEEDS_INCREMENTAL_STATE
                for a in te.debug_annotations:
                    assert a.name_iid in st.da_names
                    if a.HasField("string_value_iid"):
                        assert a.string_value_iid in st.strings
                assert te.track_uuid in self.tracks, "event before its track"
                self.points[te.track_uuid].append((self._timestamp(st, p), order, p))

    def name(self, p):
        return self.seq(p).names[p.track_event.name_iid]

    def track_named(self, name, parent=None):
        found = [t for t in self.tracks.values()
                 if (t.name or t.thread.thread_name) == name
                 and (parent is None or t.parent_uuid == parent)]
        assert len(found) == 1, f"track {name!r}: {len(found)} found"
        return found[0].uuid

    def slices(self, uuid):
        """(name, start, end, depth, begin packet) like trace_processor."""
        out, stack = [], []
        for ts, _, p in sorted(self.points[uuid], key=lambda x: (x[0], x[1])):
            te = p.track_event
            if te.type == BEGIN:
                stack.append((self.name(p), ts, len(stack), p))
            elif te.type == END:
                assert stack, f"end without begin on track {uuid}"
                name, start, depth, bp = stack.pop()
                out.append((name, start, ts, depth, bp))
        assert not stack, f"unterminated slices on track {uuid}"
        return sorted(out, key=lambda s: (s[1], s[3]))

    def instants(self, uuid):
        return [(self.name(p), ts, p)
                for ts, _, p in self.points[uuid] if p.track_event.type == INSTANT]

    def annotations(self, packet):
        st, out = self.seq(packet), {}
        for a in packet.track_event.debug_annotations:
            key = st.da_names[a.name_iid]
            out[key] = (st.strings[a.string_value_iid]
                        if a.HasField("string_value_iid") else a.uint_value)
        return out


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("pf") / "s.pftrace"
    stats = sample(path, 2, 4, 8, 3)
    return Decoded(load(path)), stats


def test_sequence_head_and_process(small):
    d, _ = small
    assert set(d.seqs) == {1}
    first = d.packets[0]
    assert first.sequence_flags & TP.SEQ_INCREMENTAL_STATE_CLEARED
    assert first.trace_packet_defaults.timestamp_clock_id == 64
    assert set(d.da_names.values()) == {"call_stack", "correlation", "graph"}
    proc = d.tracks[1].process
    assert proc.pid == 4242 and proc.process_name == "rank 3: sample"


def test_track_tree(small):
    d, _ = small
    for t in d.tracks.values():
        assert t.uuid == 1 or t.HasField("thread") or t.parent_uuid in d.tracks
    threads = {t.thread.tid for t in d.tracks.values() if t.HasField("thread")}
    assert threads == {1, 2}
    gpu0 = d.track_named("GPU 0", parent=1)
    gpu1 = d.track_named("GPU 1", parent=1)
    d.track_named("stream 7", parent=gpu0)
    d.track_named("stream 3", parent=gpu1)
    d.track_named("graph replays", parent=gpu0)
    kernel = d.track_named("mm_kernel (warps)", parent=1)
    ctas = [t for t in d.tracks.values() if t.parent_uuid == kernel]
    assert sorted(t.name for t in ctas) == ["CTA 0 (SM 10)", "CTA 1 (SM 11)"]
    for cta in ctas:
        warps = sorted(t.sibling_order_rank for t in d.tracks.values()
                       if t.parent_uuid == cta.uuid)
        assert warps == [0, 1, 2, 3]


def test_counter_tracks(small):
    """Hardware-counter samples: a counter track per (GPU, counter) under
    the GPU's track ("%" unit for percentages), one TYPE_COUNTER event per
    sample at its start with the value as double_counter_value."""
    d, stats = small
    assert stats["counters"] == 4
    sm = d.track_named("sm_throughput%", parent=d.track_named("GPU 0", parent=1))
    dram = d.track_named("dram_throughput%",
                         parent=d.track_named("GPU 1", parent=1))
    for uuid in (sm, dram):
        assert d.tracks[uuid].HasField("counter")
        assert d.tracks[uuid].counter.unit_name == "%"

    def values(uuid):
        points = sorted(d.points[uuid], key=lambda x: (x[0], x[1]))
        assert all(p.track_event.type == pb.TrackEvent.TYPE_COUNTER
                   for _, _, p in points)
        return [(ts - BASE, p.track_event.double_counter_value)
                for ts, _, p in points]

    assert values(sm) == [(1800, 40.0), (2300, 75.5), (2800, 10.25)]
    assert values(dram) == [(2400, 12.5)]


def test_scopes_nest_even_when_they_begin_together(small):
    d, _ = small
    t1 = d.track_named("thread 1")
    got = [(n, s - BASE, e - BASE, depth) for n, s, e, depth, _ in d.slices(t1)]
    # "fwd" was appended before "step" (children exit first) and begins in
    # the same nanosecond: it must still come out as step's child
    assert got == [("step", 1000, 9000, 0), ("fwd", 1000, 5000, 1)]
    step = d.slices(t1)[0][4]
    assert d.annotations(step)["call_stack"] == "ROOT;step"


def test_kernels_flows_and_call_stacks(small):
    d, _ = small
    s7 = d.track_named("stream 7")
    kernels = {n: (s - BASE, e - BASE, bp) for n, s, e, _, bp in d.slices(s7)}
    start, end, mm = kernels["mm_kernel"]
    assert (start, end) == (2000, 3000)
    assert d.annotations(mm) == {"call_stack": "ROOT;step;fwd;mm_kernel",
                                 "correlation": 11}
    assert list(mm.track_event.terminating_flow_ids) == [11]
    launches = {p.track_event.flow_ids[0]: ts - BASE
                for name, ts, p in d.instants(d.track_named("thread 1"))
                if name == "launch"}
    assert launches == {11: 1500, 12: 1600, 20: 5500}
    (name, s, e, _, add), = d.slices(d.track_named("stream 3"))
    assert (name, s - BASE, e - BASE) == ("add_kernel", 2500, 2600)
    assert list(add.track_event.terminating_flow_ids) == [12]


def test_graph_replay(small):
    d, _ = small
    s7 = d.track_named("stream 7")
    graph_kernels = [(n, bp) for n, _, _, _, bp in d.slices(s7) if n.startswith("g")]
    assert [n for n, _ in graph_kernels] == ["g1", "g2", "g3"]
    for _, bp in graph_kernels:
        assert d.annotations(bp)["graph"] == 5
        assert not bp.track_event.terminating_flow_ids
    (name, s, e, _, bp), = d.slices(d.track_named("graph replays"))
    assert (name, s - BASE, e - BASE) == ("graph replay", 6000, 6400)
    assert d.annotations(bp) == {"graph": 5, "correlation": 20}
    assert list(bp.track_event.terminating_flow_ids) == [20]


def test_per_warp_regions(small):
    d, stats = small
    kernel = d.track_named("mm_kernel (warps)")
    n = 0
    for cta in [t for t in d.tracks.values() if t.parent_uuid == kernel]:
        for warp in [t for t in d.tracks.values() if t.parent_uuid == cta.uuid]:
            got = d.slices(warp.uuid)
            assert len(got) == 16  # 8 repetitions of outer + inner
            for outer, inner in zip(got[::2], got[1::2]):
                assert (outer[0], outer[2] - outer[1], outer[3]) == ("outer", 100, 0)
                assert (inner[0], inner[2] - inner[1], inner[3]) == ("inner", 20, 1)
                assert inner[1] - outer[1] == 10
            n += len(got)
    assert n == stats["region_events"] == 2 * 2 * 4 * 8


def test_bytes_per_intra_kernel_event(tmp_path):
    """The issue's target: at most 40 bytes per intra-kernel event (Chrome
    JSON 178, Proton 250). 16,384 regions (Proton's 1,024-CTA example),
    3 s into the trace."""
    stats = sample(tmp_path / "b.pftrace", 64, 16, 8)
    per_region = stats["region_bytes"] / stats["region_events"]
    per_event = (tmp_path / "b.pftrace").stat().st_size / stats["events"]
    assert per_region <= 32, per_region
    assert per_event <= 32, per_event
    d = Decoded(load(tmp_path / "b.pftrace"))
    # begin + end per slice, one point per counter sample, 3 launch
    # instants, one replay slice
    slices = stats["events"] - stats["counters"]
    assert sum(len(v) for v in d.points.values()) == \
        2 * slices + stats["counters"] + 5


def test_out_of_window_events_stay_correct(tmp_path):
    """More regions than the writer sorts at once (a 1,000-event window):
    later windows go back in time and use the absolute clock; the rebuilt
    slices are the same."""
    stats = sample(tmp_path / "w.pftrace", 8, 16, 16, -1, 1000)
    assert stats["region_bytes"] / stats["region_events"] <= 40
    d = Decoded(load(tmp_path / "w.pftrace"))
    assert any(p.timestamp_clock_id == 65 for p in d.packets)
    kernel = d.track_named("mm_kernel (warps)")
    cta = next(t for t in d.tracks.values()
               if t.parent_uuid == kernel and t.name == "CTA 7 (SM 17)")
    warp = next(t for t in d.tracks.values()
                if t.parent_uuid == cta.uuid and t.name == "warp 15")
    got = d.slices(warp.uuid)
    assert [(s[0], s[2] - s[1], s[3]) for s in got[:2]] == [("outer", 100, 0),
                                                            ("inner", 20, 1)]
    assert len(got) == 32


def test_python_api_writes_perfetto():
    sid = proton.start("pf", data="trace", backend="fake")
    with proton.scope("s"):
        C._fake_launch("k", device=0, stream=2)
    proton.finalize(sid, "perfetto")
    d = Decoded(load("pf.pftrace"))
    assert d.tracks[1].process.process_name == "pf"
    thread = next(t.uuid for t in d.tracks.values() if t.HasField("thread"))
    (name, s, e, _, bp), = d.slices(thread)
    assert name == "s" and d.annotations(bp)["call_stack"] == "ROOT;s"
    (kname, ks, ke, _, kb), = d.slices(d.track_named("stream 2"))
    assert kname == "k" and s <= ks <= ke
    (launch, lts, lp), = d.instants(thread)
    assert launch == "launch" and s <= lts <= ks
    assert list(lp.track_event.flow_ids) == list(kb.track_event.terminating_flow_ids)


def test_periodic_flushing_writes_perfetto_parts():
    """mode="periodic_flushing:format=perfetto": one .pftrace per phase,
    each a complete trace holding that phase's kernels only."""
    sid = proton.start("pp", data="trace", backend="fake",
                       mode="periodic_flushing:format=perfetto")
    for i in range(30):
        if i and i % 10 == 0:
            proton.data.advance_phase(session=sid)
        with proton.scope("step"):
            C._fake_launch("k", stream=1)
    proton.finalize(output_format="perfetto")
    parts = sorted(Path(".").glob("pp.part_*.pftrace"))
    assert [p.name for p in parts] == [f"pp.part_{i}.pftrace" for i in range(3)]
    for p in parts:
        d = Decoded(load(p))
        assert len(d.slices(d.track_named("stream 1"))) == 10


def test_unknown_format_names_perfetto():
    sid = proton.start("bad", data="trace", backend="fake")
    with pytest.raises(RuntimeError, match="perfetto"):
        proton.finalize(sid, "protobuf")


VIEWER = BUILD / "tools" / "viewer" / "cproton-viewer"


def test_merged_ranks_keep_one_process_group_each(tmp_path):
    """`cproton-viewer --merge-traces`: two ranks' traces as one, each with
    its own sequence, process track group, uuids and flow ids; counter
    tracks keep their descriptor and values."""
    ranks = [tmp_path / "r0.pftrace", tmp_path / "r1.pftrace"]
    for rank, path in enumerate(ranks):
        sample(path, 1, 2, 2, rank)
    out = tmp_path / "all.pftrace"
    subprocess.run([str(VIEWER), "--merge-traces", str(out), *map(str, ranks)],
                   check=True, capture_output=True)
    d = Decoded(load(out))
    assert set(d.seqs) == {1, 2}
    procs = {t.process.process_name: t for t in d.tracks.values()
             if t.HasField("process")}
    assert {n: t.process.pid for n, t in procs.items()} == {
        "rank 0: sample": 1004242, "rank 1: sample": 2004242}
    for rank in (0, 1):
        proc = procs[f"rank {rank}: sample"]
        gpu = d.track_named("GPU 0", parent=proc.uuid)
        stream = d.track_named("stream 7", parent=gpu)
        thread = next(t.uuid for t in d.tracks.values() if t.HasField("thread")
                      and t.thread.tid == 1 and t.thread.pid == proc.process.pid)
        got = [(n, s - BASE, e - BASE, depth) for n, s, e, depth, _ in d.slices(thread)]
        assert got == [("step", 1000, 9000, 0), ("fwd", 1000, 5000, 1)]
        flows = {p.track_event.flow_ids[0] for _, _, p in d.instants(thread)}
        assert flows == {2 * c + rank for c in (11, 12, 20)}
        ends = {f for *_, bp in d.slices(stream) for f in bp.track_event.terminating_flow_ids}
        assert ends == {2 * 11 + rank}
        assert len(d.slices(d.track_named("graph replays", parent=gpu))) == 1
        sm = d.track_named("sm_throughput%", parent=gpu)  # counter tracks survive
        assert d.tracks[sm].counter.unit_name == "%"
        points = sorted(d.points[sm], key=lambda x: (x[0], x[1]))
        assert [(ts - BASE, p.track_event.double_counter_value) for ts, _, p in points] == \
            [(1800, 40.0), (2300, 75.5), (2800, 10.25)]


def test_merge_refuses_what_is_not_a_trace(tmp_path):
    good = tmp_path / "r0.pftrace"
    sample(good, 1, 1, 1, 0)
    bad = tmp_path / "bad.pftrace"
    bad.write_bytes(good.read_bytes()[:700])
    r = subprocess.run([str(VIEWER), "--merge-traces", str(tmp_path / "o.pftrace"),
                        str(good), str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "bad.pftrace: byte" in r.stderr and "truncated" in r.stderr
    assert not (tmp_path / "o.pftrace").exists()
    js = tmp_path / "x.hatchet"
    js.write_text("[]")
    r = subprocess.run([str(VIEWER), "--merge-traces", str(tmp_path / "o.pftrace"),
                        str(js)], capture_output=True, text=True)
    assert r.returncode == 1 and "x.hatchet: byte 0: not a Trace.packet" in r.stderr
