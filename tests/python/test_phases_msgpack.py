"""Proton 3.9's data API, phases, periodic flushing and the hatchet_msgpack
format. The MessagePack check is the one Proton 3.9's own tests make: the
`msgpack` package decodes get_msgpack() / a .hatchet_msgpack file into the
same Python objects as the JSON of the same data. Kernels come from the
library's fake backend."""
import glob
import json

import msgpack
import pytest

import cproton as proton
from cproton import _cproton as C


def unpack(raw):
    # exactly how Proton 3.9's tests read hatchet_msgpack
    return msgpack.loads(raw, raw=False, strict_map_key=False)


def names(node):
    return [c["frame"]["name"] for c in node["children"]]


def without_user_root_zeros(doc):
    """`doc` less the zeros Proton 3.6's JSON writes on ROOT for inclusive
    user metrics: Proton 3.9's MessagePack dropped them (docs/formats.md);
    everything else is the same document."""
    root = dict(doc[0], metrics={k: v for k, v in doc[0]["metrics"].items() if k in ("count", "time (ns)")})
    return [root] + doc[1:]


def test_get_msgpack_decodes_to_get(proton36):  # JSON with Proton 3.6's ROOT zeros
    sid = proton.start("m", backend="fake")
    with proton.scope("outer", {"ints": 3, "neg": -70000, "f": 1.5, "big": 2**40}):
        C._fake_launch("k1")
        with proton.scope("inner"):
            C._fake_launch("k2")
            C._fake_launch("k2")
    proton.deactivate(sid, flushing=True)
    tree = proton.data.get(sid)
    assert tree[0]["metrics"] == {"big": 0, "count": 0, "f": 0, "ints": 0, "neg": 0, "time (ns)": 0}
    assert unpack(proton.data.get_msgpack(sid)) == without_user_root_zeros(tree)
    outer = tree[0]["children"][0]
    assert outer["metrics"]["neg"] == -70000 and outer["metrics"]["big"] == 2**40
    inner = [c for c in outer["children"] if c["frame"]["name"] == "inner"][0]
    assert inner["children"][0]["metrics"]["count"] == 2
    proton.finalize()


def test_msgpack_file_equals_json_file(proton36):  # JSON with Proton 3.6's ROOT zeros
    for fmt in ("hatchet", "hatchet_msgpack"):
        sid = proton.start("f_" + fmt, backend="fake")
        for i in range(3):
            with proton.scope(f"s{i}", {"n": i}):
                C._fake_launch("kern" + "x" * 40 * i)  # str8 names too
        proton.finalize(sid, fmt)
    with open("f_hatchet.hatchet") as f:
        js = json.load(f)
    with open("f_hatchet_msgpack.hatchet_msgpack", "rb") as f:
        mp = unpack(f.read())
    assert js[0]["metrics"] == {"count": 0, "n": 0, "time (ns)": 0}
    assert mp == without_user_root_zeros(js)
    assert [c["frame"]["name"] for c in mp[0]["children"]] == ["s0", "s1", "s2"]


def test_phases_split_data():
    sid = proton.start("ph", backend="fake")
    with proton.scope("phase0"):
        C._fake_launch("k")
    assert not proton.data.is_phase_complete(sid, 0)
    phase1 = proton.data.advance_phase(sid)
    assert phase1 == 1
    with proton.scope("phase1"):
        C._fake_launch("k")
    assert not proton.data.is_phase_complete(sid, 0)  # records not delivered
    proton.deactivate(sid, flushing=True)
    assert proton.data.is_phase_complete(sid, 0)
    assert not proton.data.is_phase_complete(sid, 1)  # the current phase
    assert names(proton.data.get(sid, 0)[0]) == ["phase0"]
    assert names(proton.data.get(sid, phase=1)[0]) == ["phase1"]
    proton.data.clear(sid, phase=1, clear_up_to_phase=True)
    assert proton.data.get(sid, phase=1)[0]["children"] == []  # current: emptied
    with pytest.raises(RuntimeError, match="has no data"):
        proton.data.get(sid, 0)
    proton.finalize()
    # phases were advanced: the remaining (current) phase is written as a part
    assert glob.glob("ph*") == ["ph.part_1.hatchet"]


