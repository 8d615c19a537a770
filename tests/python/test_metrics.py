"""Metric rules: names ending in "(exc)" are exclusive, "(pty)" properties
(last value wins), anything else is summed over every entry of a scope; a
metric keeps the type of its first value."""
import pytest

import cproton as proton

from conftest import load_tree


def tree_of(fn):
    sid = proton.start("m")
    fn()
    proton.finalize(sid)
    return load_tree("m.hatchet")


def test_sum_rule_int_and_float():
    def body():
        for _ in range(3):
            with proton.scope("s", {"i": 2, "f": 0.5}):
                pass
    assert tree_of(body)["s"]["@"] == {"i": 6, "f": 1.5}


def test_property_last_value_wins():
    def body():
        for v in (1, 7, 3):
            with proton.scope("s", {"p(pty)": v}):
                pass
    m = tree_of(body)["s"]["@"]
    assert list(m.values()) == [3]
    assert list(m) == ["p"]


def test_suffix_stripped_in_output_like_proton():
    def body():
        with proton.scope("s", {"x(exc)": 1, "p(pty)": 2}):
            pass
    assert tree_of(body)["s"]["@"] == {"x": 1, "p": 2}


def test_exclusive_not_summed_into_parent():
    def body():
        with proton.scope("outer", {"e(exc)": 1}):
            with proton.scope("inner", {"e(exc)": 5}):
                pass
    t = tree_of(body)
    assert list(t["outer"]["@"].values()) == [1]
    assert list(t["outer"]["inner"]["@"].values()) == [5]


def test_metrics_on_exit_and_by_id():
    def body():
        sid_scope = proton.enter_scope("s")
        proton.exit_scope("s", metrics={"after": 1.0})
        with proton.scope("t") as t:
            pass
        proton._cproton.add_metrics(t.id, {"later": 2})
        assert isinstance(sid_scope, int)
    t = tree_of(body)
    assert t["s"]["@"] == {"after": 1.0}
    assert t["t"]["@"] == {"later": 2}


def test_type_change_is_runtime_error():
    """Proton's C++ throws std::runtime_error, RuntimeError in Python."""
    proton.start("m")
    with proton.scope("s", {"v": 1}):
        pass
    with pytest.raises(RuntimeError, match="type"):
        with proton.scope("s", {"v": 1.5}):
            pass


@pytest.mark.parametrize("metrics,exc", [
    ({1: 2}, TypeError),
    ({"v": None}, TypeError),
    ({"time (ns)": 1}, ValueError),
    ({"count": 1}, ValueError),
    ({"v": 2**70}, ValueError),
])
def test_bad_metrics(metrics, exc, proton36):  # string and reserved-name rules: 3.6's
    proton.start("m")
    with pytest.raises(exc):
        proton.enter_scope("s", metrics=metrics)
    assert proton._cproton.depth() == 0, "a scope whose metrics raise is not left open"


def test_metrics_must_be_dict():
    with pytest.raises(TypeError):
        proton.scope("s", [("a", 1)])
    proton.start("m")
    with pytest.raises(TypeError):
        proton.enter_scope("s", metrics=[1])
    assert proton._cproton.depth() == 0


def test_numpy_like_values_accepted():
    import fractions
    import decimal

    class Idx:
        def __index__(self):
            return 4

    def body():
        with proton.scope("s", {"a": Idx(), "b": fractions.Fraction(1, 2), "c": decimal.Decimal("1.5")}):
            pass
    assert tree_of(body)["s"]["@"] == {"a": 4, "b": 0.5, "c": 1.5}
