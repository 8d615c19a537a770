"""``cproton.advise``: the performance advisor for notebooks
(docs/advisor.md). It runs ``cproton-viewer --advise --json`` -- the C
advisor, not a second implementation -- on one or more profiles of one
program and returns its findings as Python objects::

    import cproton
    advice = cproton.advise(["run.hatchet", "run_pcs.hatchet"])
    for f in advice.findings:            # sorted by estimated time saved
        print(f.rule, f.kernel, f.estimated_speedup, f.suggestion)
    advice.unavailable                   # rules the profiles lack facts for

The viewer is looked up beside the package (a CMake build tree), in the
Python environment's scripts folder (``pip install``) and on ``PATH``.
"""
import json
import os
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass, field
from typing import Dict, List, Sequence, Union

__all__ = ["advise", "Advice", "Finding", "Unavailable"]


@dataclass(frozen=True)
class Finding:
    rule: str
    kernel: str
    path: List[str]
    time_ns: float
    share: float
    evidence: Dict[str, object]
    diagnosis: str
    suggestion: str
    estimated_speedup: float
    estimated_saving_ns: float
    model: str
    extra: Dict[str, object] = field(default_factory=dict)  # fields added later


@dataclass(frozen=True)
class Unavailable:
    rule: str
    needs: str
    mode: str


@dataclass(frozen=True)
class Advice:
    findings: List[Finding]
    unavailable: List[Unavailable]
    text: str  # the viewer's human-readable report


def _viewer() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "..", "..", "tools", "viewer", "cproton-viewer"),
                      os.path.join(sysconfig.get_path("scripts"), "cproton-viewer")):
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    found = shutil.which("cproton-viewer")
    if not found:
        raise FileNotFoundError("cproton-viewer not found (beside the package, in the environment's scripts "
                                "folder or on PATH); cproton.advise runs it")
    return found


def _run(args: List[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(done.stderr.strip() or f"{args[0]} exited with {done.returncode}")
    return done.stdout


_FIELDS = set(Finding.__dataclass_fields__) - {"extra"}


def _finding(d: dict) -> Finding:
    return Finding(**{k: d.get(k) for k in _FIELDS}, extra={k: v for k, v in d.items() if k not in _FIELDS})


def advise(paths: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]]) -> Advice:
    """Findings for the kernels of the profile(s) at `paths` (one program's
    profiles, e.g. a kernel-time and a pcsampling profile, joined by call
    path). ValueError when no profile can be read; a profile that cannot be
    read among others is skipped, as the viewer does."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = [os.fspath(p) for p in paths]
    if not files:
        raise ValueError("cproton.advise: no profile given")
    viewer = _viewer()
    data = json.loads(_run([viewer, "--advise", "--json", "--", *files]))
    text = _run([viewer, "--no-color", "--advise", "--", *files])
    return Advice([_finding(d) for d in data["findings"]], [Unavailable(**u) for u in data["unavailable"]], text)
