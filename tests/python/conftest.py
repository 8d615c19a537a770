"""Shared fixtures for the cproton Python tests: every test runs in its own
temporary directory and leaves no session, flag or scope behind."""
import json
import os
import subprocess
import sys

import pytest

import cproton
from cproton import _cproton
from cproton.flags import flags


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "ignore:no GPU backend is available:UserWarning")


@pytest.fixture(autouse=True)
def _clean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield
    flags.command_line = False
    flags.instrumentation_on = False
    if _cproton.session_count():
        cproton.finalize()
    flags.profiling_on = True
    while _cproton.depth():
        _cproton.exit_scope()
    flags.profiling_on = False
    cproton.hooks.launch.set_filter()


@pytest.fixture
def proton36():
    """Pins Proton 3.6's behaviour (cproton._compat) for a test written
    against it, whatever CPROTON_PROTON_VERSION or the installed Triton
    say; test_proton_versions.py checks both versions."""
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply((3, 6))
    yield
    _compat.apply(before)


@pytest.fixture
def installed_proton():
    """Pins the behaviour of the installed Triton's Proton, for tests that
    compare cproton with it (CPROTON_PROTON_VERSION ignored)."""
    from cproton import _compat
    before = _compat.PROTON_VERSION
    _compat.apply(_compat.decide(None, _compat.installed_triton()))
    yield
    _compat.apply(before)


def simplify(node):
    """{name: {"@": metrics, child_name: {...}}} for a Hatchet node (sibling
    names are unique in a call-path tree)."""
    out = {"@": dict(node["metrics"])}
    for child in node["children"]:
        name = child["frame"]["name"]
        assert name not in out, f"duplicate sibling {name}"
        out[name] = simplify(child)
    return out


def strip_empty(tree):
    """Drops "@" entries that are empty, to write expectations compactly."""
    out = {}
    for k, v in tree.items():
        if k == "@":
            if v:
                out[k] = v
        else:
            out[k] = strip_empty(v)
    return out


def load_tree(path):
    with open(path) as f:
        literal = json.load(f)
    assert isinstance(literal, list) and len(literal) == 2
    root = literal[0]
    assert root["frame"] == {"name": "ROOT", "type": "function"}
    return strip_empty(simplify(root))


def run_python(args, cwd, **kw):
    env = dict(os.environ)
    env["PYTHONWARNINGS"] = "ignore"
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(cproton.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [pkg_root, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable] + list(args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, **kw)
