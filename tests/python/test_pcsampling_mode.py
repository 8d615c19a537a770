"""PC-sampling modes from Python without a GPU: bad options are refused at
start naming the valid range (also where CUPTI is not available), Proton's
mode object gives a valid string, and a second session with another mode is
refused with Proton's message."""
import warnings

import pytest

import cproton
from cproton import mode


@pytest.mark.parametrize("bad,needle", [
    ("pcsampling:interval=abc", "32..2147483648"),
    ("pcsampling:interval=7", "32..2147483648"),
    ("pcsampling:interval=4294967296", "32..2147483648"),
    ("pcsampling:buffer=1", "64..1048576"),
    ("pcsampling:first=1001", "0..1000"),
    ("pcsampling:drain=20", "unknown option"),  # removed: exact mode instead
    ("pcsampling:nope", "unknown option"),
    ("pcsamplingz", "unknown mode"),
])
def test_bad_mode_refused(bad, needle):
    with pytest.raises(ValueError, match=needle):
        cproton.start("bad", backend="cupti", mode=bad)
    assert cproton._cproton.session_count() == 0


def test_mode_object_accepted():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cproton.start("ok", backend="cupti", mode=mode.PCSampling(interval=4096))
    cproton.finalize()


def test_second_session_other_mode_refused():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cproton.start("a", backend="fake", mode="pcsampling")
        cproton.start("b", backend="fake", mode="pcsampling")
        with pytest.raises(RuntimeError, match="Cannot add a session with the same profiler "
                                             "but a different mode than existing sessions"):
            cproton.start("c", backend="fake")
    cproton.finalize()
