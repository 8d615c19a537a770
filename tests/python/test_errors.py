"""Bad input raises Proton's exception type with a message (RuntimeError
where Proton's C++ rejects it, TypeError/ValueError otherwise; the table is
in docs/python.md); unbalanced scopes are reported (ValueError for explicit
exits, CprotonWarning for a `with` scope whose exit cannot pop); nothing
crashes."""
import pytest

import cproton as proton


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"context": "nope"}, RuntimeError, "context"),
    ({"data": "graph"}, RuntimeError, "data"),
    ({"backend": "roctracer"}, RuntimeError, "backend"),
    ({"mode": "bogus"}, ValueError, "unknown mode"),
    ({"hook": "torch"}, ValueError, "hook"),
    ({"context": 3}, TypeError, "context"),
    ({"mode": 3}, TypeError, "mode"),
])
def test_start_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        proton.start("x", **kwargs)
    assert proton._cproton.session_count() == 0


def test_start_bad_name_type():
    with pytest.raises(TypeError):
        proton.start(42)


def test_unknown_session_ids():
    for call in (proton.activate, proton.deactivate, proton.data.get, proton.data.advance_phase,
                 proton.data.clear, proton.data.is_phase_complete):
        with pytest.raises(RuntimeError, match="^Session has not been initialized: 7$"):
            call(7)
    with pytest.warns(proton.CprotonWarning, match="Session has not been initialized: 7"):
        proton.finalize(7)  # Proton ignores it: finalizing twice is not an error
    with pytest.raises(TypeError):
        proton.finalize("0")


def test_context_depth_unknown_session():
    session = proton.start("x", backend="none")
    assert proton.context.depth(session) == 0
    with pytest.raises(RuntimeError, match=f"Session has not been initialized: {session + 1}"):
        proton.context.depth(session + 1)
    proton.finalize(session)


def test_scope_name_types():
    with pytest.raises(TypeError):
        proton.scope(None)
    proton.start("x")
    with pytest.raises(TypeError):
        proton.enter_scope(1)
    with pytest.raises(ValueError):
        proton.enter_scope("")
    with pytest.raises(TypeError):
        proton.state(3)


def test_unbalanced_exit_scope():
    sid = proton.start("x")
    with pytest.raises(ValueError, match="without a matching"):
        proton.exit_scope()
    proton.enter_scope("a")
    with pytest.raises(ValueError, match="does not match"):
        proton.exit_scope("b")
    assert proton.context.depth(sid) == 1  # nothing popped
    assert proton.exit_scope("a") is not None


def test_with_scope_popped_inside_warns():
    proton.start("x")
    with pytest.warns(proton.CprotonWarning):
        with proton.scope("a"):
            proton.exit_scope("a")


def test_profiling_off_is_noop():
    assert proton.enter_scope("a") is None
    assert proton.exit_scope() is None
    with proton.scope("a") as s:
        assert s.id is None


def test_deep_nesting_limit():
    proton.start("x")
    depth = 0
    with pytest.raises(ValueError, match="deeper"):
        for _ in range(5000):
            proton.enter_scope("d")
            depth += 1
    for _ in range(depth):
        proton.exit_scope()


def test_cpu_timed_scope_reserved_metric():
    with pytest.raises(ValueError):
        proton.cpu_timed_scope("a", {"cpu_time": 1})


def test_launch_filter_bad_regex():
    with pytest.raises(ValueError):
        proton.hooks.launch.set_filter(include="(")
    with pytest.raises(TypeError):
        proton.hooks.launch.set_filter(include=3)
