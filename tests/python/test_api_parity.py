"""cproton's Python API against Proton's (triton.profiler, Triton 3.6),
compared through inspect on both packages -- no hand-copied name list."""
import dataclasses
import inspect
import re
import types

import pytest

tp = pytest.importorskip("triton.profiler")
import triton.profiler.context  # noqa: E402,F401
import triton.profiler.flags  # noqa: E402,F401
import triton.profiler.hooks.hook  # noqa: E402,F401
import triton.profiler.hooks.launch  # noqa: E402,F401
import triton.profiler.mode  # noqa: E402,F401
import triton.profiler.specs  # noqa: E402,F401
import triton.profiler.state  # noqa: E402,F401
import triton.profiler.scope  # noqa: E402,F401

import cproton  # noqa: E402
import cproton.language  # noqa: E402
import cproton.proton  # noqa: E402

PROTON_PUBLIC = sorted(n for n in dir(tp) if not n.startswith("_"))
# compared with the installed Proton: its version's behaviour (mode reprs)
pytestmark = pytest.mark.usefixtures("installed_proton")


def params(obj):
    sig = inspect.signature(obj)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def test_top_level_names_exist():
    missing = [n for n in PROTON_PUBLIC if not hasattr(cproton, n)]
    assert not missing
    assert PROTON_PUBLIC  # sanity: the reference is not empty


def same_or_later(ours, theirs):
    """3.6's parameters, then only parameters with defaults that Proton 3.9
    appended (deactivate(flushing=))."""
    mine, ref = params(ours), params(theirs)
    return mine[:len(ref)] == ref and all(d is not inspect.Parameter.empty for _, _, d in mine[len(ref):])


@pytest.mark.parametrize("name", [n for n in PROTON_PUBLIC if callable(getattr(tp, n))])
def test_top_level_signatures(name):
    assert same_or_later(getattr(cproton, name), getattr(tp, name)), name


def test_top_level_kinds_match():
    for n in PROTON_PUBLIC:
        ours, theirs = getattr(cproton, n), getattr(tp, n)
        assert isinstance(ours, types.ModuleType) == isinstance(theirs, types.ModuleType), n
        assert inspect.isclass(ours) == inspect.isclass(theirs), n
    assert cproton.DEFAULT_PROFILE_NAME == tp.DEFAULT_PROFILE_NAME


def own_members(mod):
    return {n: o for n, o in vars(mod).items()
            if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o))
            and getattr(o, "__module__", None) == mod.__name__}


SUBMODULES = ["context", "specs", "mode", "state", "scope", "hooks.hook", "hooks.launch"]


@pytest.mark.parametrize("sub", SUBMODULES)
def test_submodule_members(sub):
    theirs = own_members(__import__(f"triton.profiler.{sub}", fromlist=["x"]))
    ours_mod = __import__(f"cproton.{sub}", fromlist=["x"])
    for name, obj in theirs.items():
        assert hasattr(ours_mod, name), f"cproton.{sub}.{name} missing"
        mine = getattr(ours_mod, name)
        if inspect.isfunction(obj):
            assert params(mine) == params(obj), f"{sub}.{name}"
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("__") or not callable(member):
                    continue
                assert hasattr(mine, attr), f"{sub}.{name}.{attr} missing"


def test_profile_module_functions():
    prof = __import__("triton.profiler.profile", fromlist=["x"])
    ours = __import__("cproton.profile", fromlist=["x"])
    for name in ("start", "activate", "deactivate", "finalize", "profile"):
        assert same_or_later(getattr(ours, name), getattr(prof, name)), name


def test_mode_dataclasses_and_strings():
    from triton.profiler import mode as pm
    from cproton import mode as cm
    for cls in ("BaseMode", "PCSampling", "InstrumentationMode", "Default", "MMA"):
        theirs, ours = getattr(pm, cls), getattr(cm, cls)
        tf = [(f.name, f.init) for f in dataclasses.fields(theirs)]
        of = [(f.name, f.init) for f in dataclasses.fields(ours)]
        assert tf == of, cls
    cases = [
        {},
        {"granularity": "warp_group", "buffer_type": "global", "buffer_size": 1024},
        {"sampling_strategy": "selective", "sampling_options": "0,4", "optimizations": "clock32,time_shift"},
        {"metric_type": "cycle", "buffer_strategy": "flush", "granularity": "cta"},
    ]
    for kw in cases:
        for cls in ("Default", "MMA"):
            assert str(getattr(cm, cls)(**kw)) == str(getattr(pm, cls)(**kw)), (cls, kw)
            assert repr(getattr(cm, cls)(**kw)) == repr(getattr(pm, cls)(**kw)), (cls, kw)
    for iv in (1, 1000, 12345):
        assert str(cm.PCSampling(interval=iv)) == str(pm.PCSampling(interval=iv))
    with pytest.raises(ValueError):
        cm.PCSampling(interval=0)
    with pytest.raises(ValueError):
        cm.Default(granularity="warp_3")
    with pytest.raises(ValueError):
        cm.Default(optimizations="nope")
    assert set(cm.granularities) == set(pm.granularities)
    for table in ("metric_types", "buffer_strategies", "buffer_types", "sampling_strategies", "granularities"):
        for k, v in getattr(pm, table).items():
            assert str(getattr(cm, table)[k]) == str(v) and int(getattr(cm, table)[k].value) == int(getattr(v, "value", v))