def test_clear_current_phase_keeps_recording():
    sid = proton.start("c", backend="fake")
    with proton.scope("test0"):
        C._fake_launch("k")
    proton.deactivate(sid, flushing=True)
    proton.data.clear(sid)
    proton.activate(sid)
    with proton.scope("test1"):
        C._fake_launch("k")
    proton.deactivate(sid, flushing=True)
    assert names(proton.data.get(sid)[0]) == ["test1"]
    proton.finalize()


@pytest.mark.parametrize("fmt", ["hatchet", "hatchet_msgpack"])
def test_periodic_flushing_writes_one_part_per_phase(fmt):
    sid = proton.start("pf", backend="fake", mode=f"periodic_flushing:format={fmt}")
    for i in range(100):
        if i and i % 10 == 0:
            proton.data.advance_phase(session=sid)
        with proton.scope("step", metrics={"calls": 1}):
            C._fake_launch("k")
    proton.finalize(output_format=fmt)
    parts = sorted(glob.glob(f"pf.part_*.{fmt}"))
    assert len(parts) == 10 and len(glob.glob("pf*")) == 10
    for p in parts:
        with open(p, "rb") as f:
            raw = f.read()
        tree = unpack(raw) if fmt == "hatchet_msgpack" else json.loads(raw)
        step = tree[0]["children"][0]
        assert step["metrics"]["calls"] == 10
        assert step["children"][0]["metrics"]["count"] == 10


def test_periodic_flushing_bad_format_lists_valid():
    # Proton 3.9: ValueError ("CuptiProfiler: unsupported format: xml")
    with pytest.raises(ValueError, match="valid: hatchet, hatchet_msgpack"):
        proton.start("bad", backend="fake", mode="periodic_flushing:format=xml")
    with pytest.raises(ValueError, match="valid: chrome_trace"):
        proton.start("bad", backend="fake", data="trace", mode="periodic_flushing:format=hatchet")


def test_unknown_finalize_format_keeps_session():
    sid = proton.start("keep", backend="fake")
    with proton.scope("x"):
        C._fake_launch("k")
    with pytest.raises(RuntimeError, match=r"valid: hatchet, hatchet_msgpack, chrome_trace"):
        proton.finalize(sid, "xml")
    assert proton.data.get(sid)[0]["children"][0]["frame"]["name"] == "x"
    proton.finalize(sid)


def test_get_of_a_trace_session_is_its_trace():
    sid = proton.start("tr", data="trace", backend="fake")
    with proton.scope("s"):
        C._fake_launch("k")
    trace = proton.data.get(sid)  # Proton's chrome_trace: kernels with their call stack
    kernels = [e for e in trace["traceEvents"] if e.get("name") == "k"]
    assert kernels and "s" in kernels[0]["args"]["call_stack"]
    tree = unpack(proton.data.get_msgpack(sid))  # its tree, as hatchet_msgpack
    assert tree[0]["children"][0]["frame"]["name"] == "s"
    proton.finalize()


FULL_DISK = r"""
import resource, signal, sys, warnings
import cproton as proton
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
proton.start("cpu", backend="none", mode="periodic_flushing")
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, hard))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for phase in range(6):
        for k in range(2000 if phase in (2, 5) else 3):
            with proton.scope(f"p{phase}_{k}", metrics={"flops": 1.0}):
                pass
        if phase < 5:
            try:
                proton.data.advance_phase()
            except OSError as err:
                print("advance", phase, err)
    try:
        proton.finalize()
    except OSError as err:
        print("finalize", err)
for w in caught:
    print("warning", w.message)
"""


def test_cpu_periodic_parts_on_a_full_disk(tmp_path):
    """A CPU-only session writes each part at its advance_phase (memory stays
    bounded), and on a full disk (a file-size limit) every lost part is named
    in a warning and counted at finalize (issue 24, item 6)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", FULL_DISK], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120).stdout
    assert sorted(p.name for p in tmp_path.glob("cpu*")) == [
        f"cpu.part_{k}.hatchet" for k in (0, 1, 3, 4)]
    assert "advance 2 " in out and "advance 3" not in out  # phase 2 was written at advance 2
    assert "finalize session 0: 2 of 6 parts were not written (phases 2, 5;" in out
    for k in (2, 5):
        assert f"warning session 0: phase {k} was not written to" in out, out
    assert "warning session 0: 2 of 6 parts were not written (phases 2, 5); their data is lost" in out
