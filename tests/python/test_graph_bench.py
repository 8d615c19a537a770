"""bench/fresh_process.py's harness runs end to end without a GPU (the `cpu`
workload), and bench/graph_check.py's path-by-path comparison finds every
misplaced kernel (issue 23). No timing is checked: the GPU run's business."""
import json
import sys
from pathlib import Path

from conftest import run_python

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))


def test_fresh_process_on_the_cpu_workload(tmp_path):
    out = tmp_path / "fresh"
    r = run_python([str(BENCH / "fresh_process.py"), "--workloads", "cpu", "--variants",
                    "none,cproton", "--rounds", "2", "--steps", "cpu=50", "--warmup", "cpu=2",
                    "--out", str(out)], cwd=tmp_path)
    assert r.returncode == 0, r.stderr + r.stdout
    results = [line for line in r.stdout.splitlines() if line.startswith("RESULT fresh cpu")]
    assert len(results) == 2, r.stdout
    summary = json.loads((out / "fresh.json").read_text())
    assert [len(summary["runs"][v]) for v in ("none", "cproton")] == [2, 2]
    st = summary["summary"]["cpu"]["cproton"]
    assert st["n"] == 2 and st["x_none"] > 0 and st["kernels"] == 0, st
    assert len(list((out / "profiles").glob("cpu_cproton_*.hatchet"))) == 2


def _tree(paths):
    """A hatchet tree with a kernel node (count n) at each path."""
    root = {"frame": {"name": "ROOT"}, "metrics": {}, "children": []}
    for path, n in paths.items():
        node = root
        for name in path:
            kids = [c for c in node["children"] if c["frame"]["name"] == name]
            if not kids:
                kids = [{"frame": {"name": name}, "metrics": {}, "children": []}]
                node["children"].append(kids[0])
            node = kids[0]
        node["metrics"] = {"count": n, "time (ns)": 5 * n, "device_id": "0"}
    return [root]


def test_graph_check_compares_path_by_path():
    import graph_check
    ref = graph_check.kernel_paths(_tree({
        ("m", "<captured_at>", "m", "cublas", "nvjet"): 30, ("m", "cublas", "nvjet"): 1}))
    assert ref == {("m", "<captured_at>", "m", "cublas", "nvjet"): 30, ("m", "cublas", "nvjet"): 1}
    same = dict(ref)
    assert graph_check.compare(ref, same, True) == (0, 0, [])
    # the misplacement: replays under the launch scope, no capture path
    moved = {("m", "nvjet"): 30, ("m", "cublas", "nvjet"): 1}
    mis, missing, lines = graph_check.compare(ref, moved, True)
    assert (mis, missing) == (30, 30) and "only cproton: m/nvjet count=30" in lines
    # counts: a failure only where the workload is deterministic
    more = dict(ref)
    more[("m", "cublas", "nvjet")] = 2
    assert graph_check.compare(ref, more, True)[0] == 1
    assert graph_check.compare(ref, more, False)[0] == 0


def test_graph_crash_names_a_crash_and_its_frames(tmp_path):
    """bench/graph_crash.py on the CPU: a child that dies of SIGSEGV is
    reported with its signal and the native backtrace of the crashing thread
    (bench/segv_backtrace.c, preloaded), frames in cproton's library named
    from its symbol table; the verdict tells CUPTI's crash from cproton's."""
    import types
    import graph_crash
    args = types.SimpleNamespace(timeout=60, out=str(tmp_path), cupti=None, workloads=["cpu"],
                                 steps="", floor_lib=None)
    (tmp_path / "logs").mkdir()
    preload = graph_crash.build_segv(str(tmp_path))
    crash = [sys.executable, "-c", "import ctypes; ctypes.string_at(0)"]
    orig = graph_crash.child_cmd
    graph_crash.child_cmd = lambda v, a: crash
    try:
        assert graph_crash.run("cproton-graph", args, preload, {}) == -11
    finally:
        graph_crash.child_cmd = orig
    log = (tmp_path / "logs" / "cproton-graph.err").read_text()
    assert "native backtrace (signal 11" in log and "Segmentation fault" in log
    syms = graph_crash.Symbols(graph_crash.__file__)  # not a library: no symbols
    assert syms.name(0x10) is None
    lib = graph_crash.Symbols(preload)
    at = lib.addrs[lib.names.index("on_fatal")]
    text = f"native backtrace (signal 11, thread 1):\n{preload}(+{at + 4:#x})[0x1]\nend"
    assert graph_crash.native_backtrace(text, {preload: lib})[1].endswith("<- on_fatal+0x4")
    ran = graph_crash.VARIANTS
    assert "CUPTI" in graph_crash.verdict(["floor-graph", "cproton-graph"], ran)
    assert "lazy" in graph_crash.verdict(["cproton-graph"], ran)
    assert "cproton's" in graph_crash.verdict(["cproton-graph", "cproton-graph-eager"], ran)
    assert graph_crash.verdict([], ran) == "no variant crashed"
