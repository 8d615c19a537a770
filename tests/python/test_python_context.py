"""context="python": frames are "file:line@function", outermost first,
collected in C, cached, correct when the launching thread released the GIL,
and Triton's launch machinery (and cproton's own frames) are dropped."""
import os
import threading

import pytest

import cproton as proton
from cproton import _cproton as C

from conftest import load_tree

HERE = os.path.abspath(__file__)


def frames_here():
    return proton.context.python_frames()


def test_frame_format_and_order():
    frames = frames_here()
    assert frames[-1].startswith(f"{HERE}:") and frames[-1].endswith("@frames_here")
    assert frames[-2].endswith("@test_frame_format_and_order")
    line = int(frames[-1].split(":")[-1].split("@")[0])
    with open(HERE) as f:
        assert "python_frames()" in f.read().splitlines()[line - 1]
    assert not any("/cproton/" in f and "site-packages" not in f and "tests" not in f for f in frames)


def launch_in_helper(release_gil):
    C._fake_launch("k", release_gil=release_gil)


def test_kernels_under_python_frames_with_and_without_gil():
    sid = proton.start("py", context="python", backend="fake")
    for release in (True, False, True):
        launch_in_helper(release)
    proton.finalize(sid)
    tree = load_tree("py.hatchet")
    node = tree
    path = []
    while "k" not in node:
        (name,) = [k for k in node if k != "@" and k.startswith(HERE)] or [next(k for k in node if k != "@")]
        path.append(name)
        node = node[name]
    assert node["k"]["@"]["count"] == 3  # one node: with and without the GIL agree
    assert path[-1].endswith("@launch_in_helper")
    assert path[-2].endswith("@test_kernels_under_python_frames_with_and_without_gil")


def test_threads_have_own_frames():
    sid = proton.start("py", context="python", backend="fake")

    def thread_main():
        launch_in_helper(True)

    t = threading.Thread(target=thread_main)
    t.start()
    t.join()
    proton.finalize(sid)
    text = repr(load_tree("py.hatchet"))
    assert "@thread_main" in text and "threading.py" in text


