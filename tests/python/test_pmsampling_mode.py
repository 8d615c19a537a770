"""Hardware-metric modes from Python without a GPU (issue 27): bad strings
are refused at start with the option and its offset, unknown counters with
the closest names (also where CUPTI is not available); the PMSampling mode
object builds the strings the C parser takes."""
import warnings

import pytest

import cproton
from cproton import mode


@pytest.mark.parametrize("bad,needle", [
    ("pmsampling:interval=5", r"1000\.\.1000000000 \(ns\) at offset 20"),
    ("pmsampling:interval=abc", "1000..1000000000"),
    ("pmsampling:ranges=0", "1..1048576"),
    ("pmsampling:metrics=sm_throughput", "did you mean sm_throughput%"),
    ("pmsampling:metrics=", "at least one name"),
    ("pmsampling:metrics=issue_slots%,issue_slots%", "named twice"),
    ("pmsampling:bogus", "unknown option at offset 11"),
    ("pmsampling,exact", "unknown mode"),
])
def test_bad_mode_refused(bad, needle):
    with pytest.raises(ValueError, match=needle):
        cproton.start("bad", backend="cupti", mode=bad)
    assert cproton._cproton.session_count() == 0


@pytest.mark.parametrize("obj,text", [
    (mode.PMSampling(), "pmsampling"),
    (mode.PMSampling(metrics=["dram_throughput%", "sm__inst_executed.sum"], interval=100000),
     "pmsampling:metrics=dram_throughput%,sm__inst_executed.sum:interval=100000"),
    (mode.PMSampling(exact=True, ranges=64), "pmsampling:exact:ranges=64"),
])
def test_mode_object_strings_parse(obj, text):
    assert str(obj) == text
    cproton._cproton.check_mode("cupti", str(obj))  # the C parser takes it


def test_mode_object_refuses_bad_fields():
    with pytest.raises(TypeError):
        mode.PMSampling(metrics="dram_throughput%")  # a string, not a list
    with pytest.raises(TypeError):
        mode.PMSampling(metrics=["a,b"])
    with pytest.raises(ValueError):
        mode.PMSampling(interval=-1)
    with pytest.raises(TypeError):
        mode.PMSampling(exact=1)


def test_mode_object_accepted_by_start():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cproton.start("ok", backend="cupti", mode=mode.PMSampling(interval=500000))
    cproton.finalize()
