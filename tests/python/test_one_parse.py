"""Issue 25: the mode parsed once in C, the C probe, the mode classes
validated by the C parsers, and the environment read through the
configuration table."""
import sys

import pytest

import cproton as proton
from cproton import _config, _cproton, mode
from cproton.hooks import instrumentation as instr

profile = sys.modules["cproton.profile"]  # the module (cproton.profile is the decorator)


def _cupti_built() -> bool:
    """Whether the library has the CUPTI backend, whose parser the CPU-only
    backend applies (without it, any mode string is taken)."""
    try:
        _cproton.check_mode(None, "no-such-mode")
    except ValueError:
        return True
    return False


def test_gpu_presence_is_the_c_probe(monkeypatch):
    """Python asks the C backends' probe whether a GPU is there (no ctypes
    load of libcuda of its own): a probe that finds one means the library
    chooses the backend."""
    backend, runs, devices = _cproton.probe(None)
    assert runs and (backend == "none") == (devices == 0)
    assert _cproton.probe("none") == ("none", 1, devices)
    with pytest.raises(ValueError, match="unknown backend 'nosuch'"):
        _cproton.probe("nosuch")
    monkeypatch.setattr(_cproton, "probe", lambda backend=None: ("cupti", 1, 2))
    assert profile._select_backend(None) is None
    monkeypatch.setattr(_cproton, "probe", lambda backend=None: ("none", 1, 0))
    monkeypatch.setattr(profile, "_warned_no_gpu", True)
    assert profile._select_backend(None) == "none"


def test_an_instrumentation_session_parses_its_mode_once(monkeypatch):
    """start(backend="instrumentation") parses the mode string once, in C,
    by the backend when the session starts; the hook reads that parse
    (session_instr_config) and parses nothing itself. Which sessions get
    the hook is the backend's flag (session_wants_instrumentation_hook)."""
    calls = []
    for name in ("instr_mode_parse", "instr_mode_normalize", "session_instr_config"):
        real = getattr(_cproton, name)
        monkeypatch.setattr(_cproton, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    with pytest.warns(proton.CprotonWarning, match="not available here"):
        sid = proton.start("once", backend="instrumentation", mode="default:reduce=kernel:granularity=cta")
    try:
        assert calls == ["session_instr_config"]
        assert _cproton.session_wants_instrumentation_hook(sid)
        hook = next(h for h in proton.hooks.HookManager.active_hooks if isinstance(h, instr.InstrumentationHook))
        assert hook._parsed == _cproton.instr_mode_parse("default:reduce=kernel:granularity=cta", False)
        assert hook.reduce == "kernel" and hook.sums_in_kernel()
        assert hook.mode == mode.Default(granularity="cta")
    finally:
        proton.finalize(sid)
    sid = proton.start("nohook", backend="none")
    assert not _cproton.session_wants_instrumentation_hook(sid)
    with pytest.raises(ValueError, match="does not instrument kernels"):
        _cproton.session_instr_config(sid)
    proton.finalize(sid)
    # a hook built without a session (Proton's API) parses with the same C function
    del calls[:]
    hook = instr.InstrumentationHook("default:reduce=kernel", "tree")
    assert hook.reduce == "kernel" and hook.sums_in_kernel()
    assert hook.mode == mode.Default()
    assert calls == ["instr_mode_parse"]


def test_a_refused_instrumentation_mode_starts_no_session():
    """The backend's parse at start refuses what the hook's parse refused,
    with the same message, and no session is left."""
    for text, data in (("default:buffer_strategy=flsuh", "tree"), ("default:reduce=kernel", "trace"),
                       ("default:reduce=kernel:optimizations=time_shift", "tree")):
        with pytest.raises(ValueError) as standalone:
            _cproton.instr_mode_parse(text, data == "trace")
        with pytest.raises(ValueError) as started:
            proton.start("refused", backend="instrumentation", mode=text, data=data)
        assert str(started.value) == str(standalone.value)
        assert _cproton.session_count() == 0


def test_the_kernel_sums_refusal_is_c_s():
    """reduce=kernel where records are needed is refused by the C parse,
    with the message the Python hook gave."""
    with pytest.raises(ValueError, match="which traces need; use reduce=device"):
        _cproton.instr_mode_parse("default:reduce=kernel", True)
    with pytest.raises(ValueError, match="which time_shift need"):
        _cproton.instr_mode_parse("default:reduce=kernel:optimizations=time_shift", False)
    info = _cproton.instr_mode_parse("default:granularity=warpgroup", False)
    assert info["canonical"] == "default:granularity=warp_group"
    assert info["reduce"] == "auto" and info["sums_in_kernel"] and not info["sums_in_kernel_host_buffer"]


def test_mode_classes_are_validated_by_the_c_parsers():
    """What Proton's classes check keeps Proton's message; what the C
    parser refuses is refused when the class is built, with its message."""
    with pytest.raises(ValueError, match="Unknown granularity: foo"):
        mode.Default(granularity="foo")
    with pytest.raises(ValueError, match="Interval must be a positive integer"):
        mode.PCSampling(interval=0)
    with pytest.raises(ValueError, match="sampling_options"):
        mode.Default(sampling_strategy="selective", sampling_options="0,x")
    # Proton's PCSampling takes interval=5 (API parity); the CUPTI parser
    # refuses it when a session starts
    if _cupti_built():
        with pytest.raises(ValueError, match=r"interval must be an integer in 32\.\.2147483648"):
            proton.start("short", backend="none", mode=mode.PCSampling(interval=5))
    assert str(mode.PCSampling(interval=1000)) == "pcsampling:interval=1000"
    assert str(mode.MMA(buffer_size=4096)).startswith("mma:")


def test_the_session_says_whether_it_wants_loaded_cubins(monkeypatch):
    """Loaded kernels' cubins are handed over when the session's parsed
    mode samples PCs (the C session answers; Python no longer looks at the
    string)."""
    handed = []
    monkeypatch.setattr(profile, "_add_loaded_cubins", lambda: handed.append(1))
    sid = proton.start("cubins", backend="none", mode="PCSampling:interval=1000")
    assert _cproton.session_wants_loaded_cubins(sid) == _cupti_built() == bool(handed)
    proton.finalize(sid)
    sid = proton.start("nocubins", backend="none")
    assert not _cproton.session_wants_loaded_cubins(sid)
    proton.finalize(sid)
    assert len(handed) == _cupti_built()


def test_environment_reads_go_through_the_table(monkeypatch):
    """The Python package reads a variable only as a row of the C table."""
    with pytest.raises(KeyError, match="CPROTON_NOT_A_ROW is not in the configuration table"):
        _config.get("CPROTON_NOT_A_ROW")
    monkeypatch.setenv("CPROTON_TENSOR_METRIC_WORDS", "1024")
    assert _config.get("CPROTON_TENSOR_METRIC_WORDS") == "1024"
    monkeypatch.delenv("CPROTON_TENSOR_METRIC_WORDS")
    assert _config.get("CPROTON_TENSOR_METRIC_WORDS", "65536") == "65536"
