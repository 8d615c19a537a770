"""The cproton command: scripts, pytest, `python -m cproton`, the options,
start/finalize inside the script ignored, exit codes."""
import os
import shutil
import sys
import textwrap

import pytest

from conftest import load_tree, run_python

SCRIPT = """
import sys
import cproton as proton
session = proton.start("ignored_name", context="python")  # ignored under the CLI
assert session is None
with proton.scope("from_script", {"argc": len(sys.argv)}):
    pass
proton.finalize()  # ignored: the command finalizes
with proton.scope("after_finalize"):
    pass
print("ARGS", sys.argv[1:])
"""


def write_script(tmp_path, body=SCRIPT, name="script.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def test_python_m_cproton(tmp_path):
    script = write_script(tmp_path)
    r = run_python(["-m", "cproton", "-n", "cli", str(script), "a", "--b"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "ARGS ['a', '--b']" in r.stdout
    tree = load_tree(tmp_path / "cli.hatchet")
    assert tree["from_script"]["@"] == {"argc": 3}
    assert "after_finalize" in tree
    assert not (tmp_path / "ignored_name.hatchet").exists()


def test_console_script_on_path(tmp_path):
    exe = shutil.which("cproton") or os.path.join(os.path.dirname(sys.executable), "cproton")
    if not os.path.exists(exe):
        pytest.skip("cproton console script not installed (pip install .)")
    script = write_script(tmp_path)
    import subprocess
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    r = subprocess.run([exe, "-n", "cs", "-d", "tree", str(script)], cwd=tmp_path, capture_output=True,
                       text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "from_script" in load_tree(tmp_path / "cs.hatchet")


def test_python_context_option(tmp_path):
    script = write_script(tmp_path, """
        import cproton as proton
        def f():
            with proton.scope("s", {"n": 1}):
                pass
        f()
    """)
    r = run_python(["-m", "cproton", "-c", "python", "-n", "ctx", str(script)], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "@f" in repr(load_tree(tmp_path / "ctx.hatchet"))


def test_script_error_still_writes_profile(tmp_path):
    script = write_script(tmp_path, """
        import cproton as proton
        with proton.scope("before_error"):
            pass
        raise SystemExit(3)
    """)
    r = run_python(["-m", "cproton", "-n", "err", str(script)], cwd=tmp_path)
    assert r.returncode == 3
    assert "before_error" in load_tree(tmp_path / "err.hatchet")


def test_missing_script_and_bad_options(tmp_path):
    r = run_python(["-m", "cproton", "nope.py"], cwd=tmp_path)
    assert r.returncode != 0 and "no such script" in r.stderr
    r = run_python(["-m", "cproton", "-c", "weird", "x.py"], cwd=tmp_path)
    assert r.returncode == 2
    r = run_python(["-m", "cproton", "-b", "roctracer", str(write_script(tmp_path))], cwd=tmp_path)
    assert r.returncode == 2 and "backend" in r.stderr
    r = run_python(["-m", "cproton"], cwd=tmp_path)
    assert r.returncode == 2


def test_pytest_target(tmp_path):
    (tmp_path / "test_inner.py").write_text(textwrap.dedent("""
        import cproton as proton
        def test_one():
            with proton.scope("in_pytest"):
                pass
    """))
    r = run_python(["-m", "cproton", "-n", "pt", "pytest", "-q", "-p", "no:cacheprovider", "test_inner.py"],
                   cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "in_pytest" in load_tree(tmp_path / "pt.hatchet")


def test_native_without_injection_library(tmp_path):
    env_lib = os.environ.pop("CPROTON_INJECTION_LIB", None)
    try:
        r = run_python(["-m", "cproton", "--", "/bin/true"], cwd=tmp_path)
    finally:
        if env_lib:
            os.environ["CPROTON_INJECTION_LIB"] = env_lib
    # either a clear error (no library built) or the program ran
    assert r.returncode in (0, 2)
    if r.returncode == 2:
        assert "injection library" in r.stderr


def test_native_sets_injection_environment(tmp_path):
    lib = tmp_path / "libcproton_fake.so"
    lib.write_text("")
    os.environ["CPROTON_INJECTION_LIB"] = str(lib)
    try:
        r = run_python(["-m", "cproton", "-n", "nat", "-d", "trace", "--", "/usr/bin/env"], cwd=tmp_path)
    finally:
        del os.environ["CPROTON_INJECTION_LIB"]
    assert r.returncode == 0, r.stderr
    assert f"CUDA_INJECTION64_PATH={lib}" in r.stdout
    assert "CPROTON_NAME=nat" in r.stdout and "CPROTON_DATA=trace" in r.stdout


def test_native_context_option(tmp_path):
    # issue 28.3: `cproton --context native -- ./app` hands the context to
    # the injection (it was refused by the option parser before)
    lib = tmp_path / "libcproton_fake.so"
    lib.write_text("")
    os.environ["CPROTON_INJECTION_LIB"] = str(lib)
    try:
        r = run_python(["-m", "cproton", "--context", "native", "--", "/usr/bin/env"], cwd=tmp_path)
    finally:
        del os.environ["CPROTON_INJECTION_LIB"]
    assert r.returncode == 0, r.stderr
    assert "CPROTON_CONTEXT=native" in r.stdout


MARKER_SCRIPT = """
open("ran.txt", "w").write("the script ran")
"""


def test_output_directory_is_checked_before_anything_runs(tmp_path):
    # issue 24.7: the script ran to its end, then the profile was lost
    script = write_script(tmp_path, MARKER_SCRIPT)
    r = run_python(["-m", "cproton", "-n", str(tmp_path / "missing" / "x"), str(script)], cwd=tmp_path)
    assert r.returncode == 2
    assert f"no directory '{tmp_path / 'missing'}'" in r.stderr
    assert "Traceback" not in r.stderr
    assert not (tmp_path / "ran.txt").exists()
    lib = tmp_path / "libcproton_fake.so"
    lib.write_text("")
    env_lib = os.environ.get("CPROTON_INJECTION_LIB")
    os.environ["CPROTON_INJECTION_LIB"] = str(lib)
    try:
        r = run_python(["-m", "cproton", "-n", "missing/{rank}/x", "--", "/usr/bin/touch", "ran.txt"],
                       cwd=tmp_path)
    finally:
        if env_lib is None:
            del os.environ["CPROTON_INJECTION_LIB"]
        else:
            os.environ["CPROTON_INJECTION_LIB"] = env_lib
    assert r.returncode == 2 and "no directory 'missing/0'" in r.stderr
    assert not (tmp_path / "ran.txt").exists()


def test_a_run_that_did_not_happen_replaces_no_profile(tmp_path):
    (tmp_path / "proton.hatchet").write_text("last run")
    r = run_python(["-m", "cproton", "nosuch.py"], cwd=tmp_path)
    assert r.returncode == 2 and "no such script: nosuch.py" in r.stderr
    assert (tmp_path / "proton.hatchet").read_text() == "last run"
    assert [p.name for p in tmp_path.iterdir()] == ["proton.hatchet"]


def test_config_prints_the_c_table(tmp_path, monkeypatch):
    """`cproton --config` prints every row of the C configuration table with
    its value and source (issue 25)."""
    from cproton import _cproton, knobs
    rows = _cproton.config_table()
    monkeypatch.setenv("CPROTON_DATA", "trace")
    monkeypatch.delenv("CPROTON_NAME", raising=False)
    r = run_python(["-m", "cproton", "--config"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split("=", 1)[0] for line in lines] == [row[0] for row in rows]
    assert "CPROTON_DATA='trace' [environment;" in r.stdout
    assert "CPROTON_NAME='proton' [default;" in r.stdout
    # the knobs are the table's rows with a knob column
    assert {k: v[0] for k, v in knobs.KNOBS.items()} == {row[3]: row[0] for row in rows if row[3]}