def test_mode_accepts_triton_enums():
    from triton.profiler import mode as pm
    from cproton import mode as cm
    theirs = pm.Default(granularity="warp_group")
    ours = cm.Default(granularity=theirs.granularity, buffer_type=theirs.buffer_type)
    assert str(ours) == str(theirs)


def test_mode_string_parser_matches_instrumentation_hook():
    from triton.profiler.hooks.instrumentation import _interpret_mode
    from cproton.mode import parse_instrumentation_mode
    for text in ("default", "mma", "default:granularity=warp_group:buffer_size=4096",
                 "mma:optimizations=clock32:buffer_type=global"):
        assert str(parse_instrumentation_mode(text)) == str(_interpret_mode(text))
    for bad in ("nope", "default:granularity", "default:granularity=x"):
        with pytest.raises(ValueError):
            parse_instrumentation_mode(bad)


def test_specs_numbers():
    from triton.profiler import specs as ps
    from cproton import specs as cs
    for arch, sms, clk in (("80", 108, 1410000), ("89", 128, 2520000), ("90", 132, 1980000),
                           ("100", 148, 1965000)):
        for width in (8, 16, 32, 64):
            assert cs.max_flops("CUDA", arch, width, sms, clk) == pytest.approx(
                ps.max_flops("CUDA", arch, width, sms, clk), rel=1e-12)
    for arch in ("gfx90a", "gfx942", "gfx950"):
        assert cs.max_flops("HIP", arch, 16, 304, 2.1) == pytest.approx(ps.max_flops("HIP", arch, 16, 304, 2.1))
        assert cs.max_bps("HIP", arch, 8192, 1.0) == ps.max_bps("HIP", arch, 8192, 1.0)
    assert cs.max_bps("CUDA", "90", 6016, 3201000) == ps.max_bps("CUDA", "90", 6016, 3201000)
    with pytest.raises(ValueError):
        cs.max_flops("CUDA", "70", 16, 1, 1)
    with pytest.raises(ValueError):
        cs.max_flops("TPU", "1", 16, 1, 1)


def test_flags_fields():
    from triton.profiler.flags import flags as pf
    from cproton.flags import flags as cf
    assert [f.name for f in dataclasses.fields(pf)] == [f.name for f in dataclasses.fields(cf)]
    for f in dataclasses.fields(pf):
        assert hasattr(cf, f.name)


def test_hook_manager_and_launch_hook():
    from triton.profiler.hooks import hook as ph, launch as pl
    from cproton.hooks import hook as ch, launch as cl
    for name, member in vars(ph.HookManager).items():
        if isinstance(member, staticmethod):
            assert params(getattr(ch.HookManager, name)) == params(getattr(ph.HookManager, name)), name
    if hasattr(pl.LaunchHook, "metrics"):  # Proton 3.6's list (3.9 takes any number)
        assert cl.LaunchHook.metrics == pl.LaunchHook.metrics
    assert cl.LaunchHook.priority == pl.LaunchHook.priority
    if hasattr(pl, "COMPUTE_METADATA_SCOPE_NAME"):  # Proton 3.6's place; 3.9's is state
        assert cl.COMPUTE_METADATA_SCOPE_NAME == pl.COMPUTE_METADATA_SCOPE_NAME
    if hasattr(pl.LaunchHook, "configure"):  # Proton 3.9
        assert params(cl.LaunchHook.configure) == params(pl.LaunchHook.configure)
        meta = {"name": "k", "function": 1, "stream": 0, "flops": 1.0, "n": 3, "flag": True, "s": "x", "o": None}
        assert cl.LaunchHook._extract_metrics(meta) == pl.LaunchHook._extract_metrics(meta)
    assert cl.LaunchHook() is cl.LaunchHook()


def test_language_names():
    pl = pytest.importorskip("triton.profiler.language")
    for name in ("enter_scope", "exit_scope", "scope", "record", "enable_semantic", "disable_semantic"):
        assert hasattr(cproton.language, name), name
    for name in ("scope", "enable_semantic", "disable_semantic", "record"):
        assert params(getattr(cproton.language, name)) == params(getattr(pl, name)), name


def _options(help_text):
    return set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", help_text))


def test_cli_options_superset(capsys):
    from triton.profiler import proton as pp
    import sys
    for mod in (pp, cproton.proton):
        argv = sys.argv
        sys.argv = ["prog", "--help"]
        try:
            with pytest.raises(SystemExit):
                mod.parse_arguments()
        finally:
            sys.argv = argv
    out = capsys.readouterr().out
    # both helps printed; split on the usage line of each
    theirs, ours = out.split("usage:")[1], out.split("usage:")[2]
    missing = _options(theirs) - _options(ours)
    assert not missing, missing