def test_skip_prefixes(tmp_path):
    helper = tmp_path / "fake_triton_runtime.py"
    helper.write_text("def run(fn):\n    return fn()\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("fake_triton_runtime", helper)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert any("fake_triton_runtime" in f for f in mod.run(frames_here))
    default = proton.context.default_python_skip()
    try:
        proton.context.set_python_skip(default + [str(tmp_path)])
        frames = mod.run(frames_here)
        assert not any("fake_triton_runtime" in f for f in frames)
        assert frames[-1].endswith("@frames_here")
    finally:
        proton.context.set_python_skip(default)


def test_default_skip_covers_triton_runtime():
    skip = proton.context.default_python_skip()
    assert any(p.rstrip(os.sep).endswith(os.path.join("triton", "runtime")) for p in skip)
    assert any(p.rstrip(os.sep).endswith("cproton") for p in skip)


def test_scope_metrics_in_python_context():
    sid = proton.start("py", context="python")
    for _ in range(2):
        with proton.scope("ignored_name", {"n": 1}):
            pass
    proton.finalize(sid)
    assert "'n': 2" in repr(load_tree("py.hatchet"))


# ---- the walk memos (issue 28): a repeated call path reuses the last walk's
# frames and tree nodes; every change below must still move the kernel.

def kernel_paths(tree, kernel):
    """Every path (frame names, outermost first) that leads to `kernel`."""
    out = []

    def visit(node, path):
        for name, child in node.items():
            if name == "@":
                continue
            if name == kernel:
                out.append((path, child["@"]["count"]))
            visit(child, path + [name])

    visit(tree, [])
    return out


def functions(path):
    return [p.rsplit("@", 1)[1] for p in path if p.startswith(HERE)]


def memo_leaf(name):
    C._fake_launch(name)  # leaf line 1
    C._fake_launch(name + "_2")  # leaf line 2: same frames, other offset


def memo_mid(name):
    memo_leaf(name)


def memo_outer_a(name):
    memo_mid(name)


def memo_outer_b(name):
    memo_leaf(name)


def test_memo_repeated_paths_keep_their_places():
    # Interleaved: same path again, other line in the innermost frame, one
    # frame deeper or shallower, another outer frame, the test frame itself.
    plan = [("a", memo_outer_a), ("b", memo_outer_b), ("a", memo_outer_a), ("m", memo_mid),
            ("b", memo_outer_b), ("l", memo_leaf), ("a", memo_outer_a)] * 3
    sid = proton.start("py", context="python", backend="fake")
    for name, fn in plan:
        fn(name)
    C._fake_launch("top")
    proton.finalize(sid)
    tree = load_tree("py.hatchet")
    want = {"a": ["memo_outer_a", "memo_mid", "memo_leaf"], "b": ["memo_outer_b", "memo_leaf"],
            "m": ["memo_mid", "memo_leaf"], "l": ["memo_leaf"]}
    test = "test_memo_repeated_paths_keep_their_places"
    for name, fns in want.items():
        n = sum(1 for k, _ in plan if k == name)
        for kernel in (name, name + "_2"):
            paths = kernel_paths(tree, kernel)
            assert len(paths) == 1 and paths[0][1] == n, (kernel, paths)
            assert functions(paths[0][0]) == [test] + fns, (kernel, paths)
        # the two kernels differ only by the innermost line
        (p1, _), = kernel_paths(tree, name)
        (p2, _), = kernel_paths(tree, name + "_2")
        assert p1[:-1] == p2[:-1] and p1[-1] != p2[-1]
    (top, _), = kernel_paths(tree, "top")
    assert functions(top) == [test]


def test_memo_after_the_tree_is_freed():
    # The last finalize frees the tree; the thread's memo of nodes must not
    # outlive it: the next session's kernels land on its own nodes.
    for round_ in range(3):
        sid = proton.start(f"py{round_}", context="python", backend="fake")
        for _ in range(3):
            memo_outer_a("k")
        proton.finalize(sid)
        tree = load_tree(f"py{round_}.hatchet")
        paths = kernel_paths(tree, "k")
        assert len(paths) == 1 and paths[0][1] == 3, paths
        assert functions(paths[0][0])[-3:] == ["memo_outer_a", "memo_mid", "memo_leaf"]


def test_memo_follows_a_skip_change(tmp_path):
    helper = tmp_path / "fake_triton_runtime.py"
    helper.write_text("def run(fn, *a):\n    return fn(*a)\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("fake_triton_runtime", helper)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    default = proton.context.default_python_skip()
    sid = proton.start("py", context="python", backend="fake")
    try:
        for skip, kernel in ((default, "kept"), (default + [str(tmp_path)], "skipped"), (default, "again")):
            proton.context.set_python_skip(skip)
            for _ in range(2):
                mod.run(memo_leaf, kernel)  # the same frames each time
    finally:
        proton.context.set_python_skip(default)
        proton.finalize(sid)
    tree = load_tree("py.hatchet")
    for kernel, through_helper in (("kept", True), ("skipped", False), ("again", True)):
        paths = kernel_paths(tree, kernel)
        assert len(paths) == 1 and paths[0][1] == 2, (kernel, paths)
        assert any("fake_triton_runtime" in p for p in paths[0][0]) == through_helper, (kernel, paths)


def memo_gen(kernel):
    C._fake_launch(kernel)


def test_memo_code_object_at_a_reused_address():
    # Launches with the GIL released make cache entries that own no code
    # object; a function freed and another made in its place can take the
    # same address, with the same bytecode offsets and first line, and its
    # name string the address of the old name. Its frame must still be named
    # after the new function (old code: "gen7" was named "gen1").
    import types
    sid = proton.start("py", context="python", backend="fake")
    codes, names = [], []
    for i in range(40):
        code = memo_gen.__code__.replace(co_name=f"gen{i}")  # not interned: freed with it
        fn = types.FunctionType(code, globals())
        codes.append(id(code))
        names.append(id(code.co_name))
        fn(f"g{i}")
        del fn, code
    proton.finalize(sid)
    # the case under test happened: one code address twice in a row, and a
    # name at an address an earlier name had
    assert any(a == b for a, b in zip(codes, codes[1:])), "no code address reused"
    assert len(set(names)) < len(names), "no name address reused"
    tree = load_tree("py.hatchet")
    for i in range(40):
        paths = kernel_paths(tree, f"g{i}")
        assert len(paths) == 1, (i, paths)
        assert paths[0][0][-1].endswith(f"@gen{i}"), (i, paths)


def test_callers_of_a_function_dropped(tmp_path):
    # set_python_skip's callers_of: the callers of "file-prefix@function"
    # are dropped (torch's handle_torch_function, issue 28), in a launch's
    # path (the memo) and in python_frames() (the plain walk) alike.
    helper = tmp_path / "router_mod.py"
    helper.write_text("def route(fn, *a):\n    return fn(*a)\n\n"
                      "def via(fn, *a):\n    return route(fn, *a)\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("router_mod", helper)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    skip = proton.context.default_python_skip()
    proton.context.set_python_skip(skip, [f"{helper}@route"])
    try:
        frames = mod.via(frames_here)
        sid = proton.start("py", context="python", backend="fake")
        for _ in range(2):
            mod.via(memo_leaf, "routed")
        proton.finalize(sid)
    finally:
        proton.context.set_python_skip(skip)
    names = [f.rsplit("@", 1)[1] for f in frames]
    assert names[-3:] == ["test_callers_of_a_function_dropped", "route", "frames_here"], frames
    (path, count), = kernel_paths(load_tree("py.hatchet"), "routed")
    assert count == 2
    assert [p.rsplit("@", 1)[1] for p in path][-3:] == ["test_callers_of_a_function_dropped", "route",
                                                         "memo_leaf"], path
    back = [f.rsplit("@", 1)[1] for f in mod.via(frames_here)]
    assert back[-3:] == ["via", "route", "frames_here"]  # the list is back to none
    for bad in ([1], 5):
        with pytest.raises(TypeError):
            proton.context.set_python_skip(skip, bad)
    proton.context.set_python_skip(skip)
