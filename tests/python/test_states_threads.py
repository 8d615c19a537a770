"""States and threads: scopes, states and ops are per thread; kernels land
under the launching thread's context."""
import threading

import pytest

import cproton as proton
from cproton import _cproton as C

from conftest import load_tree


def test_nested_states_restore_outer():
    sid = proton.start("s", backend="fake")
    with proton.state("outer"):
        with proton.state("inner"):
            C._fake_launch("k1")
        C._fake_launch("k2")
    proton.enter_state("free")
    C._fake_launch("k3")
    proton.exit_state()
    proton.finalize(sid)
    t = load_tree("s.hatchet")
    assert "k1" in t["inner"] and "k2" in t["outer"] and "k3" in t["free"]


def test_state_decorator_and_inactive():
    @proton.state("deco")
    def f():
        C._fake_launch("k")

    f()  # profiling off: nothing happens
    sid = proton.start("s", backend="fake")
    f()
    proton.finalize(sid)
    assert "k" in load_tree("s.hatchet")["deco"]


def test_exit_state_without_enter_raises():
    proton.start("s")
    with pytest.raises(ValueError, match="exit_state without enter_state"):
        proton.exit_state()
    with proton.state("a"):  # the context manager exits only what it entered
        pass


def test_scopes_per_thread_and_concurrency():
    sid = proton.start("t", backend="fake")
    n_threads, n_iter = 8, 200
    errors = []

    def worker(i):
        try:
            for _ in range(n_iter):
                with proton.scope(f"thread{i % 2}", {"n": 1}):
                    C._fake_launch("k")
                    assert proton.context.depth(sid) == 1
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    proton.finalize(sid)
    tree = load_tree("t.hatchet")
    for name in ("thread0", "thread1"):
        assert tree[name]["@"] == {"n": n_threads // 2 * n_iter}
        assert tree[name]["k"]["@"]["count"] == n_threads // 2 * n_iter


def test_thread_exit_scope_is_own_stack():
    sid = proton.start("t")
    proton.enter_scope("main")
    seen = []

    def other():
        with pytest.raises(ValueError):
            proton.exit_scope()  # this thread has no open scope
        seen.append(proton.context.depth(sid))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [0]
    assert proton.exit_scope("main") is not None


def test_context_depth():
    assert proton.context.depth() is None  # profiling off
    sid = proton.start("d")
    assert proton.context.depth(sid) == 0
    with proton.scope("a"):
        with proton.scope("b"):
            assert proton.context.depth(sid) == 2
    assert proton.context.depth(sid) == 0
